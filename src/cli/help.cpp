// cli/help.cpp: see help.hpp. Keys match docs/results.md.
#include "cli/help.hpp"

namespace gb::cli {

std::string exit_codes_help() {
  return R"(Exit codes: 0 ok, 1 a figure or checklist row failed, 2 bad usage or input,
3 no NVIDIA driver/GPU found, 4 runtime error, 130 interrupted (Ctrl-C; partial results are
still printed). Docs: docs/ (results.md, thresholds.md, gpu-specs.md, exit-codes.md).)";
}

std::string probe_help() {
  return R"(What each figure means (key: meaning):
  env                          GPU, UUID, SMs, memory, clocks (max and now), ECC, MIG,
                               persistence, power limit, PCIe link (now, slot max, GPU max),
                               NUMA node and nearby CPUs, driver, CUDA, cuBLASLt, cuDNN, CPU.
  probe.gemm.<p>.tflops        cuBLASLt GEMM 8192x8192x8192, p in fp64, fp32 (tensor cores
                               off), tf32, fp16, bf16, fp8 (E4M3, cc >= 8.9), int8 (TOP/s).
                               2*m*n*k / time; random inputs; result checked against a CPU
                               reference first; best of the heuristic's candidate algorithms.
                               Compared with the datasheet peak, the peak computed from the
                               clock seen during the run, and an achievable figure.
                               Burst protocol (as PyTorch times): 250 ms idle, 3 warm-up,
                               20 GEMMs each timed with CUDA events.
  probe.gemm.<p>.sustained.tflops
                               the same after 1 s of continuous load: what a long training
                               run sees once the power cap holds the clock down.
  probe.gemm.<p>.<m>x<n>x<k>   the same at other shapes.
  probe.memory.read|write|copy|triad.gbps
                               our own vectorized kernels over buffers far larger than L2;
                               GB/s = bytes counted / time: read N, write N, copy 2N (read +
                               write), triad 3N (two reads, one write).
  probe.memory.memcpy_d2d.gbps cudaMemcpy device to device, read + write counted.
  probe.pcie.h2d|d2h.pinned|pageable.gbps
                               host<->device copies of 256 MiB (and a size sweep), pinned
                               (page-locked) vs pageable host memory; GB/s per direction.
  probe.pcie.bidir.pinned.gbps H2D and D2H at once on two streams, sum of both directions.
  probe.pcie.link.gen_under_load, .width_under_load
                               PCIe generation and width sampled by NVML during the copies
                               (links downclock when idle), against slot and GPU maxima.
  probe.pcie.replay_delta      PCIe replay counter increase during the copies (should be 0).
  probe.latency.launch_host.us CPU time to enqueue one empty kernel.
  probe.latency.launch_e2e.us  launch + wait for one empty kernel.
  probe.latency.graph_per_kernel.us
                               per-kernel cost inside a replayed CUDA graph.
  probe.latency.event_roundtrip.us
                               record an event and wait for it.
  probe.host.copy|triad.gbps   CPU memory bandwidth over all cores (STREAM-like).
  probe.host.h2d_under_cpu_load.gbps, probe.host.h2d_slowdown.pct
                               pinned H2D while all other cores stream memory, and the loss.
Every figure carries the clocks, power, temperature and throttle reasons seen while it ran;
a figure measured during thermal or hardware slowdown is marked invalid, not hidden.
Verdicts: pass >= 90 % of the achievable reference, warn >= 75 %, fail below
(docs/thresholds.md).)";
}

std::string baseline_help() {
  return R"(Examples:
  gpubase baseline                     every stage with its defaults (about 5 minutes on an H200)
  gpubase baseline --quick             the same stages, shorter (about 90 s; wider noise band)
  gpubase baseline --data /data/train  the loader sweep and the training run on your own set
  gpubase baseline -- python train.py  the quick card check, then your job under watch

Stages, in order, each announced on stderr with its expected time:
  card      the probe (compute, HBM, PCIe, latency)
  loader    the loader's worker sweep on the training set (a synthetic ImageNet-like set made
            once under $GPUBASE_HOME without --data): the knee, and the CPU/GPU split's rate
  train     ResNet-50 BF16 batch 256 fed by the loader for about a minute, watched from inside
            the process (GPU utilization, every CPU core, the data-wait share of step time)
  amp       FP32 vs FP16 vs BF16 on Fashion-MNIST, 3 seeds (--amp-data for another IDX set)
  infer     ResNet-50 inference (forward only, CUDA graph), batch 64, FP32 / FP16 / BF16
A stage that fails or cannot run here is reported and the others still run; Ctrl-C keeps what
was measured. The checklist (card speed, GPU utilization > 95 %, CPU per core < 80 %, data
loading < 10 % of step time, AMP accuracy loss < 1 %) prints first, then the details; the run
is saved as JSON under $GPUBASE_HOME (default ~/.local/share/gpubase/runs).

With -- CMD: the quick probe, then your command under watch (as `gpubase watch -- CMD`); the
GPU and CPU rows are your job's, the data-loading row comes from CUDA activity where watch can
see it, the AMP row needs `gpubase amp` on your data. It refuses to start while another process
uses the GPU (both figures would be distorted). A job that fails gives its exit code.)";
}

std::string watch_help() {
  return R"(Examples:
  gpubase watch -- python train.py --epochs 1     run the job, watch it, diagnose it at the end
  gpubase watch -i 0.1 -t 60 -- ./train.sh        100 ms samples, stop the job after 60 s
  gpubase watch --pid 4242                        attach to a running job (Ctrl-C to stop)
  gpubase watch --prometheus :9400 -- ./train.sh  serve the live figures at /metrics for Prometheus

Every interval it samples the GPU through NVML (utilization from the driver's own samples,
SM active / occupancy / tensor activity / DRAM bandwidth on Hopper and newer, power, clocks,
temperatures, memory, PCIe traffic, throttle reasons, the job's own share of the GPU), every
core of the CPU (/proc/stat), the job's whole process tree with its loader workers (CPU %,
threads, RSS, context switches), memory, disks like iostat -x, and perf_event counters of the
job where the kernel allows them. The live view goes to stderr; the report (checklist rows
"GPU utilization > 95 %" and "CPU per core < 80 %", a diagnosis with evidence and advice, and
every figure) to stdout when the job ends or on Ctrl-C.

Ctrl-C at the terminal reaches the job too; gpubase gives it --grace seconds to exit, then
sends SIGTERM, and writes the report. A SIGINT/SIGTERM sent to gpubase alone is forwarded to
the job. The exit code is the job's own (128 + signal if a signal ended it); 0 when gpubase
stopped it for --duration. Without a GPU or NVML the CPU side is still monitored and the
report says what is missing. Series columns and result keys: docs/watch.md.)";
}

std::string dataset_help() {
  return R"(Examples:
  gpubase dataset synth --out /data/synth --images 10000 --classes 100
                                        ImageNet-like JPEGs (~110 KB, 500x375 median)
  gpubase dataset info /data/synth      kind, samples, classes, format, bytes, what was skipped
  gpubase dataset pack --data /data/synth --out synth.gbpack
                                        one mmap-able file, every sample checksummed
  gpubase dataset verify synth.gbpack   check every checksum (exit 1 naming the bad samples)
  gpubase dataset export --data synth.gbpack --to-shards /data/shards --images-per-shard 1000

A dataset path is recognised by what it holds: a .gbpack file, a .tar shard or a directory of
them (WebDataset: <key>.jpg + <key>.cls), a directory with <split>-images-idx3-ubyte[.gz] (IDX,
--split train|t10k), else an ImageFolder tree (<class>/<file>.jpg). Files that are not JPEGs,
unreadable files and damaged shards are skipped and counted (--strict: fail naming the file).
Outputs are never overwritten without --force; Ctrl-C stops between samples, and an
interrupted pack or export leaves no partial output (an interrupted synth says what it left).
Results go to stdout (--json: one JSON object, keys in docs/datasets.md), progress to stderr.)";
}

std::string loader_help() {
  return R"(Examples:
  gpubase loader                        sweep 1,2,4,... workers up to the usable cores on a
                                        synthetic set (made once under the data folder)
  gpubase loader --data /data/imagenet/train --workers 8,16 --seconds 10
  gpubase loader --batch 128 --prefetch 2 --json -o loader.json
  gpubase loader --decode gpu --seconds 5   nvJPEG decode (hardware JPEG engines where the card
                                        has them) + one resize-crop-normalize kernel

Each sweep point runs one warm-up batch, then whole batches for --seconds: JPEG decode of the
crop region, RandomResizedCrop(--size) + flip into a batch slot (uint8 HWC), as a training
input pipeline does. Reported per point (loader.cpu.w<N>.images_per_s): images/s (median of
the per-batch rates), images/s per busy core, read / decode / augment ms per image, worker
idle share, CPU busy per core and context switches/s. Then the best point, the per-core rate
(target: 800 images/s per core), the knee (fewest workers within 3 % of the best), a note when
more workers got slower, and bad samples (substituted and counted). On a GPU: the data-wait
share of a GPU step fed through pinned slots. --decode gpu|both: the GPU decode path end to end
(loader.gpu_decode.*, docs/loader.md); skipped, with the reason, without libnvjpeg.
IDX (raw pixel) datasets are refused: the benchmark needs JPEG samples. Keys:
docs/results.md "loader.*". Ctrl-C stops the sweep and reports the points measured (exit 130).)";
}

std::string train_help() {
  return R"(Examples:
  gpubase train                             ResNet-50, batch 256, FP32, TF32, FP16 and BF16
  gpubase train --model resnet50,mobilenet_v2 --precision fp16,bf16
  gpubase train --model small_resnet --batch 256 --steps 200 --json -o train.json
  gpubase train --data /data/imagenet/train --precision bf16   fed by the loader: does it keep up?
  gpubase train --data /data/imagenet/train --precision bf16 --decode gpu     nvJPEG feeds it
  gpubase train --data /data/imagenet/train --decode both --gpu-share 0.7     the CPU/GPU split

Each configuration (model x precision) builds the model on cuDNN + cuBLASLt (SGD, momentum
0.9, weight decay 1e-4, FP32 master weights; FP16 with dynamic loss scaling; FP16/BF16 in
NHWC), makes one synthetic batch on the GPU (or, with --data, starts the input pipeline on the
JPEG dataset), runs --warmup steps (the step is captured there as a CUDA graph unless
--no-graph), then --steps timed steps with a CUDA event between consecutive steps and no host
synchronisation until the last. With --data, an event right before each step also gives the
share of step time the GPU waited for data (train.<cfg>.data_wait_pct, warn from 10 %).
--decode picks what decodes the JPEGs: cpu (the loader's workers; default), gpu (nvJPEG, whole
batches, one resize kernel) or both (the CPU/GPU split; --gpu-share F sends a share F of the
samples to nvJPEG, default: the share that keeps both busy, from both paths measured alone
first). Without libnvjpeg, --decode gpu|both reports each configuration skipped with the
reason; the decode mode is a param of the results. Reported per configuration
(train.<model>.<precision>.b<batch>.*): images/s from the median step, step time (median,
min, max), device memory, the parameter count, the first and final loss (a NaN or infinite
loss fails the configuration), the FP16 loss scale and skipped updates, the clocks and power
seen while it ran, and on an H200 the ratio to PyTorch's figure for the same model, precision
and batch. Out of memory at a batch
fails that configuration with the memory needed and a batch that fits; the others still run.
Ctrl-C stops between steps and reports what was measured (exit 130). Keys: docs/results.md
"train.*"; details: docs/train.md.)";
}

std::string amp_help() {
  return R"(Examples:
  gpubase amp                                   small ResNet on Fashion-MNIST, 4 precisions x 3 seeds
  gpubase amp --precision fp32,bf16 --seeds 5   fewer precisions, more seeds
  gpubase amp --data ~/mnist --epochs 12 --json -o amp.json
  gpubase amp --speed                           speed only: ResNet-50, MobileNetV2 at batch 64, 256

Every precision trains from the same initial weights and the same data order per seed (SGD,
momentum 0.9, weight decay 5e-4, linear warm-up over the first epoch then a cosine to 0). Reported
per precision: throughput and speedup over FP32, final training loss, test accuracy and its
change against FP32 paired by seed with a noise band, the FP16 loss-scale history, skipped
steps, and the share of gradient values that underflow FP16 with and without the scale. The
checklist row "AMP accuracy loss < 1 %" takes the worse of FP16 and BF16. --speed measures
throughput only (the train suite on synthetic data) and says where mixed precision pays. Ctrl-C stops between
steps and reports the runs finished (exit 130). Keys: docs/results.md "amp.*"; details:
docs/amp.md.)";
}

}  // namespace gb::cli
