// nn/dtype.cuh: device helpers shared by the engine's kernels: FP32 <-> storage-type
// conversions and dispatch of a templated launcher on an ElementType (f32, f16, bf16).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "nn/tensor.hpp"

namespace gb::nn {

__device__ __forceinline__ float to_f32(float v) { return v; }
__device__ __forceinline__ float to_f32(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_f32(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
__device__ __forceinline__ T from_f32(float v);
template <>
__device__ __forceinline__ float from_f32<float>(float v) { return v; }
template <>
__device__ __forceinline__ __half from_f32<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

// Calls f(T{}) with T the storage type of t.
template <typename F>
void dispatch_dtype(ElementType t, F&& f) {
  switch (t) {
    case ElementType::f32: f(float{}); break;
    case ElementType::f16: f(__half{}); break;
    case ElementType::bf16: f(__nv_bfloat16{}); break;
    default: unsupported_element_type(t, "nn::dispatch_dtype");
  }
}

inline unsigned grid_for(std::size_t n, unsigned block, unsigned max_blocks = 65535u * 16u) {
  const std::size_t g = (n + block - 1) / block;
  return static_cast<unsigned>(g < 1 ? 1 : (g > max_blocks ? max_blocks : g));
}

}  // namespace gb::nn
