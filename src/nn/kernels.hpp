// nn/kernels.hpp: launchers for the engine's own CUDA kernels (kernels.cu): fused
// activation/residual-add, global average pooling, casts, bias gradient, random fills. All are
// asynchronous on `stream`, check the launch, and take f32, f16 or bf16; accumulation is in FP32.
// Napkin math: each elementwise kernel moves its bytes once (e.g. ReLU forward on a 256x256x56x56
// FP16 tensor reads and writes 411 MB: ~0.1 ms at ~4 TB/s), 16-byte vector loads where aligned.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "nn/tensor.hpp"

namespace gb::nn {

enum class Act { none, relu, relu6 };

// y = act(x + z) elementwise over n values; z may be null; x may equal y (in place).
void act_forward(const void* x, const void* z, void* y, std::size_t n, ElementType t, Act act,
                 cudaStream_t stream);

// From the output y and its gradient dy: g = dy * act'(y) (y may be null for Act::none).
// dx = g (or dx += g when dx_accumulate); dx may equal dy (in place, then no accumulate).
// When dz is not null, also dz = g (or dz += g).
void act_backward(const void* y, const void* dy, void* dx, bool dx_accumulate, void* dz,
                  bool dz_accumulate, std::size_t n, ElementType t, Act act, cudaStream_t stream);

// x [N,C,H,W] (either layout) -> y [N,C,1,1] mean over H x W.
void global_avgpool_forward(const void* x, void* y, const Shape& s, bool nhwc, ElementType t,
                            cudaStream_t stream);
// dx[n,c,h,w] (+)= dy[n,c] / (H W).
void global_avgpool_backward(const void* dy, void* dx, bool accumulate, const Shape& s, bool nhwc,
                             ElementType t, cudaStream_t stream);

// dst[i] = (type t) src[i], round to nearest even.
void cast_from_f32(const float* src, void* dst, std::size_t n, ElementType t, cudaStream_t stream);

// dbias[j] = sum_i dy[i, j] for a row-major [rows, cols] matrix (cuBLASLt's BGRADB fallback).
void bias_grad(const void* dy, void* dbias, int rows, int cols, ElementType t, cudaStream_t stream);

// Standard-normal values (counter-based hash, Box-Muller) and uniform labels in [0, classes).
void fill_normal(void* dst, std::size_t n, ElementType t, std::uint64_t seed, cudaStream_t stream);
void fill_labels(std::int32_t* dst, std::size_t n, int classes, std::uint64_t seed,
                 cudaStream_t stream);

}  // namespace gb::nn
