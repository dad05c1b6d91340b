// gpu/fill.hpp: fills device buffers with uniform random values of any element type the GEMM
// probe uses, from the counter-based hash in gpu/host_numeric.hpp: element i of a buffer filled
// with seed s is fill_value(type, s, i), so the CPU recomputes any element without copying the
// buffer back. Floating-point types get uniform [-1, 1) rounded to the type (round to nearest
// even; FP8 E4M3 saturating), int8 uniform [-128, 127], int32 the full range. Never zeros or a
// constant: the GEMMs are timed on data with realistic bit activity.
//
// Kernels live in fill.cu (device helpers in fill.cuh); this header is plain C++.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "gpu/host_numeric.hpp"

namespace gb::gpu {

// Writes `count` elements of type t at `dst` (device memory, aligned to the element size),
// asynchronously on `stream`; launch errors are checked.
// Napkin math: 8192^2 FP32 = 256 MiB written; two splitmix rounds per element are cheap next to
// HBM, so ~0.1 ms on an H200.
void fill_uniform(void* dst, ElementType t, std::size_t count, std::uint64_t seed,
                  cudaStream_t stream);

}  // namespace gb::gpu
