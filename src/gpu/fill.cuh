// gpu/fill.cuh: device-side element stores: a float into a float/half/bfloat16 buffer, and for
// the random fills (gpu/fill.hpp) element i of a buffer of a given element type from its hash,
// converting with the CUDA intrinsics whose rounding the host converters in
// gpu/host_numeric.cpp reproduce bit for bit. Include from .cu files only.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstddef>
#include <cstdint>

#include "gpu/host_numeric.hpp"

namespace gb::gpu {

// Stores v as element i of a float / half / bfloat16 buffer, rounding to nearest even (the
// normalize and resize-crop kernels' output).
template <ElementType T>
__device__ __forceinline__ void store_float(void* dst, std::size_t i, float v) {
  static_assert(T == ElementType::f32 || T == ElementType::f16 || T == ElementType::bf16);
  if constexpr (T == ElementType::f32) {
    static_cast<float*>(dst)[i] = v;
  } else if constexpr (T == ElementType::f16) {
    static_cast<__half*>(dst)[i] = __float2half_rn(v);
  } else {
    static_cast<__nv_bfloat16*>(dst)[i] = __float2bfloat16_rn(v);
  }
}

template <ElementType T>
__device__ __forceinline__ void store_uniform(void* __restrict__ dst, std::size_t i,
                                              std::uint64_t h) {
  if constexpr (T == ElementType::f64) {
    static_cast<double*>(dst)[i] = uniform_f64(h);
  } else if constexpr (T == ElementType::f32) {
    static_cast<float*>(dst)[i] = uniform_f32(h);
  } else if constexpr (T == ElementType::f16) {
    static_cast<unsigned short*>(dst)[i] = __half_as_ushort(__float2half_rn(uniform_f32(h)));
  } else if constexpr (T == ElementType::bf16) {
    static_cast<unsigned short*>(dst)[i] =
        __bfloat16_as_ushort(__float2bfloat16_rn(uniform_f32(h)));
  } else if constexpr (T == ElementType::e4m3) {
    static_cast<__nv_fp8_storage_t*>(dst)[i] =
        __nv_cvt_float_to_fp8(uniform_f32(h), __NV_SATFINITE, __NV_E4M3);
  } else if constexpr (T == ElementType::i8) {
    static_cast<std::int8_t*>(dst)[i] = uniform_i8(h);
  } else {
    static_assert(T == ElementType::i32);
    static_cast<std::int32_t*>(dst)[i] = uniform_i32(h);
  }
}

}  // namespace gb::gpu
