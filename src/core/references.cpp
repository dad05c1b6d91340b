// core/references.cpp: the quoted-figure table of references.hpp. docs/results.md lists the
// reference kinds; bench/train_vs_torch.py, bench/probe_vs_torch.py and
// bench/loader_vs_torch.py measure the peers side by side in one run where a GPU is at hand.
#include "core/references.hpp"

#include <array>

namespace gb {

namespace {

constexpr std::string_view kH200 = "NVIDIA H200 SXM 141GB";
constexpr std::string_view kTorch = "PyTorch 2.11, CUDA 13.0, cuDNN 9.19";
constexpr std::string_view kTrainSource =
    "median images/s over timed steps after warm-up on a synthetic batch; "
    "bench/train_vs_torch.py measures it beside gpubase";
constexpr std::string_view kSynthetic = "data";  // train --data: a different measurement

constexpr std::array<QuotedFigure, 16> kQuoted{{
    {"train.resnet50.fp32.b256.images_per_s", "pytorch", kH200, 1065,
     "PyTorch eager, torchvision ResNet-50, batch 256", kTorch, kTrainSource, kSynthetic},
    {"train.resnet50.tf32.b256.images_per_s", "pytorch", kH200, 2221,
     "PyTorch eager, torchvision ResNet-50, batch 256, TF32", kTorch, kTrainSource, kSynthetic},
    {"train.resnet50.fp16.b256.images_per_s", "pytorch", kH200, 5823,
     "PyTorch eager, torchvision ResNet-50, batch 256, FP16 AMP, channels_last", kTorch,
     kTrainSource, kSynthetic},
    {"train.resnet50.bf16.b256.images_per_s", "pytorch", kH200, 4727,
     "PyTorch eager, torchvision ResNet-50, batch 256, BF16 AMP, channels_last", kTorch,
     kTrainSource, kSynthetic},
    {"train.resnet50.fp16.b256.images_per_s", "torch_compile", kH200, 6826,
     "PyTorch torch.compile, torchvision ResNet-50, batch 256, FP16 AMP, channels_last", kTorch,
     kTrainSource, kSynthetic},
    {"train.resnet50.bf16.b256.images_per_s", "torch_compile", kH200, 6815,
     "PyTorch torch.compile, torchvision ResNet-50, batch 256, BF16 AMP, channels_last", kTorch,
     kTrainSource, kSynthetic},
    {"train.mobilenet_v2.fp32.b256.images_per_s", "pytorch", kH200, 2202,
     "PyTorch eager, torchvision MobileNetV2, batch 256", kTorch, kTrainSource, kSynthetic},
    {"train.mobilenet_v2.fp16.b256.images_per_s", "pytorch", kH200, 8985,
     "PyTorch eager, torchvision MobileNetV2, batch 256, FP16 AMP, channels_last", kTorch,
     kTrainSource, kSynthetic},
    {"train.mobilenet_v2.fp32.b64.images_per_s", "pytorch", kH200, 2052,
     "PyTorch eager, torchvision MobileNetV2, batch 64", kTorch, kTrainSource, kSynthetic},
    {"train.mobilenet_v2.fp16.b64.images_per_s", "pytorch", kH200, 2687,
     "PyTorch eager, torchvision MobileNetV2, batch 64, FP16 AMP", kTorch, kTrainSource,
     kSynthetic},
    {"train.small_resnet.fp32.b256.images_per_s", "pytorch", kH200, 84000,
     "PyTorch eager, a small ResNet on Fashion-MNIST, batch 256", kTorch,
     "images/s of the training loop on Fashion-MNIST", kSynthetic},
    {"train.small_resnet.bf16.b256.images_per_s", "pytorch", kH200, 67000,
     "PyTorch eager, a small ResNet on Fashion-MNIST, batch 256, BF16 autocast", kTorch,
     "images/s of the training loop on Fashion-MNIST", kSynthetic},
    {"train.small_resnet.fp16.b256.images_per_s", "pytorch", kH200, 65500,
     "PyTorch eager, a small ResNet on Fashion-MNIST, batch 256, FP16 autocast", kTorch,
     "images/s of the training loop on Fashion-MNIST; 62,000-69,000 over runs, the midpoint",
     kSynthetic},
    {"loader.gpu_decode.images_per_s", "torchvision", kH200, 21000,
     "torchvision.io.decode_jpeg on the GPU (nvJPEG), batches of 500x375 JPEGs, decode alone",
     kTorch, "images/s of the batched decode call alone: no file reading, crop or H2D"},
    {"probe.latency.launch_e2e.us", "pytorch", kH200, 6.9,
     "PyTorch eager, one tiny elementwise op, launch to completion", kTorch,
     "per-op time of a loop of tiny ops, synchronized at the end"},
    {"probe.latency.graph_per_kernel.us", "pytorch", kH200, 0.83,
     "PyTorch, tiny ops inside a replayed CUDA graph, per kernel", kTorch,
     "graph replay time divided by the kernels in the graph"},
}};

}  // namespace

std::span<const QuotedFigure> quoted_figures() { return kQuoted; }

std::string quoted_source(const QuotedFigure& f) {
  return "quoted: " + std::string(f.what) + " on " + std::string(f.spec) + " (" +
         std::string(f.software) + "; " + std::string(f.source) + ")";
}

}  // namespace gb
