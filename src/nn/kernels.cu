// nn/kernels.cu: see kernels.hpp. Elementwise kernels take a vector width V (16 bytes of T when
// every pointer is 16-byte aligned and n is a multiple of V, else 1) and a grid-stride loop.
#include <cstdint>

#include "gpu/check.hpp"
#include "nn/dtype.cuh"
#include "nn/kernels.hpp"

namespace gb::nn {
namespace {

constexpr unsigned kBlock = 256;

template <typename T, int V>
struct alignas(sizeof(T) * V) Pack {
  T v[V];
};

__device__ __forceinline__ float apply_act(float v, Act act) {
  if (act == Act::relu) return v > 0.f ? v : 0.f;
  if (act == Act::relu6) return v > 0.f ? (v < 6.f ? v : 6.f) : 0.f;
  return v;
}

// Derivative of act at a point whose OUTPUT is y (ReLU: y > 0; ReLU6: 0 < y < 6).
__device__ __forceinline__ float act_grad_from_output(float y, Act act) {
  if (act == Act::relu) return y > 0.f ? 1.f : 0.f;
  if (act == Act::relu6) return (y > 0.f && y < 6.f) ? 1.f : 0.f;
  return 1.f;
}

template <typename T, int V>
__global__ void act_forward_kernel(const T* __restrict__ x, const T* __restrict__ z, T* y,
                                   std::size_t packs, Act act) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < packs;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    Pack<T, V> xv = reinterpret_cast<const Pack<T, V>*>(x)[i];
    Pack<T, V> zv{};
    if (z) zv = reinterpret_cast<const Pack<T, V>*>(z)[i];
    Pack<T, V> out;
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const float v = to_f32(xv.v[k]) + (z ? to_f32(zv.v[k]) : 0.f);
      out.v[k] = from_f32<T>(apply_act(v, act));
    }
    reinterpret_cast<Pack<T, V>*>(y)[i] = out;
  }
}

template <typename T, int V>
__global__ void act_backward_kernel(const T* __restrict__ y, const T* dy, T* dx, bool dx_acc,
                                    T* dz, bool dz_acc, std::size_t packs, Act act) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < packs;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const Pack<T, V> dyv = reinterpret_cast<const Pack<T, V>*>(dy)[i];
    Pack<T, V> yv{};
    if (y) yv = reinterpret_cast<const Pack<T, V>*>(y)[i];
    float g[V];
#pragma unroll
    for (int k = 0; k < V; ++k)
      g[k] = to_f32(dyv.v[k]) * (y ? act_grad_from_output(to_f32(yv.v[k]), act) : 1.f);
    Pack<T, V> out;
    Pack<T, V> prev{};
    if (dx_acc) prev = reinterpret_cast<const Pack<T, V>*>(dx)[i];
#pragma unroll
    for (int k = 0; k < V; ++k) out.v[k] = from_f32<T>(g[k] + (dx_acc ? to_f32(prev.v[k]) : 0.f));
    reinterpret_cast<Pack<T, V>*>(dx)[i] = out;
    if (dz) {
      if (dz_acc) prev = reinterpret_cast<const Pack<T, V>*>(dz)[i];
#pragma unroll
      for (int k = 0; k < V; ++k)
        out.v[k] = from_f32<T>(g[k] + (dz_acc ? to_f32(prev.v[k]) : 0.f));
      reinterpret_cast<Pack<T, V>*>(dz)[i] = out;
    }
  }
}

bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0; }

// NCHW: one warp per (n, c) plane. NHWC: one thread per (n, c), stepping over H x W with stride C
// (neighbouring threads read neighbouring channels: coalesced).
template <typename T>
__global__ void gap_forward_nchw(const T* __restrict__ x, T* __restrict__ y, int planes, int hw) {
  const int warp = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) / 32);
  const int lane = static_cast<int>(threadIdx.x % 32);
  if (warp >= planes) return;
  const T* p = x + static_cast<std::size_t>(warp) * hw;
  float s = 0.f;
  for (int i = lane; i < hw; i += 32) s += to_f32(p[i]);
  for (int o = 16; o > 0; o /= 2) s += __shfl_down_sync(0xffffffffu, s, o);
  if (lane == 0) y[warp] = from_f32<T>(s / static_cast<float>(hw));
}

template <typename T>
__global__ void gap_forward_nhwc(const T* __restrict__ x, T* __restrict__ y, int n, int c,
                                 int hw) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n * c) return;
  const int b = i / c, ch = i % c;
  const T* p = x + static_cast<std::size_t>(b) * hw * c + ch;
  float s = 0.f;
  for (int k = 0; k < hw; ++k) s += to_f32(p[static_cast<std::size_t>(k) * c]);
  y[i] = from_f32<T>(s / static_cast<float>(hw));
}

template <typename T>
__global__ void gap_backward_kernel(const T* __restrict__ dy, T* dx, bool acc, int c, int hw,
                                    bool nhwc, std::size_t total) {
  const float inv = 1.f / static_cast<float>(hw);
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    std::size_t nc;
    if (nhwc) {
      nc = (i / (static_cast<std::size_t>(hw) * c)) * c + i % c;
    } else {
      nc = i / hw;
    }
    const float g = to_f32(dy[nc]) * inv;
    dx[i] = from_f32<T>(acc ? to_f32(dx[i]) + g : g);
  }
}

template <typename T>
__global__ void cast_kernel(const float* __restrict__ src, T* __restrict__ dst, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    dst[i] = from_f32<T>(src[i]);
}

template <typename T>
__global__ void bias_grad_kernel(const T* __restrict__ dy, T* __restrict__ db, int rows,
                                 int cols) {
  const int j = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (j >= cols) return;
  float s = 0.f;
  for (int r = 0; r < rows; ++r) s += to_f32(dy[static_cast<std::size_t>(r) * cols + j]);
  db[j] = from_f32<T>(s);
}

__device__ __forceinline__ std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

template <typename T>
__global__ void fill_normal_kernel(T* dst, std::size_t n, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const std::uint64_t r = splitmix64(seed * 0x632be59bd9b4e019ull + i);
    const float u1 = (static_cast<float>(r >> 40) + 1.f) * (1.f / 16777217.f);  // (0, 1]
    const float u2 = static_cast<float>((r >> 16) & 0xffffffu) * (1.f / 16777216.f);
    dst[i] = from_f32<T>(sqrtf(-2.f * logf(u1)) * cospif(2.f * u2));
  }
}

__global__ void fill_labels_kernel(std::int32_t* dst, std::size_t n, int classes,
                                   std::uint64_t seed) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < n)
    dst[i] = static_cast<std::int32_t>(splitmix64(seed * 0xd1b54a32d192ed03ull + i) %
                                       static_cast<std::uint64_t>(classes));
}

}  // namespace

void act_forward(const void* x, const void* z, void* y, std::size_t n, ElementType t, Act act,
                 cudaStream_t stream) {
  if (n == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    constexpr int V = 16 / sizeof(T);
    const bool vec = n % V == 0 && aligned16(x) && aligned16(y) && (!z || aligned16(z));
    const auto* xp = static_cast<const T*>(x);
    const auto* zp = static_cast<const T*>(z);
    auto* yp = static_cast<T*>(y);
    if (vec) {
      act_forward_kernel<T, V><<<grid_for(n / V, kBlock), kBlock, 0, stream>>>(xp, zp, yp, n / V,
                                                                                act);
    } else {
      act_forward_kernel<T, 1><<<grid_for(n, kBlock), kBlock, 0, stream>>>(xp, zp, yp, n, act);
    }
  });
  GB_CHECK_LAUNCH();
}

void act_backward(const void* y, const void* dy, void* dx, bool dx_accumulate, void* dz,
                  bool dz_accumulate, std::size_t n, ElementType t, Act act, cudaStream_t stream) {
  if (n == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    constexpr int V = 16 / sizeof(T);
    const bool vec = n % V == 0 && aligned16(dy) && aligned16(dx) && (!y || aligned16(y)) &&
                     (!dz || aligned16(dz));
    const auto* yp = static_cast<const T*>(y);
    const auto* dyp = static_cast<const T*>(dy);
    auto* dxp = static_cast<T*>(dx);
    auto* dzp = static_cast<T*>(dz);
    if (vec) {
      act_backward_kernel<T, V><<<grid_for(n / V, kBlock), kBlock, 0, stream>>>(
          yp, dyp, dxp, dx_accumulate, dzp, dz_accumulate, n / V, act);
    } else {
      act_backward_kernel<T, 1><<<grid_for(n, kBlock), kBlock, 0, stream>>>(
          yp, dyp, dxp, dx_accumulate, dzp, dz_accumulate, n, act);
    }
  });
  GB_CHECK_LAUNCH();
}

void global_avgpool_forward(const void* x, void* y, const Shape& s, bool nhwc, ElementType t,
                            cudaStream_t stream) {
  const int hw = s.h * s.w;
  const int planes = s.n * s.c;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    if (nhwc) {
      gap_forward_nhwc<T><<<grid_for(static_cast<std::size_t>(planes), kBlock), kBlock, 0,
                            stream>>>(static_cast<const T*>(x), static_cast<T*>(y), s.n, s.c, hw);
    } else {
      gap_forward_nchw<T><<<grid_for(static_cast<std::size_t>(planes) * 32, kBlock), kBlock, 0,
                            stream>>>(static_cast<const T*>(x), static_cast<T*>(y), planes, hw);
    }
  });
  GB_CHECK_LAUNCH();
}

void global_avgpool_backward(const void* dy, void* dx, bool accumulate, const Shape& s, bool nhwc,
                             ElementType t, cudaStream_t stream) {
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    gap_backward_kernel<T><<<grid_for(s.elements(), kBlock), kBlock, 0, stream>>>(
        static_cast<const T*>(dy), static_cast<T*>(dx), accumulate, s.c, s.h * s.w, nhwc,
        s.elements());
  });
  GB_CHECK_LAUNCH();
}

void cast_from_f32(const float* src, void* dst, std::size_t n, ElementType t, cudaStream_t stream) {
  if (n == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    cast_kernel<T><<<grid_for(n, kBlock), kBlock, 0, stream>>>(src, static_cast<T*>(dst), n);
  });
  GB_CHECK_LAUNCH();
}

void bias_grad(const void* dy, void* dbias, int rows, int cols, ElementType t,
               cudaStream_t stream) {
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    bias_grad_kernel<T><<<grid_for(static_cast<std::size_t>(cols), kBlock), kBlock, 0, stream>>>(
        static_cast<const T*>(dy), static_cast<T*>(dbias), rows, cols);
  });
  GB_CHECK_LAUNCH();
}

void fill_normal(void* dst, std::size_t n, ElementType t, std::uint64_t seed, cudaStream_t stream) {
  if (n == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    fill_normal_kernel<T><<<grid_for(n, kBlock), kBlock, 0, stream>>>(static_cast<T*>(dst), n,
                                                                      seed);
  });
  GB_CHECK_LAUNCH();
}

void fill_labels(std::int32_t* dst, std::size_t n, int classes, std::uint64_t seed,
                 cudaStream_t stream) {
  if (n == 0) return;
  fill_labels_kernel<<<grid_for(n, kBlock, 1u << 30), kBlock, 0, stream>>>(dst, n, classes, seed);
  GB_CHECK_LAUNCH();
}

}  // namespace gb::nn
