#!/usr/bin/env python3
"""bench/loader_vs_torch.py: gpubase's input pipeline side by side with the torch DataLoader +
torchvision/PIL pipeline on the same JPEG files, in one run, and the ratios.

Usage: python3 bench/loader_vs_torch.py --gpubase build/apps/gpubase/gpubase --data DIR
           [--workers 1,16] [--seconds 10] [--batch 256] [--out F.json]
DIR is an ImageFolder tree (`gpubase dataset synth --out DIR --images 2000` makes an
ImageNet-like one). Both sides do RandomResizedCrop(224) + horizontal flip; torch also does
ToTensor + Normalize on the CPU and pin_memory (gpubase normalizes on the GPU, in its data-wait
measurement); images/s is counted from batches delivered after one warm-up batch.

Targets: >= 800 images/s per core and >= 3x torch per core on the CPU path;
>= 10,000 images/s on the 16-core H200 host.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import torch
import torchvision
from torch.utils.data import DataLoader
from torchvision import transforms as T


def shown(path):
    """A path as the output shows it: relative to the working directory, or only its name when
    it lies outside, so results carry no path of the machine they ran on."""
    rel = os.path.relpath(path)
    return os.path.basename(os.path.normpath(path)) if rel.startswith("..") else rel


def torch_rate(data, workers, batch, seconds):
    tf = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(),
                    T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    ds = torchvision.datasets.ImageFolder(data, transform=tf)
    loader = DataLoader(ds, batch_size=batch, shuffle=True, num_workers=workers,
                        pin_memory=torch.cuda.is_available(), drop_last=True,
                        persistent_workers=True, prefetch_factor=4)
    images, start = 0, None
    while True:
        for i, (x, _) in enumerate(loader):
            if start is None:  # the first batch is the warm-up
                start = time.perf_counter()
                continue
            images += x.shape[0]
            if time.perf_counter() - start >= seconds:
                return images / (time.perf_counter() - start)


def gpubase_rates(exe, data, workers, batch, seconds):
    with subprocess.Popen([exe, "loader", "--data", data, "--workers", ",".join(map(str, workers)),
                           "--batch", str(batch), "--seconds", str(seconds), "--json", "-q"],
                          stdout=subprocess.PIPE) as p:
        run = json.loads(p.stdout.read())
    results = {r["key"]: r for r in run["results"]}
    rates = {w: results.get(f"loader.cpu.w{w}.images_per_s", {}).get("value") for w in workers}
    wait = results.get("loader.data_wait_share.pct", {})
    return rates, wait.get("value"), wait.get("reason")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpubase", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--workers", default=f"1,{os.cpu_count()}")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--out")
    args = ap.parse_args()
    workers = [int(w) for w in args.workers.split(",")]

    ours, wait, why = gpubase_rates(args.gpubase, args.data, workers, args.batch, args.seconds)
    out = {"data": shown(args.data), "batch": args.batch, "points": [], "data_wait_share_pct": wait,
           "data_wait_skipped": why}
    for w in workers:
        theirs = torch_rate(args.data, w, args.batch, args.seconds)
        mine = ours.get(w)
        row = {"workers": w, "gpubase_images_per_s": mine, "torch_images_per_s": theirs,
               "gpubase_per_worker": mine / w if mine else None, "torch_per_worker": theirs / w,
               "ratio": mine / theirs if mine and theirs else None}
        out["points"].append(row)
        print(f"workers {w:3d}: gpubase {mine or 0:8.0f} img/s ({(mine or 0) / w:6.0f}/worker)  "
              f"torch {theirs:8.0f} img/s ({theirs / w:6.0f}/worker)  "
              f"ratio {row['ratio'] or 0:.2f}x", flush=True)
    print(f"data-wait share (gpubase, GPU step of batch/3000 s): {wait} {why or ''}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=2)


if __name__ == "__main__":
    sys.exit(main())
