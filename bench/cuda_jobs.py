#!/usr/bin/env python3
"""A corpus of PyTorch jobs for checking what `gpubase watch` finds inside a job
(bench/cupti_check.sh). Each job has the finding it must get; `--list` prints them as JSON.

  python3 bench/cuda_jobs.py --job NAME [--seconds 15] [--ground-truth OUT.json] [--stats OUT.json]

--ground-truth: the job times its own data wait -- wall time spent in next(loader_iter) with
the GPU synchronized at every step boundary -- and writes {"data_wait_pct": ...}. Run it as a
separate run: the syncs change the job.
--stats: writes {"images_per_s": ..., "steps": ...} measured after a warm-up (overhead runs).

Jobs (model: torchvision ResNet-18 unless said; data made in memory, no downloads):
  well_fed        8 workers, cheap samples, batch 128, pinned, bf16: GPU-bound
  starved_worker  1 worker, costly CPU augmentation per sample: input_wait
  small_batch     batch 4, no workers: the launching thread is the limit
  sync_disk       the main process reads every sample from files with the page cache
                  dropped (posix_fadvise DONTNEED), one read at a time: storage_bound
  many_workers    3 x cores workers with costly samples contending for the cores: input-bound
  pageable        pin_memory=False, large float32 batches, a light model: pageable_copies
  host_sync       loss.item() and a print every step with a small model: host_sync
  tiny_kernels    hundreds of elementwise ops on tiny tensors per step: tiny_kernels
  gpu_shared      well_fed while a second process runs GEMMs on the same GPU: gpu_shared
  resnet50        eager ResNet-50, batch 256, bf16 autocast, data made on the GPU (overhead)
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

EXPECTED = {
    "well_fed": ["gpu_bound"],
    "starved_worker": ["input_wait"],
    "small_batch": ["tiny_kernels", "main_process_bound", "launch_bound", "host_sync"],
    "sync_disk": ["storage_bound"],
    "many_workers": ["workers_oversubscribed", "input_wait"],
    "pageable": ["pageable_copies"],
    "host_sync": ["host_sync"],
    "tiny_kernels": ["tiny_kernels"],
    "gpu_shared": ["gpu_shared"],
}


def parse():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--job")
    p.add_argument("--seconds", type=float, default=15.0)
    p.add_argument("--ground-truth", metavar="OUT.json")
    p.add_argument("--stats", metavar="OUT.json")
    p.add_argument("--list", action="store_true", help="print the jobs and their expected findings")
    return p.parse_args()


def main():
    a = parse()
    if a.list:
        print(json.dumps(EXPECTED))
        return 0
    if a.job not in EXPECTED and a.job not in ("resnet50", "gemm_neighbour"):
        print(f"unknown job {a.job}; --list names them", file=sys.stderr)
        return 2
    import torch  # noqa: imported late so --list works without PyTorch

    torch.backends.cudnn.benchmark = True
    if a.job == "gemm_neighbour":
        return gemm_neighbour(a.seconds)
    if a.job == "resnet50":
        return resnet50(a)
    if a.job == "tiny_kernels":
        return tiny_kernels(a)
    if a.job == "gpu_shared":
        # Started through a shell that exits at once: the neighbour is re-parented away from
        # the job's process tree (another user of the GPU, not a worker), and ends on its own.
        subprocess.run(["sh", "-c", f'"{sys.executable}" "{os.path.abspath(__file__)}" --job '
                        f"gemm_neighbour --seconds {a.seconds + 3:.0f} >/dev/null 2>&1 &"],
                       check=True)
    return train(a)


def gemm_neighbour(seconds):
    """Another process on the same GPU: back-to-back GEMMs."""
    import torch
    x = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    end = time.time() + seconds
    while time.time() < end:
        for _ in range(20):
            y = x @ x
        torch.cuda.synchronize()
    del y
    return 0


class Samples:
    """n samples of 3 x size x size; `work` rounds of CPU arithmetic per sample (decode and
    augmentation stand-in); `files`: read each sample from a file with the cache dropped."""

    def __init__(self, n, size, work, files=None):
        import torch
        self.n, self.size, self.work, self.files = n, size, work, files
        g = torch.Generator().manual_seed(0)
        self.base = torch.rand(3, size, size, generator=g)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        import torch
        if self.files:
            path = self.files[i % len(self.files)]
            fd = os.open(path, os.O_RDONLY)
            try:
                data = os.read(fd, 1 << 20)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
            x = torch.frombuffer(bytearray(data), dtype=torch.uint8)[: 3 * self.size * self.size]
            x = x.float().view(3, self.size, self.size) / 255
        else:
            x = self.base.clone()
        for _ in range(self.work):
            x = (x * 1.0001 + 0.0001).sin_().abs_()
        return x, i % 10


def make_files(n, size):
    d = tempfile.mkdtemp(prefix="gb_cuda_jobs_")
    paths = []
    blob = os.urandom(3 * size * size)
    for i in range(n):
        p = os.path.join(d, f"{i:05d}.bin")
        with open(p, "wb") as f:
            f.write(blob)
        paths.append(p)
    os.sync()  # written back, so DONTNEED can drop the pages
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
    return paths


def config(job):
    cores = len(os.sched_getaffinity(0))
    c = dict(batch=128, workers=8, work=0, size=112, n=4096, pin=True, sync_each_step=False,
             files=None, persistent=True, model="resnet18")
    if job == "starved_worker":
        c.update(workers=1, work=40)
    elif job == "small_batch":
        c.update(batch=4, workers=0)
    elif job == "sync_disk":
        c.update(workers=0, batch=32, files=make_files(1024, 112))
    elif job == "many_workers":
        c.update(workers=3 * cores, work=30, n=8192)
    elif job == "pageable":
        c.update(pin=False, batch=512, size=160, model="tiny")
    elif job == "host_sync":
        c.update(sync_each_step=True, model="tiny", batch=64)
    return c


def model_for(name):
    import torch
    import torchvision
    if name == "tiny":
        return torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, stride=2), torch.nn.ReLU(),
                                   torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                                   torch.nn.Linear(16, 10))
    return torchvision.models.resnet18(num_classes=10)


def train(a):
    import torch
    from torch.utils.data import DataLoader
    c = config(a.job)
    ds = Samples(c["n"], c["size"], c["work"], c["files"])
    loader = DataLoader(ds, batch_size=c["batch"], shuffle=True, num_workers=c["workers"],
                        pin_memory=c["pin"], drop_last=True,
                        persistent_workers=c["persistent"] and c["workers"] > 0)
    model = model_for(c["model"]).cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    gt = a.ground_truth is not None
    wait_s, start, steps, images = 0.0, time.time(), 0, 0
    warm_t = None
    while time.time() - start < a.seconds:
        it = iter(loader)
        while True:
            if gt:
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            try:
                x, y = next(it)
            except StopIteration:
                break
            if gt:
                wait_s += time.perf_counter() - t0
            x = x.cuda(non_blocking=c["pin"]).to(memory_format=torch.channels_last)
            y = y.cuda(non_blocking=c["pin"])
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if c["sync_each_step"]:
                print(f"step {steps} loss {loss.item():.4f}", flush=True)
            steps += 1
            if steps == 20:
                torch.cuda.synchronize()
                warm_t, images = time.time(), 0
            images += x.shape[0]
            if time.time() - start >= a.seconds:
                break
    torch.cuda.synchronize()
    total = time.time() - start
    if gt:
        json.dump({"job": a.job, "data_wait_pct": 100.0 * wait_s / total, "steps": steps,
                   "seconds": total}, open(a.ground_truth, "w"))
    if a.stats and warm_t:
        json.dump({"job": a.job, "images_per_s": images / (time.time() - warm_t), "steps": steps},
                  open(a.stats, "w"))
    if c["files"]:
        import shutil
        shutil.rmtree(os.path.dirname(c["files"][0]), ignore_errors=True)
    return 0


def tiny_kernels(a):
    """Hundreds of elementwise ops on 1k-element tensors per step: each runs ~2 µs on the GPU
    and costs the host several µs to launch."""
    import torch
    x = torch.randn(1024, device="cuda")
    w = torch.randn(1024, device="cuda", requires_grad=True)
    opt = torch.optim.SGD([w], lr=1e-3)
    start = time.time()
    while time.time() - start < a.seconds:
        h = x
        for _ in range(100):
            h = torch.tanh(h * w + 0.1)
        loss = h.sum()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    torch.cuda.synchronize()
    return 0


def resnet50(a):
    """Eager ResNet-50 training at batch 256 on data made on the GPU: the overhead job."""
    import torch
    import torchvision
    model = torchvision.models.resnet50().cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = torch.randn(256, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (256,), device="cuda")
    start = time.time()
    steps, warm_t, images = 0, None, 0
    while time.time() - start < a.seconds:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        steps += 1
        if steps == 15:
            torch.cuda.synchronize()
            warm_t, images = time.time(), 0
        elif warm_t:
            images += 256
    torch.cuda.synchronize()
    if a.stats and warm_t:
        json.dump({"job": "resnet50", "images_per_s": images / (time.time() - warm_t),
                   "steps": steps}, open(a.stats, "w"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
