#!/usr/bin/env python3
"""bench/probe_vs_torch.py: the probe's figures side by side with the same operations in PyTorch,
measured on the same GPU in the same run, and the ratio gpubase / PyTorch.

Usage: python3 bench/probe_vs_torch.py --gpubase probe.json [--out bench.json]
(run gpubase probe --json -o probe.json first; scripts/gpu-check.sh does both).

Targets: GEMM 8192^3 >= 1.0x PyTorch per precision; copy >= 1.0x torch copy_;
read-only >= 4.4 TB/s; pinned H2D and D2H >= 55 GB/s.
"""
import argparse
import json
import sys
import time

import torch


def bench_ms(fn, warmup=3, reps=10):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    times.sort()
    return times[len(times) // 2]


def sustained_ms(fn, load_s=1.5, keep_s=0.5):
    """Back-to-back for load_s seconds; median per-call time over the last keep_s (the regime a
    long training run sees once the power controller holds the card at its cap)."""
    fn()
    torch.cuda.synchronize()
    t0 = time.time()
    times = []
    while time.time() - t0 < load_s:
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(5):
            fn()
        stop.record()
        stop.synchronize()
        if time.time() - t0 > load_s - keep_s:
            times.append(start.elapsed_time(stop) / 5)
    times.sort()
    return times[len(times) // 2]


def gemm_fn(dtype, n=8192):
    if dtype == torch.float8_e4m3fn:
        a = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn)
        b = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn).t()  # column-major B
        one = torch.tensor(1.0, device="cuda")
        return lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    a = torch.randn(n, n, device="cuda", dtype=torch.float32).to(dtype)
    b = torch.randn(n, n, device="cuda", dtype=torch.float32).to(dtype)
    return lambda: torch.mm(a, b)


def gemm_tflops(dtype, n=8192, tf32=False, sustained=False):
    torch.backends.cuda.matmul.allow_tf32 = tf32
    fn = gemm_fn(dtype, n)
    time.sleep(0.25)  # same idle gap as gpubase's burst protocol
    ms = sustained_ms(fn) if sustained else bench_ms(fn)
    torch.backends.cuda.matmul.allow_tf32 = False
    return 2 * n ** 3 / (ms * 1e-3) / 1e12


def fp8_tflops(n=8192, sustained=False):
    return gemm_tflops(torch.float8_e4m3fn, n, sustained=sustained)


def copy_gbps(nbytes=2 << 30):
    src = torch.randint(0, 255, (nbytes,), device="cuda", dtype=torch.uint8)
    dst = torch.empty_like(src)
    ms = bench_ms(lambda: dst.copy_(src))
    return 2 * nbytes / (ms * 1e-3) / 1e9  # read + write counted


def read_gbps(nbytes=2 << 30):
    x = torch.rand(nbytes // 4, device="cuda")
    ms = bench_ms(lambda: x.sum())
    return nbytes / (ms * 1e-3) / 1e9


def pcie_gbps(direction, pinned=True, nbytes=256 << 20):
    host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=pinned)
    host.random_(0, 255)
    dev = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    if direction == "h2d":
        fn = lambda: dev.copy_(host, non_blocking=True)
    else:
        fn = lambda: host.copy_(dev, non_blocking=True)
    ms = bench_ms(fn)
    return nbytes / (ms * 1e-3) / 1e9


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gpubase", required=True, help="gpubase probe --json output")
    parser.add_argument("--out", help="write the comparison as JSON here")
    args = parser.parse_args()
    with open(args.gpubase) as f:
        run = json.load(f)
    ours = {r["key"]: r.get("value") for r in run["results"]}

    t0 = time.time()
    rows = [  # (label, gpubase key, torch figure function, unit, target ratio)
        ("GEMM FP32 8192^3", "probe.gemm.fp32.tflops", lambda: gemm_tflops(torch.float32), "TFLOP/s", 1.0),
        ("GEMM TF32 8192^3", "probe.gemm.tf32.tflops", lambda: gemm_tflops(torch.float32, tf32=True), "TFLOP/s", 1.0),
        ("GEMM FP16 8192^3", "probe.gemm.fp16.tflops", lambda: gemm_tflops(torch.float16), "TFLOP/s", 1.0),
        ("GEMM BF16 8192^3", "probe.gemm.bf16.tflops", lambda: gemm_tflops(torch.bfloat16), "TFLOP/s", 1.0),
        ("GEMM FP8 8192^3", "probe.gemm.fp8.tflops", fp8_tflops, "TFLOP/s", 1.0),
        ("GEMM FP32 sustained", "probe.gemm.fp32.sustained.tflops",
         lambda: gemm_tflops(torch.float32, sustained=True), "TFLOP/s", 1.0),
        ("GEMM TF32 sustained", "probe.gemm.tf32.sustained.tflops",
         lambda: gemm_tflops(torch.float32, tf32=True, sustained=True), "TFLOP/s", 1.0),
        ("GEMM FP16 sustained", "probe.gemm.fp16.sustained.tflops",
         lambda: gemm_tflops(torch.float16, sustained=True), "TFLOP/s", 1.0),
        ("GEMM BF16 sustained", "probe.gemm.bf16.sustained.tflops",
         lambda: gemm_tflops(torch.bfloat16, sustained=True), "TFLOP/s", 1.0),
        ("GEMM FP8 sustained", "probe.gemm.fp8.sustained.tflops",
         lambda: fp8_tflops(sustained=True), "TFLOP/s", 1.0),
        ("HBM copy (r+w)", "probe.memory.copy.gbps", copy_gbps, "GB/s", 1.0),
        ("HBM read", "probe.memory.read.gbps", read_gbps, "GB/s", None),
        ("H2D pinned 256 MiB", "probe.pcie.h2d.pinned.gbps", lambda: pcie_gbps("h2d"), "GB/s", None),
        ("D2H pinned 256 MiB", "probe.pcie.d2h.pinned.gbps", lambda: pcie_gbps("d2h"), "GB/s", None),
        ("H2D pageable 256 MiB", "probe.pcie.h2d.pageable.gbps", lambda: pcie_gbps("h2d", False), "GB/s", None),
        ("D2H pageable 256 MiB", "probe.pcie.d2h.pageable.gbps", lambda: pcie_gbps("d2h", False), "GB/s", None),
    ]
    absolute_targets = {"probe.memory.read.gbps": 4400, "probe.pcie.h2d.pinned.gbps": 55,
                        "probe.pcie.d2h.pinned.gbps": 55}
    table = []
    for label, key, fn, unit, target in rows:
        try:
            theirs = fn()
        except Exception as e:  # a precision torch cannot run here
            theirs = None
            print(f"  torch {label}: skipped ({e.__class__.__name__}: {e})", file=sys.stderr)
        mine = ours.get(key)
        ratio = mine / theirs if mine and theirs else None
        ok = None
        if target is not None and ratio is not None:
            ok = ratio >= target
        if key in absolute_targets and mine is not None:
            ok = mine >= absolute_targets[key] if ok is None else ok and mine >= absolute_targets[key]
        table.append({"label": label, "key": key, "unit": unit, "gpubase": mine, "torch": theirs,
                      "ratio": ratio, "target_met": ok})
        torch.cuda.empty_cache()

    print(f"\n{'figure':24} {'gpubase':>10} {'PyTorch':>10} {'ratio':>7}  target")
    for row in table:
        g = f"{row['gpubase']:.1f}" if row["gpubase"] else "n/a"
        t = f"{row['torch']:.1f}" if row["torch"] else "n/a"
        r = f"{row['ratio']:.3f}" if row["ratio"] else "n/a"
        met = {True: "met", False: "MISSED", None: "-"}[row["target_met"]]
        print(f"{row['label']:24} {g:>10} {t:>10} {r:>7}  {met}  ({row['unit']})")
    print(f"torch side took {time.time() - t0:.0f} s; gpubase probe took {run.get('duration_s', 0):.1f} s")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                       "rows": table, "gpubase_duration_s": run.get("duration_s")}, f, indent=2)


if __name__ == "__main__":
    main()
