#!/usr/bin/env python3
"""A corpus of PyTorch jobs for checking what `gpubase watch` finds inside a job
(bench/cupti_check.sh). Each job has the finding it must get; `--list` prints them as JSON.

  python3 bench/cuda_jobs.py --make-data DIR          # once: files for sync_disk, JPEGs
  python3 bench/cuda_jobs.py --job NAME --data DIR [--seconds 28] [--ground-truth OUT.json]
                             [--stats OUT.json] [--profile OUT.json]

--seconds: how long the job's loop runs, counted from the end of its set-up (imports, model
build); the process lives a few seconds longer.
--ground-truth: the job times its own data wait over the same steady window `watch` judges (from
WARMUP_S after the model's first GPU work to the end) and writes {"data_wait_pct": ...}: the wall
time spent in next(loader_iter) after the GPU finished the previous step. Each step ends with a
timing event; once the loop is over, the events' times (read against one event recorded at a
known host time on an idle GPU) say when the GPU ran out of work, so the loop itself never
waits for the GPU and the job runs as it does unmeasured. --truth-sync instead synchronizes the
GPU at every step boundary and counts all the time in next() (a separate run: the syncs change
the job -- a GPU that idles between steps then runs each step after its launches, outside the
wait).
--stats: writes {"images_per_s": ..., "steps": ...} measured after a warm-up (overhead runs);
the duty-cycle job adds its GPU busy share from CUDA events.
--profile (duty_cycle only): the GPU busy share from the PyTorch profiler's kernel records over
a window in the middle of the run (a run of its own: the profiler is a CUPTI client too).

Every training job marks its steps with NVTX ranges (data, forward, backward, optimizer), which
`watch` reports as watch.cuda.nvtx.*.

Jobs (model: torchvision ResNet-18 unless said; data in memory or made by --make-data):
  well_fed        ResNet-50 at 224 px, 8 workers, cheap uint8 samples, batch 256, pinned,
                  FP32/TF32: GPU-bound
  starved_worker  1 worker, costly CPU augmentation per sample: input_wait
  small_batch     batch 4, no workers: the launching thread is the limit
  sync_disk       the main process reads every sample from a file, bypassing the page cache
                  (O_DIRECT, 4-KiB reads one at a time): storage_bound
  many_workers    3 x cores workers decoding and augmenting JPEGs (PIL) from a small set:
                  workers_oversubscribed / input_wait
  pageable        pin_memory=False, large float32 batches, a light model: pageable_copies
  host_sync       loss.item() and a print every step: host_sync
  tiny_kernels    hundreds of elementwise ops on tiny tensors per step: tiny_kernels
  gpu_shared      well_fed while a second process runs GEMMs on the same GPU: gpu_shared
Not in the corpus (overhead and cross-checks):
  resnet50        eager ResNet-50, batch 256, bf16 autocast, data made on the GPU
  resnet50_graph  the same training step captured once in a CUDA graph and replayed
  duty_cycle      bursts of GEMMs (timed with CUDA events) and host sleeps: ~50 % GPU busy
"""
import argparse
import contextlib
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
OTHER_JOBS = ("resnet50", "resnet50_graph", "duty_cycle", "gemm_neighbour")
WARMUP_S = 5.0  # watch's warm-up after the first GPU work (src/watch/steady_window.hpp)
RAW_FILES, RAW_SIZE = 1024, 224  # sync_disk: 1024 files of 3 x 224 x 224 bytes (37 blocks)
JPEG_FILES = 512                 # many_workers: a small set of 500 x 375 photos' size


def parse():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--job")
    p.add_argument("--seconds", type=float, default=28.0)
    p.add_argument("--data", metavar="DIR", help="made by --make-data (else made per run)")
    p.add_argument("--make-data", metavar="DIR")
    p.add_argument("--ground-truth", metavar="OUT.json")
    p.add_argument("--truth-sync", action="store_true",
                   help="--ground-truth with the GPU synchronized at every step boundary")
    p.add_argument("--stats", metavar="OUT.json")
    p.add_argument("--profile", metavar="OUT.json")
    p.add_argument("--list", action="store_true", help="print the jobs and their expected findings")
    return p.parse_args()


def main():
    a = parse()
    if a.list:
        print(json.dumps(EXPECTED))
        return 0
    if a.make_data:
        t = time.time()
        make_data(a.make_data)
        print(f"data in {a.make_data}: {time.time() - t:.1f} s", file=sys.stderr)
        return 0
    if a.job not in EXPECTED and a.job not in OTHER_JOBS:
        print(f"unknown job {a.job}; --list names them", file=sys.stderr)
        return 2
    import torch  # noqa: imported late so --list works without PyTorch

    torch.backends.cudnn.benchmark = True
    if a.job == "gemm_neighbour":
        return gemm_neighbour(a.seconds)
    if a.job == "resnet50":
        return resnet50(a, graph=False)
    if a.job == "resnet50_graph":
        return resnet50(a, graph=True)
    if a.job == "duty_cycle":
        return duty_cycle(a)
    if a.job == "tiny_kernels":
        return tiny_kernels(a)
    if a.job == "gpu_shared":
        # Started through a shell that exits at once: the neighbour is re-parented away from
        # the job's process tree (another user of the GPU, not a worker), and ends on its own.
        subprocess.run(["sh", "-c", f'"{sys.executable}" "{os.path.abspath(__file__)}" --job '
                        f"gemm_neighbour --seconds {a.seconds + 3:.0f} >/dev/null 2>&1 &"],
                       check=True)
    return train(a)


# --- data ---------------------------------------------------------------------------------

def drop_cache(paths):
    os.sync()  # written back, so DONTNEED can drop the pages
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)


def make_data(d):
    """Raw sample files for sync_disk and JPEGs for many_workers, made once and reused. Skips
    what is already there."""
    raw = os.path.join(d, "raw")
    jpg = os.path.join(d, "jpeg")
    os.makedirs(raw, exist_ok=True)
    os.makedirs(jpg, exist_ok=True)
    paths = []
    for i in range(RAW_FILES):
        p = os.path.join(raw, f"{i:05d}.bin")
        if not os.path.exists(p) or os.path.getsize(p) != 3 * RAW_SIZE * RAW_SIZE:
            with open(p, "wb") as f:
                f.write(os.urandom(3 * RAW_SIZE * RAW_SIZE))
        paths.append(p)
    drop_cache(paths)
    if len(os.listdir(jpg)) < JPEG_FILES:
        import numpy as np
        from PIL import Image
        rng = np.random.default_rng(0)
        yy, xx = np.mgrid[0:375, 0:500]
        for i in range(JPEG_FILES):
            # Smooth colour fields plus noise: photo-like entropy, ~60-90 KB per file.
            phase = rng.uniform(0, 6.28, 3)
            img = np.stack([127 + 100 * np.sin(xx / (30 + 7 * c) + yy / (41 + 5 * c) + phase[c])
                            for c in range(3)], axis=-1)
            img += rng.normal(0, 18, img.shape)
            Image.fromarray(np.clip(img, 0, 255).astype(np.uint8)).save(
                os.path.join(jpg, f"{i:05d}.jpg"), quality=90)


def data_dir(a):
    if a.data and os.path.isdir(os.path.join(a.data, "raw")):
        return a.data, False
    d = tempfile.mkdtemp(prefix="gb_cuda_jobs_")
    make_data(d)
    return d, True


DIRECT_BLOCK = 4096  # sync_disk reads 4-KiB blocks, one at a time, like a reader without readahead


def read_uncached(path, size):
    """One sample from disk, bypassing the page cache: O_DIRECT reads of DIRECT_BLOCK bytes one
    after another into a page-aligned buffer (every block a disk request, so the process waits
    on the disk as a synchronous small-read job does on a network or virtual disk). Where the
    file system refuses O_DIRECT (tmpfs), a plain read with the cache dropped after it."""
    import mmap
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    except OSError:
        fd = os.open(path, os.O_RDONLY)
        try:
            data = os.read(fd, size)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            return data
        finally:
            os.close(fd)
    try:
        blocks = -(-size // DIRECT_BLOCK)
        buf = mmap.mmap(-1, blocks * DIRECT_BLOCK)  # page-aligned, as O_DIRECT needs
        view = memoryview(buf)
        got = 0
        for b in range(blocks):  # one request at a time, straight into place: no copies
            n = os.preadv(fd, [view[b * DIRECT_BLOCK:(b + 1) * DIRECT_BLOCK]], b * DIRECT_BLOCK)
            got += n
            if n < DIRECT_BLOCK:
                break
        data = bytes(view[:min(got, size)])
        view.release()
        return data
    finally:
        os.close(fd)


class Samples:
    """n samples of 3 x size x size; `work` rounds of CPU arithmetic per sample (decode and
    augmentation stand-in); `files`: read each sample from a file, bypassing the page cache;
    `pixels`: uint8 samples (decoded images), made float on the GPU, else float32."""

    def __init__(self, n, size, work, files=None, pixels=False):
        import torch
        self.n, self.size, self.work, self.files, self.pixels = n, size, work, files, pixels
        g = torch.Generator().manual_seed(0)
        self.base = (torch.randint(0, 256, (3, size, size), dtype=torch.uint8, generator=g)
                     if pixels else torch.rand(3, size, size, generator=g))

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        import torch
        if self.files:
            data = read_uncached(self.files[i % len(self.files)], 3 * self.size * self.size)
            x = torch.frombuffer(bytearray(data), dtype=torch.uint8)[: 3 * self.size * self.size]
            x = x.view(3, self.size, self.size)
            if not self.pixels:
                x = x.float() / 255
        else:
            x = self.base.clone()
        for _ in range(self.work):
            x = (x * 1.0001 + 0.0001).sin_().abs_()
        return x, i % 10


class Photos:
    """n samples from a small set of JPEGs: PIL decode, RandomResizedCrop(224), flip,
    normalize -- what an ImageFolder pipeline does per image."""

    def __init__(self, n, paths):
        import torchvision.transforms as T
        self.n, self.paths = n, paths
        self.t = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(),
                            T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        from PIL import Image
        with Image.open(self.paths[i % len(self.paths)]) as im:
            return self.t(im.convert("RGB")), i % 10


# --- training jobs ------------------------------------------------------------------------

def config(job, data):
    cores = len(os.sched_getaffinity(0))
    c = dict(batch=128, workers=8, work=0, size=112, n=4096, pin=True, sync_each_step=False,
             files=None, photos=None, persistent=True, model="resnet18",
             pixels=False, amp=True)
    if job in ("well_fed", "gpu_shared"):
        # ResNet-50 at 224 px, batch 256: ~60 ms of GPU work a step, far more than the host
        # needs to launch it (at batch 128 an eager step's launches and the pin thread's copy
        # of float batches took longer than the GPU work). uint8 pixels, made float on the GPU
        # as DALI or FFCV pipelines do: a quarter of the bytes to collate and pin.
        # FP32 (TF32 convolutions), no autocast: the GPU work of a step is ~3x BF16's, so even a
        # slow host's eager launches and a Python pin thread stay ahead of it.
        c.update(size=224, model="resnet50", batch=256, n=16384, pixels=True, amp=False)
    elif job == "starved_worker":
        c.update(workers=1, work=40)
    elif job == "small_batch":
        c.update(batch=4, workers=0)
    elif job == "sync_disk":
        raw = os.path.join(data, "raw")
        # uint8 samples straight from the file, made float on the GPU: per sample the job
        # only waits for its 37 uncached block reads.
        c.update(workers=0, batch=32, size=RAW_SIZE, pixels=True,
                 files=sorted(os.path.join(raw, f) for f in os.listdir(raw)))
    elif job == "many_workers":
        jpg = os.path.join(data, "jpeg")
        # One epoch longer than the run (65,536 samples, 1,024 batches; ~20 steps/s): with
        # 4,096 the loop restarted its epoch every 64 batches, each restart draining the
        # workers' 96-batch prefetch, and the share of time lost to it drifted between runs
        # by more than the ground truth's +-3 points (bench/NOTES.md b5, b7, b10).
        c.update(workers=3 * cores, batch=64, n=65536,
                 photos=sorted(os.path.join(jpg, f) for f in os.listdir(jpg)))
    elif job == "pageable":
        c.update(pin=False, batch=512, size=160, model="tiny")
    elif job == "host_sync":
        # ResNet-18 launches ~600 kernels a step: after each .item() the drained GPU waits
        # for the host to launch the next step.
        c.update(sync_each_step=True, batch=64)
    return c


def model_for(name):
    import torch
    import torchvision
    if name == "resnet50":
        return torchvision.models.resnet50(num_classes=10)
    if name == "tiny":
        return torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, stride=2), torch.nn.ReLU(),
                                   torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                                   torch.nn.Linear(16, 10))
    return torchvision.models.resnet18(num_classes=10)


def gpu_idle_wait_s(waits, host_time_of):
    """Seconds spent in next() while the GPU had no work: for each (t0, t1, event) -- next()
    called at t0, returned at t1, `event` recorded after the previous step (None: no step
    before) -- the part of [t0, t1] after the GPU finished that step; host_time_of(event) gives
    its host time.

    >>> gpu_idle_wait_s([(0.0, 1.0, None)], None)       # no step before: all of it
    1.0
    >>> gpu_idle_wait_s([(0.0, 1.0, "e")], lambda e: 0.25)  # the GPU ran 0.25 s into it
    0.75
    >>> gpu_idle_wait_s([(0.0, 1.0, "e")], lambda e: 1.5)   # still busy when the batch came
    0.0
    >>> gpu_idle_wait_s([(2.0, 3.0, "e"), (4.0, 4.5, "f")], {"e": 1.0, "f": 4.1}.get)
    1.4
    """
    total = 0.0
    for t0, t1, ev in waits:
        gpu_end = t0 if ev is None else host_time_of(ev)
        total += max(0.0, t1 - max(t0, gpu_end))
    return round(total, 12)


@contextlib.contextmanager
def nvtx(name):
    import torch
    torch.cuda.nvtx.range_push(name)
    try:
        yield
    finally:
        torch.cuda.nvtx.range_pop()


def train(a):
    import torch
    from torch.utils.data import DataLoader
    data, made = data_dir(a) if a.job in ("sync_disk", "many_workers") else (None, False)
    c = config(a.job, data)
    ds = Photos(c["n"], c["photos"]) if c["photos"] else Samples(c["n"], c["size"], c["work"],
                                                                 c["files"], c["pixels"])
    loader = DataLoader(ds, batch_size=c["batch"], shuffle=True, num_workers=c["workers"],
                        pin_memory=c["pin"], drop_last=True,
                        persistent_workers=c["persistent"] and c["workers"] > 0)
    model = model_for(c["model"]).cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    torch.cuda.synchronize()
    # watch's steady window starts WARMUP_S after the first GPU work (the model's copies and
    # layout kernels above); the ground truth counts from the same moment.
    gt = a.ground_truth is not None
    sync_gt = gt and a.truth_sync
    if gt and not sync_gt:
        # The anchor: an event recorded on an idle GPU at a known host time. Later events'
        # times, read once the loop is over, are host times through it (the GPU's timer and
        # the host's clock drift apart by microseconds over a run).
        anchor = torch.cuda.Event(enable_timing=True)
        anchor_t = time.perf_counter()
        anchor.record()
        torch.cuda.synchronize()
    waits = []    # (t0, t1, the previous step's end event) per judged next()
    done = None   # the last step's end event
    start = time.time()
    end_at = start + a.seconds
    loop_t0 = time.perf_counter()
    judged_from = loop_t0 + WARMUP_S
    wait_s, steps, images = 0.0, 0, 0
    warm_t = None
    first_step_s = None  # seconds from the loop's start to the first step done on the GPU
    while time.time() < end_at:
        it = iter(loader)
        while True:
            if sync_gt:
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            try:
                with nvtx("data"):
                    x, y = next(it)
            except StopIteration:
                break
            if gt and t0 >= judged_from:
                t1 = time.perf_counter()
                if sync_gt:
                    wait_s += t1 - t0
                else:
                    waits.append((t0, t1, done))
            x = x.cuda(non_blocking=c["pin"])
            if x.dtype == torch.uint8:
                x = x.float().div_(255)
            x = x.to(memory_format=torch.channels_last)
            y = y.cuda(non_blocking=c["pin"])
            with nvtx("forward"), torch.autocast("cuda", dtype=torch.bfloat16, enabled=c["amp"]):
                loss = torch.nn.functional.cross_entropy(model(x), y)
            with nvtx("backward"):
                opt.zero_grad(set_to_none=True)
                loss.backward()
            with nvtx("optimizer"):
                opt.step()
            if gt and not sync_gt:
                done = torch.cuda.Event(enable_timing=True)
                done.record()
            if c["sync_each_step"]:
                print(f"step {steps} loss {loss.item():.4f}", flush=True)
            steps += 1
            if steps == 1 and gt:
                # A cold first step (kernels loaded on their first launch, the libraries' first
                # calls, the workers' start) is not the steady state the watched run is judged
                # on (its run comes right after, warm): the reference judges from a second after
                # it at the earliest, for as long as it would have judged without it.
                torch.cuda.synchronize()
                now = time.perf_counter()
                first_step_s = now - loop_t0
                if now + 1.0 > judged_from:
                    end_at += now + 1.0 - judged_from
                    judged_from = now + 1.0
            if steps == 20:
                torch.cuda.synchronize()
                warm_t, images = time.time(), 0
            images += x.shape[0]
            if time.time() >= end_at:
                break
    torch.cuda.synchronize()
    end = time.perf_counter()
    if gt:
        def host_time_of(ev):
            return anchor_t + anchor.elapsed_time(ev) / 1000.0
        wait_s += gpu_idle_wait_s(waits, host_time_of)
        judged = max(end - judged_from, 1e-9)
        # Each judged next() in ms from the judged window's start: called, returned, and when
        # the GPU finished the step before it (the event's host time; None: no step before).
        detail = [[round(1e3 * (t0 - judged_from), 3), round(1e3 * (t1 - judged_from), 3),
                   None if ev is None else round(1e3 * (host_time_of(ev) - judged_from), 3)]
                  for t0, t1, ev in waits]
        json.dump({"job": a.job, "data_wait_pct": 100.0 * wait_s / judged, "steps": steps,
                   "judged_s": judged, "warmup_s": WARMUP_S, "judged_waits_ms": detail,
                   "first_step_done_s": first_step_s,
                   "method": "synchronized at every step" if sync_gt else
                             "time in next() after the GPU finished the previous step (events)"},
                  open(a.ground_truth, "w"))
    if a.stats and warm_t:
        json.dump({"job": a.job, "images_per_s": images / (time.time() - warm_t), "steps": steps},
                  open(a.stats, "w"))
    if made:
        import shutil
        shutil.rmtree(data, ignore_errors=True)
    return 0


def tiny_kernels(a):
    """Hundreds of elementwise ops on 1k-element tensors per step: each runs ~2 µs on the GPU
    and costs the host several µs to launch."""
    import torch
    x = torch.randn(1024, device="cuda")
    w = torch.randn(1024, device="cuda", requires_grad=True)
    opt = torch.optim.SGD([w], lr=1e-3)
    start = time.time()
    steps, warm_t, warm_steps = 0, None, 0
    while time.time() - start < a.seconds:
        with nvtx("step"):
            h = x
            for _ in range(100):
                h = torch.tanh(h * w + 0.1)
            loss = h.sum()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        steps += 1
        if warm_t is None and time.time() - start >= 3.0:  # steps/s after 3 s of warm-up
            torch.cuda.synchronize()
            warm_t, warm_steps = time.time(), steps
    torch.cuda.synchronize()
    if a.stats and warm_t:
        json.dump({"job": a.job, "steps_per_s": (steps - warm_steps) / (time.time() - warm_t),
                   "steps": steps}, open(a.stats, "w"))
    return 0


# --- overhead and cross-check jobs --------------------------------------------------------

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


def resnet50(a, graph):
    """ResNet-50 training at batch 256, bf16 autocast, data made on the GPU: eager, or the whole
    step captured once in a CUDA graph and replayed (PyTorch's whole-network capture)."""
    import torch
    import torchvision
    model = torchvision.models.resnet50().cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = torch.randn(256, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (256,), device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=False):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()

    run = step
    if graph:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):  # autotuning and lazy state outside the capture
                step()
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(g):
            with torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=False):
                loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
        run = g.replay
    start = time.time()
    steps, warm_t, images = 0, None, 0
    while time.time() - start < a.seconds:
        run()
        steps += 1
        if steps == 15:
            torch.cuda.synchronize()
            warm_t, images = time.time(), 0
        elif warm_t:
            images += 256
    torch.cuda.synchronize()
    if a.stats and warm_t:
        json.dump({"job": a.job, "images_per_s": images / (time.time() - warm_t),
                   "steps": steps}, open(a.stats, "w"))
    return 0


def duty_cycle(a):
    """Bursts of 30 BF16 GEMMs (4096^2, ~6 ms on an H200) then a 6-ms host sleep: the GPU busy
    about half the time. CUDA events around each burst give the busy share without CUPTI
    (--stats); --profile measures it with the PyTorch profiler's kernel records instead."""
    import torch
    x = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
          for _ in range(2)]

    def burst(i):
        b, e = ev[i % 2]
        b.record()
        for _ in range(30):
            y = x @ x
        e.record()
        e.synchronize()
        time.sleep(0.006)
        del y
        return b.elapsed_time(e) / 1000.0

    for i in range(20):
        burst(i)  # warm-up: cuBLAS heuristics, clocks
    torch.cuda.synchronize()
    start = time.time()
    judged_from = start + WARMUP_S
    busy, t_judged, i = 0.0, None, 0
    prof_json = None
    while time.time() - start < a.seconds:
        now = time.time()
        if a.profile and prof_json is None and now >= judged_from:
            prof_json = profile_window(torch, burst, min(10.0, a.seconds / 3))
            continue
        if now >= judged_from and t_judged is None:
            t_judged = now
        g = burst(i)
        if t_judged is not None:
            busy += g
        i += 1
    torch.cuda.synchronize()
    if a.stats and t_judged:
        wall = time.time() - t_judged
        json.dump({"job": "duty_cycle", "busy_events_pct": 100.0 * busy / wall,
                   "judged_s": wall}, open(a.stats, "w"))
    if a.profile and prof_json:
        json.dump(prof_json, open(a.profile, "w"))
    return 0


def profile_window(torch, burst, seconds):
    """The GPU busy share over `seconds` of bursts from the PyTorch profiler's kernel records:
    the union of kernel spans in its trace over the window's wall time."""
    from torch.profiler import ProfilerActivity, profile
    trace = tempfile.NamedTemporaryFile(suffix=".json", delete=False).name
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        t0 = time.perf_counter()
        i = 0
        while time.perf_counter() - t0 < seconds:
            burst(i)
            i += 1
        torch.cuda.synchronize()
        wall = time.perf_counter() - t0
    prof.export_chrome_trace(trace)
    events = json.load(open(trace)).get("traceEvents", [])
    os.unlink(trace)
    spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in events
                   if e.get("cat") == "kernel" and "dur" in e)
    busy_us, end = 0.0, None
    for s, e in spans:
        if end is None or s > end:
            busy_us += e - s
            end = e
        elif e > end:
            busy_us += e - end
            end = e
    return {"job": "duty_cycle", "busy_profiler_pct": 100.0 * busy_us / 1e6 / wall,
            "window_s": wall, "kernels": len(spans)}


if __name__ == "__main__":
    sys.exit(main())
