#!/usr/bin/env python3
"""bench/pyloader_vs_torch.py: a torchvision training loop fed by the torch DataLoader + PIL and
by gpubase.Loader (CPU decode, and the CPU/GPU split), side by side in one run, on the same
ImageFolder; and gpubase.Loader alone from Python against the C++ `gpubase loader`.

Usage: PYTHONPATH=build/python python3 bench/pyloader_vs_torch.py --data DIR
           --gpubase build/apps/gpubase/gpubase [--models resnet50,mobilenet_v2] [--steps 30]
           [--warmup 8] [--workers 15] [--out F.json]

Training: ResNet-50 and MobileNetV2 from torchvision, channels_last, BF16 autocast, SGD
(momentum 0.9), batch 256, cross-entropy over the dataset's classes. Feeders:
  torch   DataLoader(ImageFolder + RandomResizedCrop(224) + flip + ToTensor + Normalize),
          16 workers, pin_memory, persistent workers, prefetch_factor 4; H2D non_blocking and
          channels_last on the consumer's stream
  cpu     gpubase.Loader(decode="cpu", dtype=bfloat16, layout="NHWC")
  both    gpubase.Loader(decode="both", ...), the split's share measured at start
images/s counts the timed steps (after warm-up steps that also warm cuDNN's autotuner) from
the first to the last step's end (synchronized). The GPU's data-wait share: 1 - (GPU time
inside the steps, CUDA events around forward + backward + optimizer) / (GPU wall time from the
first step's start to the last step's end) -- the share of time the GPU had nothing to do
because the next batch was not there.

Loader alone: gpubase.Loader(device=0) iterated without a model for 4 s (images/s, synchronized
at both ends), against `gpubase loader --workers N --seconds 4 --json` (its wall_images_per_s;
the C++ CPU figure is the loader's host half, the Python one also copies to the GPU and
normalizes there) for decode cpu, and against `gpubase loader --decode gpu` for nvJPEG.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import torch
import torchvision
from torch.utils.data import DataLoader
from torchvision import transforms as T

import gpubase

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def shown(path):
    rel = os.path.relpath(path)
    return os.path.basename(os.path.normpath(path)) if rel.startswith("..") else rel


def torch_batches(data, batch):
    tf = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(),
                    T.Normalize(MEAN, STD)])
    ds = torchvision.datasets.ImageFolder(data, transform=tf)
    loader = DataLoader(ds, batch_size=batch, shuffle=True, num_workers=16, pin_memory=True,
                        persistent_workers=True, prefetch_factor=4, drop_last=True)

    def gen():
        while True:
            for x, y in loader:
                x = x.cuda(non_blocking=True).to(memory_format=torch.channels_last)
                yield x, y.cuda(non_blocking=True)
    return gen(), len(ds.classes), loader


def gpubase_batches(data, batch, decode, workers):
    loader = gpubase.Loader(data, batch_size=batch, workers=workers, decode=decode, device=0,
                            dtype=torch.bfloat16, layout="NHWC")

    def gen():
        while True:
            yield from loader
    return gen(), loader


def train(model_name, batches, classes, steps, warmup):
    torch.backends.cudnn.benchmark = True
    model = getattr(torchvision.models, model_name)(num_classes=classes)
    model = model.cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    crit = torch.nn.CrossEntropyLoss()
    events = []
    t0 = None
    images = 0
    for k in range(warmup + steps):
        if k == warmup:
            torch.cuda.synchronize()
            t0 = time.perf_counter()
        x, y = next(batches)
        if k >= warmup:
            images += x.shape[0]
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            begin.record()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = crit(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if k >= warmup:
            end.record()
            events.append((begin, end))
    torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    busy_ms = sum(b.elapsed_time(e) for b, e in events)
    gpu_wall_ms = events[0][0].elapsed_time(events[-1][1])
    return {"images_per_s": images / wall, "data_wait_share": max(0.0, 1 - busy_ms / gpu_wall_ms),
            "images": images, "seconds": wall, "loss": float(loss)}


def loader_alone(data, batch, decode, workers, seconds):
    """images/s of gpubase.Loader with nothing else on the GPU: 3 warm-up batches, then
    `seconds` of batches (epochs running on), synchronized at both ends."""
    loader = gpubase.Loader(data, batch_size=batch, workers=workers, decode=decode, device=0,
                            dtype=torch.bfloat16, layout="NCHW")
    it = (b for _ in iter(int, 1) for b in loader)
    for _ in range(3):
        next(it)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    images = 0
    while time.perf_counter() - t0 < seconds:
        x, _ = next(it)
        images += x.shape[0]
    torch.cuda.synchronize()
    rate = images / (time.perf_counter() - t0)
    loader.close()
    return rate


def cpp_loader(exe, data, batch, decode, workers, seconds):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "loader.json")
        cmd = [exe, "loader", "--data", data, "--batch", str(batch), "--seconds", str(seconds),
               "--decode", decode, "--json", "-o", out]
        cmd += ["--workers", str(workers)] if decode == "cpu" else ["--gpu-workers", str(workers)]
        subprocess.run(cmd, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       env=dict(os.environ, NCCL_NVLS_ENABLE="0"))
        if not os.path.exists(out):
            return None
        with open(out) as f:
            run = json.load(f)
    key = "loader.cpu.w%d.images_per_s" % workers if decode == "cpu" else \
        "loader.gpu_decode.images_per_s"
    for r in run.get("results", []):
        if r.get("key") == key:
            for p in r.get("params", []):
                if p.get("name") == "wall_images_per_s":
                    return p.get("value")
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--gpubase", required=True)
    ap.add_argument("--models", default="resnet50,mobilenet_v2")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=8)
    ap.add_argument("--workers", type=int, default=15)
    ap.add_argument("--out")
    a = ap.parse_args()

    rows = []
    for model in a.models.split(","):
        for feeder in ("torch", "cpu", "both"):
            if feeder == "torch":
                batches, classes, keep = torch_batches(a.data, a.batch)
            else:
                batches, keep = gpubase_batches(a.data, a.batch, feeder, a.workers)
                classes = len([d for d in os.listdir(a.data)
                               if os.path.isdir(os.path.join(a.data, d))])
            r = train(model, batches, classes, a.steps, a.warmup)
            r.update(model=model, feeder=feeder)
            if feeder != "torch":
                r["loader"] = keep.describe()
                r["loader_data_wait_share"] = keep.stats()["data_wait_share"]
                keep.close()
            del keep, batches
            rows.append(r)
            print("train %-13s %-6s %7.0f images/s, GPU data-wait %5.1f %%" % (
                model, feeder, r["images_per_s"], 100 * r["data_wait_share"]),
                file=sys.stderr, flush=True)
    for r in rows:
        if r["feeder"] != "torch":
            base = next(t for t in rows if t["model"] == r["model"] and t["feeder"] == "torch")
            r["vs_torch"] = r["images_per_s"] / base["images_per_s"]

    alone = []
    gpu_readers = 4
    for decode, workers in (("cpu", a.workers), ("gpu", gpu_readers)):
        py = loader_alone(a.data, a.batch, decode, workers, 4)
        cpp = cpp_loader(a.gpubase, a.data, a.batch, decode, workers, 4)
        alone.append({"decode": decode, "workers": workers, "python_images_per_s": py,
                      "cpp_images_per_s": cpp, "ratio": py / cpp if cpp else None})
        print("loader alone, decode %s, %d workers: Python %.0f, C++ %s images/s%s" % (
            decode, workers, py, "%.0f" % cpp if cpp else "n/a",
            " (%.3fx)" % (py / cpp) if cpp else ""), file=sys.stderr, flush=True)

    result = {"data": shown(a.data), "batch": a.batch, "steps": a.steps, "warmup": a.warmup,
              "gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
              "torchvision": torchvision.__version__, "train": rows, "loader_alone": alone}
    text = json.dumps(result, indent=1)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")
    print("| model | feeder | images/s | GPU data-wait | vs torch |")
    print("|---|---|---|---|---|")
    for r in rows:
        print("| %s | %s | %.0f | %.1f %% | %s |" % (
            r["model"], r["feeder"], r["images_per_s"], 100 * r["data_wait_share"],
            "%.2fx" % r["vs_torch"] if "vs_torch" in r else "1"))
    for x in alone:
        print("loader alone %s: Python %.0f vs C++ %s images/s, ratio %s" % (
            x["decode"], x["python_images_per_s"],
            "%.0f" % x["cpp_images_per_s"] if x["cpp_images_per_s"] else "n/a",
            "%.3f" % x["ratio"] if x["ratio"] else "n/a"))


if __name__ == "__main__":
    main()
