#!/usr/bin/env python3
"""bench/infer_vs_torch.py: the classic "how fast is ResNet-50, really" PyTorch script, run
the way people write it and the way it should be written.

The classic script times 100 forward passes with time.time(). Without
torch.cuda.synchronize() before reading the clock, it measures how fast the host *enqueues*
kernels, not how fast the GPU runs them: the figure comes out inflated. With the synchronize
it is right (for eager PyTorch); CUDA events around the same loop give the GPU's own time.

Per precision (FP32, FP16 and BF16 through autocast; eval mode, channels_last, no_grad, batch
64, random input, 10 warm-up passes first), three figures in images/s. "fp32" is strict FP32
(TF32 off for cuDNN and matmul), as gpubase's FP32 is; "fp32-default" is what the classic
script gets with PyTorch's defaults, whose convolutions run in TF32
(torch.backends.cudnn.allow_tf32 is True by default), so it is not an FP32 figure and has no
gpubase counterpart:
  classic_nosync  100 passes, time.time() before and after, no synchronize (the mistake)
  classic_sync    the same with torch.cuda.synchronize() before each clock read
  events          CUDA events around 100 passes
and nosync_inflation = classic_nosync / classic_sync.

Usage: python3 bench/infer_vs_torch.py [--batch 64] [--iters 100] [--json OUT.json]
"""
import argparse
import json
import sys
import time

import torch
import torchvision


def forward_loop(model, x, iters, dtype):
    with torch.no_grad(), torch.autocast("cuda", dtype=dtype, enabled=dtype is not None):
        for _ in range(iters):
            model(x)


def measure(precision, batch, iters):
    dtype = {"fp32": None, "fp32-default": None, "fp16": torch.float16,
             "bf16": torch.bfloat16}[precision]
    torch.backends.cudnn.benchmark = True
    # PyTorch's defaults: TF32 convolutions on, TF32 matmul off. Strict FP32 turns both off.
    torch.backends.cudnn.allow_tf32 = precision != "fp32"
    torch.backends.cuda.matmul.allow_tf32 = False
    model = torchvision.models.resnet50().cuda().eval().to(memory_format=torch.channels_last)
    x = torch.randn(batch, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
    # Check before timing: the output is finite.
    with torch.no_grad(), torch.autocast("cuda", dtype=dtype, enabled=dtype is not None):
        y = model(x)
    if not torch.isfinite(y.float()).all():
        raise RuntimeError(f"{precision}: non-finite output")
    forward_loop(model, x, 10, dtype)  # warm-up (cuDNN autotuning)
    torch.cuda.synchronize()

    t0 = time.time()
    forward_loop(model, x, iters, dtype)
    t1 = time.time()  # the mistake: the GPU is still working
    torch.cuda.synchronize()
    nosync_s = t1 - t0

    torch.cuda.synchronize()
    t0 = time.time()
    forward_loop(model, x, iters, dtype)
    torch.cuda.synchronize()
    sync_s = time.time() - t0

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    forward_loop(model, x, iters, dtype)
    end.record()
    end.synchronize()
    events_s = start.elapsed_time(end) / 1e3

    images = batch * iters
    return {
        "precision": precision,
        "batch": batch,
        "iters": iters,
        "classic_nosync_images_per_s": images / nosync_s,
        "classic_sync_images_per_s": images / sync_s,
        "events_images_per_s": images / events_s,
        "nosync_inflation": sync_s / nosync_s,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--precisions", default="fp32,fp32-default,fp16,bf16")
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("skipped: no CUDA device for PyTorch", file=sys.stderr)
        return 3
    rows = []
    for p in args.precisions.split(","):
        row = measure(p, args.batch, args.iters)
        rows.append(row)
        print(f"{p:12s} b{args.batch}: events {row['events_images_per_s']:8.0f} img/s, "
              f"classic+sync {row['classic_sync_images_per_s']:8.0f}, "
              f"classic no sync {row['classic_nosync_images_per_s']:8.0f} "
              f"({row['nosync_inflation']:.2f}x inflated)", flush=True)
    doc = {
        "gpu": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "rows": rows,
    }
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
