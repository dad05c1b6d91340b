"""gpubase: the gpubase input pipeline as a PyTorch data source.

    import gpubase
    loader = gpubase.Loader("/data/imagenet/train", batch_size=256, decode="both",
                            dtype=torch.bfloat16, layout="NHWC")
    for epoch in range(epochs):
        loader.set_epoch(epoch)
        for images, labels in loader:     # already on cuda:0, normalized, channels_last
            ...

Batches come from C++ worker threads (libjpeg-turbo decode of the crop region,
RandomResizedCrop + horizontal flip, normalization) and, with decode="gpu" or "both", from
nvJPEG on the GPU. Each batch is a tensor of its own, handed over through DLPack without a copy;
its memory goes back to gpubase's pool when the tensor is freed. See docs/python.md.
"""

import atexit
import os
import sys
import weakref

from . import _gpubase
from ._gpubase import Error, NoGpuError, UsageError

__all__ = ["Loader", "Error", "UsageError", "NoGpuError", "IMAGENET_MEAN", "IMAGENET_STD"]

# torchvision's ImageNet normalization, in the 0..1 units torchvision uses.
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

try:  # torch is optional: without it, device="cpu" batches are numpy arrays
    import torch
    import torch.utils.dlpack
except ImportError:  # pragma: no cover - depends on the host
    torch = None

_DTYPE_NAMES = {"float32": "float32", "float": "float32", "fp32": "float32",
                "float16": "float16", "half": "float16", "fp16": "float16",
                "bfloat16": "bfloat16", "bf16": "bfloat16"}

_live = weakref.WeakSet()


@atexit.register
def _close_all():
    # Interpreter exit (also after an unhandled Ctrl-C): join every loader's threads while the
    # runtime is still whole.
    for loader in list(_live):
        loader.close()


def _have_numpy():
    try:
        import numpy  # noqa: F401
    except ImportError:
        return False
    return True


def _dtype_name(dtype, on_gpu):
    if dtype is None:
        return "bfloat16" if on_gpu else "float32"
    if torch is not None and isinstance(dtype, torch.dtype):
        names = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16"}
        if dtype not in names:
            raise UsageError("dtype %s: torch.float32, torch.float16 or torch.bfloat16" % dtype)
        return names[dtype]
    name = getattr(dtype, "__name__", None) or str(dtype)
    name = name.replace("numpy.", "").replace("torch.", "")
    if name not in _DTYPE_NAMES:
        raise UsageError("dtype %r: float32, float16 or bfloat16" % (dtype,))
    return _DTYPE_NAMES[name]


def _device_index(device):
    """-1 for the CPU, else the CUDA device index."""
    if torch is not None and isinstance(device, torch.device):
        if device.type == "cpu":
            return -1
        if device.type != "cuda":
            raise UsageError("device %s: 'cpu' or a CUDA device" % device)
        return 0 if device.index is None else device.index
    if isinstance(device, bool):
        raise UsageError("device %r: 'cpu', 'cuda', 'cuda:N' or N" % (device,))
    if isinstance(device, int):
        if device < 0:
            raise UsageError("device %d: not a device index" % device)
        return device
    if isinstance(device, str):
        if device == "cpu":
            return -1
        if device == "cuda":
            return 0
        if device.startswith("cuda:") and device[5:].isdigit():
            return int(device[5:])
    raise UsageError("device %r: 'cpu', 'cuda', 'cuda:N' or N" % (device,))


class _Exported:
    """A DLPack capsule with the protocol numpy.from_dlpack asks for."""

    def __init__(self, capsule, device):
        self._capsule = capsule
        self._device = device

    def __dlpack__(self, stream=None, **kwargs):
        capsule, self._capsule = self._capsule, None
        return capsule

    def __dlpack_device__(self):
        return self._device


class Loader:
    """Batches of a JPEG dataset (ImageFolder, WebDataset shards, .gbpack) for training.

    path        the dataset
    batch_size  images per batch
    size        the output side: size x size RandomResizedCrop (+ random horizontal flip)
    workers     decode threads; None: a short sweep picks the knee (the fewest threads within
                3 % of the best rate) and says which on stderr
    decode      "cpu" (worker threads, libjpeg-turbo), "gpu" (nvJPEG), "both" (split per sample)
    device      a CUDA device (0, "cuda:1", torch.device) or "cpu" (CPU tensors, no GPU needed)
    dtype       torch.bfloat16 / float16 / float32 (or their names); default bfloat16 on a GPU,
                float32 on the CPU
    layout      "NCHW", or "NHWC": shape (N, 3, H, W) with channels_last strides
    mean, std   per channel in 0..1 units (torchvision's); default ImageNet's
    seed, shuffle, drop_last, rank, world_size
                the order: a pure function of (seed, epoch); rank r of world_size takes its
                shard (disjoint; together complete); drop_last drops the partial batch
    prefetch    batches prepared ahead
    strict      a bad sample raises UsageError naming the file; otherwise it is replaced by the
                next good one and counted (stats()["substituted"])
    gpu_share   decode="both": the share of samples nvJPEG decodes; None: measured (balanced)

    The same (seed, epoch) gives the same batches whatever the number of workers. Each full pass
    is the next epoch; set_epoch(e) names the next pass's epoch (as DistributedSampler's).
    """

    def __init__(self, path, batch_size=256, size=224, workers=None, decode="cpu", device=0,
                 dtype=None, layout="NCHW", mean=IMAGENET_MEAN, std=IMAGENET_STD, seed=0,
                 shuffle=True, drop_last=True, rank=0, world_size=1, prefetch=4, strict=False,
                 gpu_share=None, verbose=True):
        self._device_index = _device_index(device)
        self.on_gpu = self._device_index >= 0
        if self.on_gpu and torch is None:
            raise UsageError("GPU tensors are handed to PyTorch: install torch, or use "
                             "device='cpu' for numpy arrays")
        if not self.on_gpu and torch is None and not _have_numpy():
            raise UsageError("device='cpu' batches are torch tensors or numpy arrays: install "
                             "torch or numpy")
        if workers is not None and (not isinstance(workers, int) or workers < 1):
            raise UsageError("workers %r: a count of 1 or more, or None for a sweep" % (workers,))
        self.dtype_name = _dtype_name(dtype, self.on_gpu)
        if not self.on_gpu and torch is None and self.dtype_name == "bfloat16":
            raise UsageError("dtype bfloat16 needs torch (numpy has no bfloat16)")
        if len(tuple(mean)) != 3 or len(tuple(std)) != 3:
            raise UsageError("mean and std: three values each (R, G, B)")
        self._src = _gpubase.BatchSource(
            path=os.fspath(path), batch=batch_size, size=size,
            workers=0 if workers is None else workers, decode=decode,
            device=self._device_index, dtype=self.dtype_name, layout=layout,
            mean=[255.0 * float(m) for m in mean], std=[255.0 * float(s) for s in std],
            seed=seed, shuffle=shuffle, drop_last=drop_last, rank=rank, world_size=world_size,
            prefetch=prefetch, strict=strict, gpu_share=gpu_share)
        self.device = "cuda:%d" % self._device_index if self.on_gpu else "cpu"
        self.layout = layout.upper()
        _live.add(self)
        if workers is None and verbose:
            workers_, rates, knee = self._src.sweep
            points = ", ".join("%d: %.0f" % (w, r) for w, r in zip(workers_, rates))
            print("gpubase.Loader: %d workers, the knee of a sweep (workers: images/s) %s"
                  % (knee, points), file=sys.stderr)

    # -- the data source ------------------------------------------------------------------
    def __len__(self):
        return len(self._src)

    def set_epoch(self, epoch):
        if not isinstance(epoch, int) or epoch < 0:
            raise UsageError("set_epoch(%r): an epoch number, 0 or more" % (epoch,))
        self._src.set_epoch(epoch)

    @property
    def epoch(self):
        """The epoch of the pass running (or the last one)."""
        return self._src.epoch

    @property
    def workers(self):
        return self._src.workers

    @property
    def worker_sweep(self):
        """(workers, images/s, knee) of the sweep when workers=None, else None."""
        return self._src.sweep

    def __iter__(self):
        src = self._src
        src.begin_pass()
        while True:
            stream = 0
            if self.on_gpu:
                stream = torch.cuda.current_stream(self._device_index).cuda_stream
            b = src.next(stream)
            if b is None:
                return
            images, labels, _, _ = b
            yield self._tensor(images), self._labels(labels)

    def _tensor(self, capsule):
        if torch is not None:
            return torch.utils.dlpack.from_dlpack(capsule)
        import numpy
        return numpy.from_dlpack(_Exported(capsule, (1, 0)))

    def _labels(self, capsule):
        if torch is not None:
            return torch.utils.dlpack.from_dlpack(capsule).long()
        import numpy
        return numpy.from_dlpack(_Exported(capsule, (1, 0))).astype(numpy.int64)

    # -- figures ----------------------------------------------------------------------------
    def stats(self):
        """Since construction or reset_stats(): per-stage times (ms per image), images/s seen
        by the consumer, the share of its time spent waiting for data, bad samples."""
        return self._src.stats()

    def reset_stats(self):
        self._src.reset_stats()

    def describe(self):
        return self._src.describe()

    def __repr__(self):
        return "gpubase.Loader(%s, %d batches)" % (self._src.describe(), len(self._src))

    # -- lifetime ---------------------------------------------------------------------------
    def close(self):
        """Stops and joins the worker threads. Tensors already handed out stay valid."""
        self._src.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
