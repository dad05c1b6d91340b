// nn/sgd.hpp: SGD with momentum and weight decay (PyTorch semantics, dampening 0, no Nesterov)
// as ONE kernel over every parameter of the model, which the parameter store (params.hpp) lays
// out contiguously:
//   [0, n_lp)   parameters with a reduced-precision compute copy (conv / linear weights and the
//               linear bias in FP16/BF16): gradient read from grad_lp (type lp_dtype)
//   [n_lp, n)   FP32-only parameters (batch-norm scale/shift, and everything in FP32/TF32):
//               gradient read from grad32[i - n_lp]
// Per element i:  g = grad * inv_scale;  g += weight_decay * w;  m = momentum * m + g;
//                 w -= lr * m;  and, for i < n_lp, w_lp[i] = (lp_dtype) w.
// With a scaler (FP16), inv_scale = 1 / scaler->scale and the whole kernel is a no-op when
// scaler->found_inf is set (GradScaler's skipped step). lr, momentum and weight decay are read
// from device memory so a captured CUDA graph picks up set_learning_rate().
// Napkin math: ResNet-50 (25.6 M parameters), FP16: 4+4 B read + 4+4 B written (w, m), 2 B
// gradient read, 2 B copy written = 20 B/parameter = 511 MB: ~0.13 ms at ~4 TB/s.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>

#include "nn/scaler.hpp"
#include "nn/tensor.hpp"

namespace gb::nn {

struct SgdHyper {  // device-resident
  float lr = 0.1f;
  float momentum = 0.9f;
  float weight_decay = 1e-4f;
};

struct SgdBuffers {
  float* master = nullptr;    // n
  float* momentum = nullptr;  // n
  const float* grad32 = nullptr;  // n - n_lp
  const void* grad_lp = nullptr;  // n_lp of lp_dtype
  void* weight_lp = nullptr;      // n_lp of lp_dtype
  std::size_t n = 0, n_lp = 0;
  ElementType lp_dtype = ElementType::f32;
};

// Writes *dst = value in stream order (a one-thread kernel: no host buffer has to outlive the
// call, and a captured graph reads the new value on its next replay).
void set_sgd_hyper(SgdHyper* dst, SgdHyper value, cudaStream_t stream);

void sgd_step(const SgdBuffers& b, const SgdHyper* hyper, const ScalerState* scaler,
              cudaStream_t stream);

}  // namespace gb::nn
