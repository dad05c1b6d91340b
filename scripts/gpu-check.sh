#!/usr/bin/env bash
# scripts/gpu-check.sh [out-dir]: the one script for a GPU host. Builds (Release, sm_90 unless
# CUDA_ARCH is set), then runs the parts named in PARTS (default: all, in this order):
#   tests   ctest -L gpu (every kernel and layer against its CPU reference; with PyTorch, one
#           ResNet-50 FP32 step against PyTorch's from bench/train_step_vs_torch.py)
#   probe   gpubase probe (full and --quick), Ctrl-C keeps what was measured, baseline --quick,
#           and the probe side by side with PyTorch
#   loader  gpubase loader (CPU sweep + data-wait share, the nvJPEG path, the CPU/GPU split), the
#           loader side by side with the torch DataLoader on 2,000 synthetic ImageNet-like JPEGs
#   train   MobileNetV2's GPU time per layer, training fed by the loader (the GPU's wait for
#           data), then bench/train_vs_torch.py: gpubase train and PyTorch, ResNet-50 x 4
#           precisions and MobileNetV2 FP32/FP16/BF16 at batch 256, in one run
#   amp     gpubase amp: the default study (4 precisions x 3 seeds on Fashion-MNIST, from
#           $GPUBASE_FASHION_MNIST, else Debian's dataset-fashion-mnist in
#           /usr/share/datasets/fashion-mnist, else the copy make-deps.sh unpacked in .deps/)
# e.g. PARTS=tests,train bash scripts/gpu-check.sh out/. Leaves JSON results and logs in out-dir
# (default $OUT or ./out). One part takes 1-5 minutes on an H200; the build about 3.
# Results carry no path of this machine: the commands run from the source tree or a scratch
# folder and name their datasets relative to it.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUTDIR=$(realpath -m "${1:-${OUT:-$ROOT/out}}")
BUILD=$(realpath -m "${BUILD:-$ROOT/build-gpu}")
PARTS=${PARTS:-tests,probe,loader,train,amp}
mkdir -p "$OUTDIR"
SCRATCH=$(mktemp -d)
trap 'rm -rf "$SCRATCH"' EXIT
cd "$ROOT" || exit 1
status=0
step() { echo; echo "== $* == ($(date +%T))"; }
wanted() { [[ ",$PARTS," == *",$1,"* ]]; }
has_torch() { command -v python3 >/dev/null && python3 -c "import torch" 2>/dev/null; }
has_torchvision() { has_torch && python3 -c "import torchvision" 2>/dev/null; }
# 2,000 synthetic ImageNet-like JPEGs in the scratch folder, made once; used as "synth" from there.
synth_set() {
  [[ -d $SCRATCH/synth ]] || (cd "$SCRATCH" && "$GPUBASE" dataset synth --out synth --images 2000 \
    --classes 20 -q)
}

step build
"$ROOT/scripts/build.sh" "$BUILD" >"$OUTDIR/build.log" 2>&1 || { tail -50 "$OUTDIR/build.log"; exit 1; }
grep -E "warning" "$OUTDIR/build.log" | head -20
GPUBASE=$BUILD/apps/gpubase/gpubase

if wanted tests; then
  step "GPU tests"
  # The engine's ResNet-50 step against PyTorch's (NnTorchStep) needs PyTorch's step on disk.
  if has_torchvision; then
    if python3 bench/train_step_vs_torch.py --out "$SCRATCH/torch-step" \
         > "$OUTDIR/torch-step.log" 2>&1; then
      export GPUBASE_TORCH_STEP_DIR=$SCRATCH/torch-step
    else
      echo "bench/train_step_vs_torch.py failed:"; tail -5 "$OUTDIR/torch-step.log"; status=1
    fi
  else
    echo "no PyTorch + torchvision: NnTorchStep (one step against PyTorch's) is skipped"
  fi
  ctest --test-dir "$BUILD" -L gpu --output-on-failure --timeout 300 \
    --output-junit "$OUTDIR/gpu-tests.xml" > "$OUTDIR/gpu-tests.log" 2>&1 || status=1
  unset GPUBASE_TORCH_STEP_DIR
  grep -E "tests passed|tests failed|\*\*\*Failed|\*\*\*Exception|Timeout|Not Run" \
    "$OUTDIR/gpu-tests.log" | head -60
fi

if wanted probe; then
  step "probe (full)"
  TIMEFORMAT="probe wall %R s"
  time "$GPUBASE" probe --json -o "$OUTDIR/probe.json" || status=1
  "$GPUBASE" report "$OUTDIR/probe.json" --no-color >"$OUTDIR/probe.txt"
  cat "$OUTDIR/probe.txt"

  step "probe --quick"
  TIMEFORMAT="probe --quick wall %R s"
  time "$GPUBASE" probe --quick --quiet --json -o "$OUTDIR/probe-quick.json" || status=1

  step "Ctrl-C during a run keeps what was measured"
  timeout --preserve-status -s INT 6 "$GPUBASE" probe --json -o "$OUTDIR/interrupted.json"
  rc=$?
  echo "exit code after SIGINT: $rc (expected 130)"
  [[ $rc == 130 ]] || status=1
  grep -c '"key": "probe\.' "$OUTDIR/interrupted.json" | sed 's/^/results kept: /'

  step "baseline --quick (saved under a scratch GPUBASE_HOME)"
  GPUBASE_HOME=$SCRATCH/baseline-home "$GPUBASE" baseline --quick --quiet --no-color | tail -25
  [[ ${PIPESTATUS[0]} -le 1 ]] || status=1

  if has_torch; then
    step "probe side by side with PyTorch"
    python3 bench/probe_vs_torch.py --gpubase "$OUTDIR/probe.json" \
      --out "$OUTDIR/bench-vs-torch.json" || status=1
  fi
fi

if wanted loader; then
  step "loader: CPU worker sweep and the data-wait share on the GPU, the nvJPEG path, the split"
  # GPUBASE_HOME relative to the scratch folder: the default set is gpubase-home/datasets/synth-512.
  (cd "$SCRATCH" && GPUBASE_HOME=gpubase-home "$GPUBASE" loader --decode both --seconds 3 \
    --no-color --json -o "$OUTDIR/loader.json") || status=1
  "$GPUBASE" report --no-color "$OUTDIR/loader.json" > "$OUTDIR/loader.txt"
  sed -n '/^Loader/,/^Baseline/p' "$OUTDIR/loader.txt"
  if has_torch; then
    step "loader side by side with the torch DataLoader (2,000 synthetic ImageNet-like JPEGs)"
    synth_set && (cd "$SCRATCH" && python3 "$ROOT/bench/loader_vs_torch.py" --gpubase "$GPUBASE" \
      --data synth --workers "1,$(nproc)" --seconds 8 --out "$OUTDIR/loader-vs-torch.json") \
      || status=1
  fi
fi

if wanted train; then
  step "train: GPU time per layer, MobileNetV2 FP16 and BF16 (GPUBASE_NN_PROFILE)"
  GPUBASE_NN_PROFILE=5 "$GPUBASE" train --model mobilenet_v2 --precision fp16,bf16 --steps 5 \
    --warmup 10 -q --no-color > "$OUTDIR/train-profile.txt" 2>&1 || status=1
  grep -A25 "GPU time per step" "$OUTDIR/train-profile.txt"
  step "train: fed by the loader (2,000 synthetic ImageNet-like JPEGs): the GPU's wait for data"
  synth_set && (cd "$SCRATCH" && "$GPUBASE" train --data synth --model resnet50,mobilenet_v2 \
    --precision bf16 --steps 30 --warmup 10 --no-color --json -o "$OUTDIR/train-data.json") \
    || status=1
  "$GPUBASE" report --no-color "$OUTDIR/train-data.json" | sed -n '/^Training/,/^Overall/p'
  if has_torch; then
    step "train: gpubase and PyTorch side by side"
    python3 bench/train_vs_torch.py --gpubase "$GPUBASE" \
      --out "$OUTDIR/train-vs-torch.json" || status=1
  fi
fi

if wanted amp; then
  step "amp: the default mixed-precision study"
  # Without the system package, the copy make-deps.sh unpacked (named relative to the tree).
  if [[ -z ${GPUBASE_FASHION_MNIST:-} && ! -d /usr/share/datasets/fashion-mnist &&
        -d .deps/usr/share/datasets/fashion-mnist ]]; then
    export GPUBASE_FASHION_MNIST=.deps/usr/share/datasets/fashion-mnist
  fi
  TIMEFORMAT="amp wall %R s"
  time "$GPUBASE" amp --no-color --json -o "$OUTDIR/amp.json" || status=1
  "$GPUBASE" report --no-color "$OUTDIR/amp.json" > "$OUTDIR/amp.txt"
  cat "$OUTDIR/amp.txt"
fi
exit $status
