// gpu/normalize.hpp: the loader's last step on the device: a batch of uint8 HWC images (just
// copied from a pinned slot) into the model's input tensor, (x - mean) / std per channel, NCHW or
// NHWC, fp32 / fp16 / bf16, in one kernel. data/normalize.hpp defines the result on the CPU; the
// GPU test checks the kernel against it bit for bit (both take core's ElementType, so gpu/ does
// not depend on data/).
// Napkin math: a 256 x 224 x 224 x 3 batch reads 38.5 MB and writes 154 MB (fp32): ~0.05 ms at
// HBM speed, noise next to a training step.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "gpu/host_numeric.hpp"

namespace gb::gpu {

struct NormalizeShape {
  int n = 0, h = 0, w = 0, c = 3;  // c <= 4
  bool nchw = true;                 // else NHWC
};

// src (n x h x w x c uint8) and dst in device memory; out is f32, f16 or bf16; mean and stddev
// per channel in pixel units. Asynchronous on stream; launch errors are checked.
void normalize_batch(const std::uint8_t* src, const NormalizeShape& shape, ElementType out,
                     const float mean[4], const float stddev[4], void* dst, cudaStream_t stream);

}  // namespace gb::gpu
