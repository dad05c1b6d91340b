#!/usr/bin/env python3
"""A real PyTorch training job for validating `gpubase watch` (bench/watch-check.sh).

ResNet-50 (torchvision), SGD, channels_last, fed by a torch DataLoader from an in-memory set of
500x375 RGB images (ImageNet's typical size):

  well-fed  : --precision tf32 --batch 256 --workers 8, light augmentation (random 224 crop +
              flip on uint8 tensors); the GPU step is the bottleneck.
  starved   : --workers 1 --heavy-aug: torchvision RandomResizedCrop + ColorJitter + GaussianBlur
              in one loader process; the GPU waits for data.
  small batch: --precision bf16 --batch 32: eager PyTorch's per-op launch cost in the training
              process is the limit (the main thread holds a core; the GPU waits on it).

Prints images/s every few seconds; runs --seconds of training and exits 0 (130 on Ctrl-C).
"""
import argparse
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
import torchvision
from torch.utils.data import DataLoader, Dataset
from torchvision.transforms import v2 as T

MEAN = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1) * 255
STD = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1) * 255


class Images(Dataset):
    """n images of 375x500x3 uint8 made once (smooth gradients + noise), labels 0..999."""

    def __init__(self, n, heavy):
        rng = np.random.default_rng(0)
        base = np.linspace(0, 255, 500, dtype=np.float32)[None, :, None]
        self.images = []
        for i in range(n):
            img = (base * rng.uniform(0.3, 1.0, (1, 1, 3)) +
                   rng.normal(0, 20, (375, 500, 3))).clip(0, 255).astype(np.uint8)
            self.images.append(img)
        self.labels = rng.integers(0, 1000, n)
        self.heavy = heavy
        self.heavy_tf = T.Compose([
            T.ToImage(),
            T.RandomResizedCrop(224, antialias=True),
            T.RandomHorizontalFlip(),
            T.ColorJitter(0.4, 0.4, 0.4, 0.1),
            T.GaussianBlur(9, sigma=(0.1, 2.0)),
        ])
        self.rng = np.random.default_rng()

    def __len__(self):
        return 1 << 30  # an endless stream; the job stops on time

    def __getitem__(self, i):
        img = self.images[i % len(self.images)]
        label = int(self.labels[i % len(self.images)])
        if self.heavy:
            return self.heavy_tf(img), label
        y = self.rng.integers(0, 375 - 224)
        x = self.rng.integers(0, 500 - 224)
        crop = img[y:y + 224, x:x + 224]
        if self.rng.random() < 0.5:
            crop = crop[:, ::-1]
        return torch.from_numpy(np.ascontiguousarray(crop)).permute(2, 0, 1), label


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--heavy-aug", action="store_true")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--images", type=int, default=256)
    ap.add_argument("--precision", choices=["bf16", "tf32", "fp32"], default="bf16")
    args = ap.parse_args()

    torch.backends.cudnn.benchmark = True
    tf32 = args.precision == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    dev = torch.device("cuda")
    model = torchvision.models.resnet50().to(dev).to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-5)
    loader = DataLoader(Images(args.images, args.heavy_aug), batch_size=args.batch,
                        num_workers=args.workers, pin_memory=True, persistent_workers=True,
                        prefetch_factor=4)
    mean, std = MEAN.to(dev), STD.to(dev)
    t0 = time.time()
    last, seen = t0, 0
    for step, (x, y) in enumerate(loader):
        x = x.to(dev, non_blocking=True).float().sub_(mean).div_(std)
        x = x.contiguous(memory_format=torch.channels_last)
        y = y.to(dev, non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=args.precision == "bf16"):
            loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        seen += x.shape[0]
        now = time.time()
        if now - last >= 5:
            torch.cuda.synchronize()
            now = time.time()
            print(f"step {step}: {seen / (now - last):.0f} img/s, loss {loss.item():.3f}",
                  flush=True)
            last, seen = now, 0
        if now - t0 >= args.seconds:
            break
    torch.cuda.synchronize()
    print("done", flush=True)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        sys.exit(130)
