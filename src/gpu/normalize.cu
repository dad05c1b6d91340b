// gpu/normalize.cu: one thread per pixel: reads its c uint8 channels, writes c normalized
// elements (NHWC: contiguous; NCHW: one per channel plane, coalesced across the warp's pixels).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "core/error.hpp"
#include "gpu/check.hpp"
#include "gpu/fill.cuh"
#include "gpu/normalize.hpp"

namespace gb::gpu {

namespace {

struct Params {
  float mean[4];
  float inv_std[4];
};


template <ElementType T, bool Nchw>
__global__ void normalize_kernel(const std::uint8_t* __restrict__ src, std::size_t pixels,
                                 std::size_t plane, int c, Params p, void* __restrict__ dst) {
  for (std::size_t px = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; px < pixels;
       px += std::size_t(gridDim.x) * blockDim.x) {
    const std::uint8_t* in = src + px * c;
    const std::size_t n = px / plane, pos = px % plane;
    for (int ch = 0; ch < c; ++ch) {
      // Same operations, same order as data::normalized(): (x - mean) * (1 / std).
      const float v = (static_cast<float>(in[ch]) - p.mean[ch]) * p.inv_std[ch];
      const std::size_t out = Nchw ? (n * c + ch) * plane + pos : px * c + ch;
      store_float<T>(dst, out, v);
    }
  }
}

template <ElementType T>
void launch(const std::uint8_t* src, const NormalizeShape& s, const Params& p, void* dst,
            cudaStream_t stream) {
  constexpr int kThreads = 256;
  const std::size_t plane = std::size_t(s.h) * std::size_t(s.w);
  const std::size_t pixels = std::size_t(s.n) * plane;
  const auto blocks = static_cast<unsigned>(
      std::min<std::size_t>((pixels + kThreads - 1) / kThreads, std::size_t{65535} * 8));
  if (s.nchw)
    normalize_kernel<T, true><<<blocks, kThreads, 0, stream>>>(src, pixels, plane, s.c, p, dst);
  else
    normalize_kernel<T, false><<<blocks, kThreads, 0, stream>>>(src, pixels, plane, s.c, p, dst);
}

}  // namespace

void normalize_batch(const std::uint8_t* src, const NormalizeShape& shape, ElementType out,
                     const float mean[4], const float stddev[4], void* dst, cudaStream_t stream) {
  if (shape.c < 1 || shape.c > 4)
    throw Error(ErrorKind::usage, "normalize_batch: 1 to 4 channels");
  if (shape.n <= 0 || shape.h <= 0 || shape.w <= 0) return;
  Params p{};
  for (int c = 0; c < 4; ++c) {
    p.mean[c] = mean[c];
    p.inv_std[c] = 1.0f / stddev[c];
  }
  switch (out) {
    case ElementType::f32: launch<ElementType::f32>(src, shape, p, dst, stream); break;
    case ElementType::f16: launch<ElementType::f16>(src, shape, p, dst, stream); break;
    case ElementType::bf16: launch<ElementType::bf16>(src, shape, p, dst, stream); break;
    default: throw Error(ErrorKind::usage, "normalize_batch: output must be fp32, fp16 or bf16");
  }
  GB_CHECK_LAUNCH();
}

}  // namespace gb::gpu
