#!/usr/bin/env python3
"""bench/train_step_vs_torch.py: export one PyTorch ResNet-50 FP32 training step for gpubase's
engine to reproduce (GPU test NnTorchStep.Resnet50Fp32StepMatchesTorch).

Builds torchvision's ResNet-50 (v1.5, torchvision's initialisation, seeded), a random batch
(normal images, uniform labels), runs one forward + cross-entropy + backward in train mode with
TF32 disabled everywhere, and writes to OUT/:

  params/<name>.bin   every parameter, raw little-endian float32, in PyTorch's own layout
                      (conv weights [K, C/g, R, S], fc.weight [out, in]); <name> is the
                      named_parameters() name ("layer1.0.conv1.weight"), which is also the name
                      the engine gives the same parameter, so the mapping is by name
  images.bin          [N, 3, 224, 224] float32, NCHW
  labels.bin          [N] int32
  meta.txt            "batch N" and "loss L" (mean cross-entropy, %.9g)
  grad_norms.txt      one line per parameter: "<name> <L2 norm of its gradient, %.9g>"

Then, on the GPU host:
  GPUBASE_TORCH_STEP_DIR=OUT build/tests/gpu_tests --gtest_filter='NnTorchStep.*'
(scripts/gpu-check.sh does both before its GPU tests when PyTorch and torchvision are there.)
which loads the same weights and batch into the engine's FP32 ResNet-50, runs one step and
compares the loss (1e-4 relative) and every parameter's gradient norm (1e-3 relative).

Usage: python3 bench/train_step_vs_torch.py --out out/torch-step [--batch 16] [--seed 0]
"""
import argparse
import os

import numpy as np
import torch
import torch.nn.functional as F
import torchvision


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = ap.parse_args()

    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.deterministic = True
    torch.manual_seed(args.seed)
    model = torchvision.models.resnet50().to(args.device).train()
    gen = torch.Generator().manual_seed(args.seed + 1)
    images = torch.randn(args.batch, 3, 224, 224, generator=gen)
    labels = torch.randint(0, 1000, (args.batch,), generator=gen)

    os.makedirs(os.path.join(args.out, "params"), exist_ok=True)
    for name, p in model.named_parameters():
        p.detach().cpu().float().contiguous().numpy().astype("<f4").tofile(
            os.path.join(args.out, "params", name + ".bin"))
    images.numpy().astype("<f4").tofile(os.path.join(args.out, "images.bin"))
    labels.numpy().astype("<i4").tofile(os.path.join(args.out, "labels.bin"))

    logits = model(images.to(args.device))
    loss = F.cross_entropy(logits, labels.to(args.device))
    loss.backward()

    with open(os.path.join(args.out, "meta.txt"), "w") as f:
        f.write("batch %d\nloss %.9g\n" % (args.batch, loss.item()))
    with open(os.path.join(args.out, "grad_norms.txt"), "w") as f:
        for name, p in model.named_parameters():
            f.write("%s %.9g\n" % (name, p.grad.detach().double().norm().item()))
    print("wrote %s: batch %d, loss %.6f, %d parameters"
          % (args.out, args.batch, loss.item(), len(list(model.parameters()))))


if __name__ == "__main__":
    main()
