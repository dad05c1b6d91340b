// gpu/resize_crop.cu: see resize_crop.hpp. One thread per output pixel of one image (grid z =
// the image); the pixel's taps are recomputed per thread (a few float ops each), never stored.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core/error.hpp"
#include "gpu/check.hpp"
#include "gpu/fill.cuh"
#include "gpu/resize_crop.hpp"

namespace gb::gpu {

namespace {

struct Params {
  float mean[3];
  float inv_std[3];
};


// The taps of one output coordinate along one axis, as data/augment.cpp's precompute_taps: the
// output pixel covers [start + i*scale, start + (i+1)*scale) of the source; a triangle filter of
// support max(scale, 1) around its centre, taps clipped to the source pixels the crop touches.
struct Taps {
  int first;        // first source index read
  int count;        // taps
  float origin;     // weight of tap k: triangle((k + origin) / filter_scale)
  float inv_fs;     // 1 / filter_scale
  float inv_total;  // 1 / sum of the weights
  bool degenerate;  // every weight 0: tap 0 alone with weight 1 (as the CPU)
};

__device__ __forceinline__ float triangle(float t) {
  t = fabsf(t);
  return t < 1.0f ? 1.0f - t : 0.0f;
}

__device__ Taps taps_for(int i, float start, float length, int out_size, int src_size) {
  constexpr float kSlack = 1e-6f;  // as the CPU: a box may overshoot the edge by rounding
  const float scale = length / static_cast<float>(out_size);
  const float filter_scale = fmaxf(scale, 1.0f);
  const float support = filter_scale;
  const int ksize = static_cast<int>(ceilf(support)) * 2 + 1;
  const int lo = min(max(static_cast<int>(floorf(start + kSlack)), 0), src_size - 1);
  const int hi = min(max(static_cast<int>(ceilf(start + length - kSlack)), lo + 1), src_size);
  const float center = start + (static_cast<float>(i) + 0.5f) * scale;
  const int xmin = max(static_cast<int>(floorf(center - support + 0.5f)), lo);
  const int xmax = min(static_cast<int>(floorf(center + support + 0.5f)), hi);
  Taps t;
  t.count = min(max(xmax - xmin, 1), ksize);
  t.first = min(xmin, hi - 1);
  t.origin = static_cast<float>(xmin) - center + 0.5f;
  t.inv_fs = 1.0f / filter_scale;
  float total = 0;
  for (int k = 0; k < t.count; ++k) total += triangle((k + t.origin) * t.inv_fs);
  t.degenerate = !(total > 0);
  t.inv_total = t.degenerate ? 1.0f : 1.0f / total;
  return t;
}

__device__ __forceinline__ float weight(const Taps& t, int k) {
  if (t.degenerate) return k == 0 ? 1.0f : 0.0f;
  return triangle((k + t.origin) * t.inv_fs);
}

template <ElementType T, bool Nchw>
__global__ void resize_crop_kernel(const ResizeCropItem* __restrict__ items, int out_h, int out_w,
                                   Params p, void* __restrict__ dst) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  const int n = blockIdx.z;
  if (x >= out_w || y >= out_h) return;
  const ResizeCropItem it = items[n];
  const int xo = it.flip ? out_w - 1 - x : x;
  const std::size_t plane = static_cast<std::size_t>(out_h) * out_w;
  auto out_index = [&](int c) {
    return Nchw ? (static_cast<std::size_t>(n) * 3 + c) * plane +
                      static_cast<std::size_t>(y) * out_w + xo
                : ((static_cast<std::size_t>(n) * out_h + y) * out_w + xo) * 3 + c;
  };
  if (!it.valid) {
    for (int c = 0; c < 3; ++c) store_float<T>(dst, out_index(c), 0.0f);
    return;
  }
  const Taps ty = taps_for(y, it.crop_y, it.crop_h, out_h, it.height);
  const Taps tx = taps_for(x, it.crop_x, it.crop_w, out_w, it.width);
  float acc[3] = {0, 0, 0};
  for (int j = 0; j < ty.count; ++j) {
    const float wy = weight(ty, j);
    if (wy == 0.0f) continue;
    const std::uint8_t* row = it.src + static_cast<std::size_t>(ty.first + j) * it.pitch +
                              static_cast<std::size_t>(tx.first) * 3;
    float r = 0, g = 0, b = 0;
    for (int k = 0; k < tx.count; ++k) {
      const float wx = weight(tx, k);
      r += wx * row[3 * k];
      g += wx * row[3 * k + 1];
      b += wx * row[3 * k + 2];
    }
    acc[0] += wy * r;
    acc[1] += wy * g;
    acc[2] += wy * b;
  }
  const float norm = ty.inv_total * tx.inv_total;
  for (int c = 0; c < 3; ++c) {
    // The uint8 level the CPU path's batch slot would hold, then normalize() as the CPU does.
    const float level = fminf(fmaxf(floorf(acc[c] * norm + 0.5f), 0.0f), 255.0f);
    store_float<T>(dst, out_index(c), (level - p.mean[c]) * p.inv_std[c]);
  }
}

template <ElementType T>
void launch(const ResizeCropItem* items, const NormalizeShape& s, const Params& p, void* dst,
            cudaStream_t stream) {
  const dim3 block(32, 8);
  const dim3 grid(static_cast<unsigned>((s.w + 31) / 32), static_cast<unsigned>((s.h + 7) / 8),
                  static_cast<unsigned>(s.n));
  if (s.nchw)
    resize_crop_kernel<T, true><<<grid, block, 0, stream>>>(items, s.h, s.w, p, dst);
  else
    resize_crop_kernel<T, false><<<grid, block, 0, stream>>>(items, s.h, s.w, p, dst);
}

}  // namespace

void resize_crop_normalize(const ResizeCropItem* items, const NormalizeShape& shape,
                           ElementType out, const float mean[4], const float stddev[4], void* dst,
                           cudaStream_t stream) {
  if (shape.c != 3) throw Error(ErrorKind::usage, "resize_crop_normalize: 3 channels (RGB) only");
  if (shape.n > 65535)
    throw Error(ErrorKind::usage, "resize_crop_normalize: at most 65,535 images");
  if (shape.n <= 0 || shape.h <= 0 || shape.w <= 0) return;
  Params p{};
  for (int c = 0; c < 3; ++c) {
    p.mean[c] = mean[c];
    p.inv_std[c] = 1.0f / stddev[c];
  }
  switch (out) {
    case ElementType::f32:
      launch<ElementType::f32>(items, shape, p, dst, stream);
      break;
    case ElementType::f16:
      launch<ElementType::f16>(items, shape, p, dst, stream);
      break;
    case ElementType::bf16:
      launch<ElementType::bf16>(items, shape, p, dst, stream);
      break;
    default:
      throw Error(ErrorKind::usage, "resize_crop_normalize: output must be fp32, fp16 or bf16");
  }
  GB_CHECK_LAUNCH();
}

}  // namespace gb::gpu
