#!/usr/bin/env python3
"""bench/train_vs_torch.py: `gpubase train` side by side with PyTorch training the same
torchvision model at the same batch on the same GPU, in one run, and the ratio gpubase / PyTorch.

Usage: python3 bench/train_vs_torch.py --gpubase build/apps/gpubase/gpubase
           [--config resnet50:fp32,tf32,fp16,bf16 --config mobilenet_v2:fp32,fp16]
           [--batch 256] [--steps 50] [--warmup 20] [--no-graph] [--compile [MODE]] [--out F.json]

Both sides: synthetic inputs made once on the GPU (normal(0,1) images, random labels), SGD
momentum 0.9, weight decay 1e-4, lr 0.1, cross-entropy; `warmup` untimed steps, then `steps`
steps with a CUDA event between consecutive steps; images/s = batch / median step time.
PyTorch per precision: FP32 with TF32 off in cuDNN and cuBLAS, TF32 with both on, FP16 autocast
+ GradScaler + channels_last, BF16 autocast + channels_last; cudnn.benchmark on. gpubase runs
first, in its own process, so the two never share the GPU. --compile adds torch.compile (whole
model, default mode unless given) as a third column; each compiled model adds about a minute.

Targets: ResNet-50 batch 256 FP32, TF32, FP16, BF16 >= 1.0x PyTorch eager;
MobileNetV2 batch 256 FP16 >= 1.0x. Stretch: ResNet-50 FP16/BF16 >= 1.0x torch.compile.
Default set on an H200: about 1 minute for gpubase, 1-2 minutes for PyTorch.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import time

DEFAULT_CONFIGS = ["resnet50:fp32,tf32,fp16,bf16", "mobilenet_v2:fp32,fp16,bf16"]
TORCH_MODELS = {"resnet50", "mobilenet_v2"}  # small_resnet has no torchvision twin
TARGETS = {("resnet50", p): 1.0 for p in ("fp32", "tf32", "fp16", "bf16")}
TARGETS[("mobilenet_v2", "fp16")] = 1.0


def shown(path):
    """A path as the output shows it: relative to the working directory, or only its name when
    it lies outside, so results carry no path of the machine they ran on."""
    rel = os.path.relpath(path)
    return os.path.basename(os.path.normpath(path)) if rel.startswith("..") else rel


def parse_configs(items):
    configs = []  # [(model, [precisions])]
    for item in items:
        model, _, precisions = item.partition(":")
        configs.append((model, [p for p in (precisions or "fp32,tf32,fp16,bf16").split(",") if p]))
    return configs


def gpubase_rates(exe, configs, batch, steps, warmup, graph):
    """One `gpubase train` per model; {(model, precision): (images/s or None, result)}."""
    out, runs = {}, []
    for model, precisions in configs:
        cmd = [exe, "train", "--model", model, "--precision", ",".join(precisions),
               "--batch", str(batch), "--steps", str(steps), "--warmup", str(warmup), "--json"]
        if not graph:
            cmd.append("--no-graph")
        print("$ " + " ".join([shown(exe)] + cmd[1:]), file=sys.stderr, flush=True)
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, check=False)
        if proc.returncode not in (0, 1):  # 1: a configuration failed; its reason is in the run
            sys.exit(f"gpubase train exited {proc.returncode}")
        run = json.loads(proc.stdout)
        runs.append(run)
        for r in run["results"]:
            if not r["key"].endswith(".images_per_s"):
                continue
            params = dict(r.get("params") or {})
            out[(params.get("model"), params.get("precision"))] = (r.get("value"), r)
    return out, runs


def torch_rate(model_name, precision, batch, steps, warmup, compile_mode=None):
    import torch
    import torchvision

    tf32 = precision == "tf32"
    torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.benchmark = True
    channels_last = precision in ("fp16", "bf16")
    amp_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(precision)

    torch.manual_seed(0)
    model = getattr(torchvision.models, model_name)(num_classes=1000).cuda()
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    scaler = torch.amp.GradScaler("cuda") if precision == "fp16" else None
    loss_fn = torch.nn.CrossEntropyLoss()
    x = torch.randn(batch, 3, 224, 224, device="cuda")
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (batch,), device="cuda")
    forward = torch.compile(model, mode=compile_mode) if compile_mode else model

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=amp_dtype, enabled=amp_dtype is not None):
            loss = loss_fn(forward(x), y)
        if scaler:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
        return loss

    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    events = [torch.cuda.Event(enable_timing=True) for _ in range(steps + 1)]
    events[0].record()
    loss = None
    for i in range(steps):
        loss = step()
        events[i + 1].record()
    events[-1].synchronize()
    ms = sorted(events[i].elapsed_time(events[i + 1]) for i in range(steps))
    median = (ms[(steps - 1) // 2] + ms[steps // 2]) / 2
    final_loss = float(loss.detach())
    del model, opt, forward, x, y
    torch.cuda.empty_cache()
    if not math.isfinite(final_loss):
        raise RuntimeError(f"PyTorch loss is {final_loss}")
    return batch * 1e3 / median


def fmt(v, digits=0):
    return f"{v:,.{digits}f}" if v is not None else "n/a"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gpubase", required=True, help="the gpubase binary")
    ap.add_argument("--config", action="append",
                    help="MODEL:PREC,PREC (repeatable; default: " + " ".join(DEFAULT_CONFIGS) + ")")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--no-graph", dest="graph", action="store_false",
                    help="gpubase train --no-graph (eager launches; CUDA graphs are its default)")
    ap.add_argument("--compile", nargs="?", const="default", default=None, metavar="MODE",
                    help="also torch.compile(model, mode=MODE) (default mode when no MODE)")
    ap.add_argument("--out", help="write the comparison as JSON here")
    args = ap.parse_args()
    configs = parse_configs(args.config or DEFAULT_CONFIGS)

    t0 = time.time()
    ours, runs = gpubase_rates(args.gpubase, configs, args.batch, args.steps, args.warmup,
                               args.graph)
    gpubase_s = time.time() - t0

    import torch  # after gpubase, so its CUDA context does not hold memory meanwhile

    t1 = time.time()
    rows = []
    for model, precisions in configs:
        for precision in precisions:
            mine, result = ours.get((model, precision), (None, None))
            theirs = compiled = None
            why = None
            if model in TORCH_MODELS:
                try:
                    theirs = torch_rate(model, precision, args.batch, args.steps, args.warmup)
                    if args.compile:
                        compiled = torch_rate(model, precision, args.batch, args.steps,
                                              args.warmup, args.compile)
                except Exception as e:  # out of memory at this batch, a compile failure
                    why = f"{e.__class__.__name__}: {e}"
                    torch.cuda.empty_cache()
            else:
                why = "no torchvision model"
            ratio = mine / theirs if mine and theirs else None
            target = TARGETS.get((model, precision)) if args.batch == 256 else None
            row = {"model": model, "precision": precision, "batch": args.batch,
                   "gpubase_images_per_s": mine, "torch_images_per_s": theirs, "ratio": ratio,
                   "target_ratio": target,
                   "target_met": (ratio >= target) if target and ratio else None,
                   "gpubase_status": result.get("status") if result else None,
                   "gpubase_reason": result.get("reason") if result else None,
                   "torch_skipped": why}
            if args.compile:
                row["torch_compile_images_per_s"] = compiled
                row["ratio_vs_compile"] = mine / compiled if mine and compiled else None
            rows.append(row)
            print(f"  {model} {precision}: gpubase {fmt(mine)} img/s, torch {fmt(theirs)} img/s"
                  + (f", torch.compile {fmt(compiled)}" if args.compile else "")
                  + (f" ({why})" if why else ""), file=sys.stderr, flush=True)
    torch_s = time.time() - t1

    head = f"\n{'model':13} {'precision':9} {'gpubase img/s':>13} {'torch img/s':>12} {'ratio':>6}"
    if args.compile:
        head += f" {'compile img/s':>13} {'ratio':>6}"
    print(head + "  target")
    for r in rows:
        line = (f"{r['model']:13} {r['precision']:9} {fmt(r['gpubase_images_per_s']):>13} "
                f"{fmt(r['torch_images_per_s']):>12} {fmt(r['ratio'], 2):>6}")
        if args.compile:
            line += (f" {fmt(r['torch_compile_images_per_s']):>13} "
                     f"{fmt(r['ratio_vs_compile'], 2):>6}")
        met = {True: "met", False: "MISSED", None: "-"}[r["target_met"]]
        if r["target_ratio"]:
            met += f" (>= {r['target_ratio']:.1f}x)"
        print(line + "  " + met)
        if r["gpubase_images_per_s"] is None and r["gpubase_reason"]:
            print(f"    gpubase {r['gpubase_status']}: {r['gpubase_reason']}")
    print(f"gpubase took {gpubase_s:.0f} s, PyTorch {torch_s:.0f} s "
          f"({torch.cuda.get_device_name()}, torch {torch.__version__})")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                       "cudnn": torch.backends.cudnn.version(), "batch": args.batch,
                       "steps": args.steps, "warmup": args.warmup, "graph": args.graph,
                       "compile": args.compile, "rows": rows, "gpubase_s": gpubase_s,
                       "torch_s": torch_s,
                       "gpubase_environment": runs[0]["environment"] if runs else []},
                      f, indent=2)
    missed = [r for r in rows if r["target_met"] is False]
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
