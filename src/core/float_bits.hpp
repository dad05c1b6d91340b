// core/float_bits.hpp: exact conversions between float and the 16- and 8-bit floating-point
// formats the GPU code stores (IEEE half, bfloat16, FP8 E4M3), bit for bit as the CUDA
// intrinsics round (__float2half_rn, __float2bfloat16_rn, __nv_cvt_float_to_fp8 SATFINITE). The
// CPU references of the GEMM fills and of the loader's normalization kernel use them.
#pragma once
#include <cstdint>

namespace gb {

// Decoders are exact. Encoders round to nearest, ties to even.
float half_bits_to_float(std::uint16_t bits);
float bf16_bits_to_float(std::uint16_t bits);
float e4m3_bits_to_float(std::uint8_t bits);  // 0x7F/0xFF are NaN; no infinities
// Overflow (|x| >= 65520) gives +-inf, as __float2half_rn does.
std::uint16_t float_to_half_bits(float x);
// NaN stays NaN (quiet), as __float2bfloat16_rn does.
std::uint16_t float_to_bf16_bits(float x);
// Saturates to +-448 (also for +-inf), NaN gives 0x7F: __nv_cvt_float_to_fp8(x, __NV_SATFINITE,
// __NV_E4M3).
std::uint8_t float_to_e4m3_bits(float x);

}  // namespace gb
