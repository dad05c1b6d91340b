// gpu/membw.cu: device-memory bandwidth kernels and their launchers (see membw.hpp for the
// byte accounting).
//
// Napkin math (H200, HBM3e 4.8 TB/s): a 2 GiB read takes ~0.49 ms at 4.4 TB/s. Bandwidth x
// latency (~0.7 us) is ~3.4 MB that must be in flight, ~26 KB per SM over 132 SMs. A full SM
// (2048 threads) with 4 independent 16-byte loads per thread has 128 KB in flight: plenty, so
// the unroll by 4 and full occupancy are what keep HBM busy, not any cleverness.
#include <algorithm>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "gpu/check.hpp"
#include "gpu/cuda_raii.hpp"
#include "gpu/membw.hpp"

namespace gb::gpu {

namespace {

constexpr int kUnroll = 4;  // independent 16-byte accesses in flight per thread and stream

__device__ inline std::size_t global_thread_index() {
  return static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline std::size_t grid_threads() {
  return static_cast<std::size_t>(gridDim.x) * blockDim.x;
}

__device__ inline std::uint32_t lane_sum(uint4 v) {
  return v.x + v.y + v.z + v.w;
}

__device__ inline std::uint32_t warp_sum(std::uint32_t v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  return v;
}

// Grid-stride loop over nvec 16-byte vectors, four per thread per iteration, then the (n % 4)
// tail elements by the first threads of the grid. Unsigned sums wrap mod 2^32, so the result
// does not depend on the order of additions and is checked exactly.
__global__ void read_kernel(const uint4* __restrict__ src, std::size_t nvec,
                            const std::uint32_t* __restrict__ tail, std::size_t ntail,
                            std::uint32_t* __restrict__ partial_sums) {
  const std::size_t stride = grid_threads();
  std::size_t i = global_thread_index();
  std::uint32_t acc = 0;
  for (; i + (kUnroll - 1) * stride < nvec; i += kUnroll * stride) {
    const uint4 v0 = src[i];
    const uint4 v1 = src[i + stride];
    const uint4 v2 = src[i + 2 * stride];
    const uint4 v3 = src[i + 3 * stride];
    acc += lane_sum(v0) + lane_sum(v1) + lane_sum(v2) + lane_sum(v3);
  }
  for (; i < nvec; i += stride) acc += lane_sum(src[i]);
  if (global_thread_index() < ntail) acc += tail[global_thread_index()];

  // Block reduction: warps first, then the first warp over the per-warp sums.
  __shared__ std::uint32_t warp_sums[32];
  const unsigned lane = threadIdx.x % 32;
  const unsigned warp = threadIdx.x / 32;
  acc = warp_sum(acc);
  if (lane == 0) warp_sums[warp] = acc;
  __syncthreads();
  if (warp == 0) {
    acc = lane < blockDim.x / 32 ? warp_sums[lane] : 0u;
    acc = warp_sum(acc);
    if (lane == 0) partial_sums[blockIdx.x] = acc;
  }
}

__device__ inline uint4 pattern_vector(std::size_t first, std::uint32_t seed) {
  return make_uint4(pattern_u32(first, seed), pattern_u32(first + 1, seed),
                    pattern_u32(first + 2, seed), pattern_u32(first + 3, seed));
}

// --- write and copy variants (KernelVariant in membw.hpp) -----------------------------------
// Napkin math (H200): a 2 GiB copy moves 4.29 GB (read + write); at the 4.25 TB/s of
// cudaMemcpy D2D / torch copy_ that is 1.01 ms, at our old 3.95 TB/s 1.09 ms. Triad (2 reads +
// 1 write) already streams at 4.16 TB/s, so HBM is not the limit: the access pattern is. The
// variants differ only in how they walk the buffer and in cache hints; the probe keeps the
// fastest. A one-shot tiled grid over 2 GiB at 256 threads x 4 vectors is 131072 blocks of
// 16 KB each: the block scheduler hands out tiles roughly in address order, so the DRAM pages
// being read and written at any moment are few and close together.
//
// Registers (ptxas -v, sm_90): copy grid_stride u8 normal 32, u8 streaming 56, tiled u8 normal
// 48, tiled u8 streaming 64. "normal" loads are ld.global.nc (const __restrict__), which ptxas
// may sink past stores: at 32 registers grid_stride/u8/normal cannot hold 8 vectors at once,
// so it keeps fewer than 8 loads in flight. Streaming loads (ld.global.cs) are coherent and stay
// ahead of the stores as written: all 8 in flight. At 64 registers a tiled u8 streaming block
// of 1024 threads still fits (1024 resident threads per SM, 128 KB in flight).

template <bool Streaming>
__device__ inline uint4 load_vec(const uint4* p) {
  if constexpr (Streaming)
    return __ldcs(p);
  else
    return *p;
}

template <bool Streaming>
__device__ inline void store_vec(uint4* p, uint4 v) {
  if constexpr (Streaming)
    __stcs(p, v);
  else
    *p = v;
}

template <bool Streaming>
__device__ inline void store_u32(std::uint32_t* p, std::uint32_t v) {
  if constexpr (Streaming)
    __stcs(reinterpret_cast<unsigned int*>(p), static_cast<unsigned int>(v));
  else
    *p = v;
}

// Grid-stride write: Unroll stores per thread per iteration, then single vectors, then the tail.
template <int Unroll, bool Streaming>
__global__ void write_grid_stride_kernel(uint4* __restrict__ dst, std::size_t nvec,
                                         std::uint32_t* __restrict__ tail, std::size_t ntail,
                                         std::uint32_t seed) {
  const std::size_t stride = grid_threads();
  std::size_t i = global_thread_index();
  for (; i + (Unroll - 1) * stride < nvec; i += Unroll * stride) {
#pragma unroll
    for (int j = 0; j < Unroll; ++j) {
      const std::size_t k = i + j * stride;
      store_vec<Streaming>(dst + k, pattern_vector(4 * k, seed));
    }
  }
  for (; i < nvec; i += stride) store_vec<Streaming>(dst + i, pattern_vector(4 * i, seed));
  const std::size_t t = global_thread_index();
  if (t < ntail) store_u32<Streaming>(tail + t, pattern_u32(4 * nvec + t, seed));
}

// Tiled write: block b writes tiles b, b + gridDim.x, ... of blockDim.x x Unroll vectors; vector
// j of thread t in a tile is tile_base + j * blockDim.x + t (warp-contiguous). Full tiles skip
// the bounds checks; the last, partial tile checks each vector.
template <int Unroll, bool Streaming>
__global__ void write_tiled_kernel(uint4* __restrict__ dst, std::size_t nvec,
                                   std::uint32_t* __restrict__ tail, std::size_t ntail,
                                   std::uint32_t seed) {
  const std::size_t tile = static_cast<std::size_t>(blockDim.x) * Unroll;
  for (std::size_t base = blockIdx.x * tile; base < nvec;
       base += static_cast<std::size_t>(gridDim.x) * tile) {
    const std::size_t first = base + threadIdx.x;
    if (base + tile <= nvec) {
#pragma unroll
      for (int j = 0; j < Unroll; ++j) {
        const std::size_t k = first + static_cast<std::size_t>(j) * blockDim.x;
        store_vec<Streaming>(dst + k, pattern_vector(4 * k, seed));
      }
    } else {
#pragma unroll
      for (int j = 0; j < Unroll; ++j) {
        const std::size_t k = first + static_cast<std::size_t>(j) * blockDim.x;
        if (k < nvec) store_vec<Streaming>(dst + k, pattern_vector(4 * k, seed));
      }
    }
  }
  if (blockIdx.x == 0 && threadIdx.x < ntail)
    store_u32<Streaming>(tail + threadIdx.x, pattern_u32(4 * nvec + threadIdx.x, seed));
}

// Grid-stride copy: the Unroll loads of an iteration all go out before the first store (the
// values sit in registers; __restrict__ lets the compiler keep that order), then single
// vectors, then the tail.
template <int Unroll, bool Streaming>
__global__ void copy_grid_stride_kernel(const uint4* __restrict__ src, uint4* __restrict__ dst,
                                        std::size_t nvec,
                                        const std::uint32_t* __restrict__ src_tail,
                                        std::uint32_t* __restrict__ dst_tail, std::size_t ntail) {
  const std::size_t stride = grid_threads();
  std::size_t i = global_thread_index();
  for (; i + (Unroll - 1) * stride < nvec; i += Unroll * stride) {
    uint4 v[Unroll];
#pragma unroll
    for (int j = 0; j < Unroll; ++j) v[j] = load_vec<Streaming>(src + i + j * stride);
#pragma unroll
    for (int j = 0; j < Unroll; ++j) store_vec<Streaming>(dst + i + j * stride, v[j]);
  }
  for (; i < nvec; i += stride) store_vec<Streaming>(dst + i, load_vec<Streaming>(src + i));
  const std::size_t t = global_thread_index();
  if (t < ntail) store_u32<Streaming>(dst_tail + t, src_tail[t]);
}

// Tiled copy (one-shot with tiled_grid_blocks blocks): layout as write_tiled_kernel, all loads
// of a tile before any store.
template <int Unroll, bool Streaming>
__global__ void copy_tiled_kernel(const uint4* __restrict__ src, uint4* __restrict__ dst,
                                  std::size_t nvec, const std::uint32_t* __restrict__ src_tail,
                                  std::uint32_t* __restrict__ dst_tail, std::size_t ntail) {
  const std::size_t tile = static_cast<std::size_t>(blockDim.x) * Unroll;
  for (std::size_t base = blockIdx.x * tile; base < nvec;
       base += static_cast<std::size_t>(gridDim.x) * tile) {
    const std::size_t first = base + threadIdx.x;
    uint4 v[Unroll];
    if (base + tile <= nvec) {
#pragma unroll
      for (int j = 0; j < Unroll; ++j)
        v[j] = load_vec<Streaming>(src + first + static_cast<std::size_t>(j) * blockDim.x);
#pragma unroll
      for (int j = 0; j < Unroll; ++j)
        store_vec<Streaming>(dst + first + static_cast<std::size_t>(j) * blockDim.x, v[j]);
    } else {
#pragma unroll
      for (int j = 0; j < Unroll; ++j) {
        const std::size_t k = first + static_cast<std::size_t>(j) * blockDim.x;
        if (k < nvec) v[j] = load_vec<Streaming>(src + k);
      }
#pragma unroll
      for (int j = 0; j < Unroll; ++j) {
        const std::size_t k = first + static_cast<std::size_t>(j) * blockDim.x;
        if (k < nvec) store_vec<Streaming>(dst + k, v[j]);
      }
    }
  }
  if (blockIdx.x == 0 && threadIdx.x < ntail)
    store_u32<Streaming>(dst_tail + threadIdx.x, src_tail[threadIdx.x]);
}

using WriteFn = void (*)(uint4*, std::size_t, std::uint32_t*, std::size_t, std::uint32_t);
using CopyFn = void (*)(const uint4*, uint4*, std::size_t, const std::uint32_t*, std::uint32_t*,
                        std::size_t);

// The one list of write/copy variants: kernel_variants() returns it, and the dispatch below
// covers exactly these (it throws for anything else).
constexpr KernelVariant kWriteCopyVariants[] = {
    {MemAccess::grid_stride, 4, CacheHint::normal},  // the original kernels: default first
    {MemAccess::grid_stride, 8, CacheHint::normal},
    {MemAccess::grid_stride, 4, CacheHint::streaming},
    {MemAccess::grid_stride, 8, CacheHint::streaming},
    {MemAccess::tiled, 4, CacheHint::normal},
    {MemAccess::tiled, 8, CacheHint::normal},
    {MemAccess::tiled, 4, CacheHint::streaming},
    {MemAccess::tiled, 8, CacheHint::streaming},
};

[[noreturn]] void unsupported(const char* kernel, KernelVariant v) {
  throw Error(ErrorKind::runtime,
              std::string("membw: ") + kernel + " has no variant " + variant_name(v));
}

template <int Unroll, bool Streaming>
WriteFn write_fn(MemAccess a) {
  return a == MemAccess::tiled ? write_tiled_kernel<Unroll, Streaming>
                               : write_grid_stride_kernel<Unroll, Streaming>;
}

template <int Unroll, bool Streaming>
CopyFn copy_fn(MemAccess a) {
  return a == MemAccess::tiled ? copy_tiled_kernel<Unroll, Streaming>
                               : copy_grid_stride_kernel<Unroll, Streaming>;
}

WriteFn write_function(KernelVariant v) {
  const bool s = v.hint == CacheHint::streaming;
  if (v.unroll == 4) return s ? write_fn<4, true>(v.access) : write_fn<4, false>(v.access);
  if (v.unroll == 8) return s ? write_fn<8, true>(v.access) : write_fn<8, false>(v.access);
  unsupported("write", v);
}

CopyFn copy_function(KernelVariant v) {
  const bool s = v.hint == CacheHint::streaming;
  if (v.unroll == 4) return s ? copy_fn<4, true>(v.access) : copy_fn<4, false>(v.access);
  if (v.unroll == 8) return s ? copy_fn<8, true>(v.access) : copy_fn<8, false>(v.access);
  unsupported("copy", v);
}

__device__ inline float4 triad4(float4 b, float4 c, float s) {
  return make_float4(b.x + s * c.x, b.y + s * c.y, b.z + s * c.z, b.w + s * c.w);
}

__global__ void triad_kernel(float4* __restrict__ a, const float4* __restrict__ b,
                             const float4* __restrict__ c, float s, std::size_t nvec,
                             float* __restrict__ a_tail, const float* __restrict__ b_tail,
                             const float* __restrict__ c_tail, std::size_t ntail) {
  const std::size_t stride = grid_threads();
  std::size_t i = global_thread_index();
  for (; i + (kUnroll - 1) * stride < nvec; i += kUnroll * stride) {
    const float4 b0 = b[i], c0 = c[i];
    const float4 b1 = b[i + stride], c1 = c[i + stride];
    const float4 b2 = b[i + 2 * stride], c2 = c[i + 2 * stride];
    const float4 b3 = b[i + 3 * stride], c3 = c[i + 3 * stride];
    a[i] = triad4(b0, c0, s);
    a[i + stride] = triad4(b1, c1, s);
    a[i + 2 * stride] = triad4(b2, c2, s);
    a[i + 3 * stride] = triad4(b3, c3, s);
  }
  for (; i < nvec; i += stride) a[i] = triad4(b[i], c[i], s);
  const std::size_t t = global_thread_index();
  if (t < ntail) a_tail[t] = b_tail[t] + s * c_tail[t];
}

__global__ void fill_u32_kernel(std::uint32_t* __restrict__ dst, std::size_t n,
                                std::uint32_t seed) {
  for (std::size_t i = global_thread_index(); i < n; i += grid_threads())
    dst[i] = pattern_u32(i, seed);
}

__global__ void fill_f32_kernel(float* __restrict__ dst, std::size_t n, std::uint32_t seed) {
  for (std::size_t i = global_thread_index(); i < n; i += grid_threads())
    dst[i] = pattern_f32(i, seed);
}

__global__ void gather_kernel(const std::uint32_t* __restrict__ src,
                              const std::uint64_t* __restrict__ indices, std::size_t count,
                              std::uint32_t* __restrict__ out) {
  for (std::size_t k = global_thread_index(); k < count; k += grid_threads())
    out[k] = src[indices[k]];
}

void require_aligned(const void* p, const char* what) {
  if (reinterpret_cast<std::uintptr_t>(p) % 16 != 0)
    throw Error(ErrorKind::runtime,
                std::string("membw: ") + what + " must be 16-byte aligned for vector access");
}

void require_shape(LaunchShape shape) {
  if (shape.blocks < 1 || shape.threads < 32 || shape.threads > 1024 || shape.threads % 32 != 0)
    throw Error(ErrorKind::runtime,
                "membw: launch shape needs >= 1 block and 32..1024 threads in whole warps (got " +
                    std::to_string(shape.blocks) + " x " + std::to_string(shape.threads) + ")");
}

// Shape for the simple grid-stride helpers (fill, gather): enough blocks to fill any GPU,
// never more than the work needs. Zero blocks means there is nothing to do.
LaunchShape helper_shape(std::size_t n) {
  constexpr int kThreads = 256;
  constexpr std::size_t kMaxBlocks = 8192;
  const std::size_t blocks = (n + kThreads - 1) / kThreads;
  return {static_cast<int>(blocks < kMaxBlocks ? blocks : kMaxBlocks), kThreads};
}

}  // namespace

std::uint32_t expected_pattern_sum(std::size_t n, std::uint32_t seed) {
  // sum_{i<n} (i*K + seed) = K * n(n-1)/2 + n*seed, all mod 2^32. Halve the even factor first
  // so the product is exact mod 2^64 (and therefore mod 2^32).
  const std::uint64_t n64 = n;
  const std::uint64_t index_sum =
      n64 == 0 ? 0 : (n64 % 2 == 0 ? (n64 / 2) * (n64 - 1) : n64 * ((n64 - 1) / 2));
  return static_cast<std::uint32_t>(index_sum) * kPatternMultiplier +
         static_cast<std::uint32_t>(n64) * seed;
}

std::string variant_name(KernelVariant v) {
  return std::string(v.access == MemAccess::tiled ? "tiled" : "grid_stride") + "/u" +
         std::to_string(v.unroll) + "/" + (v.hint == CacheHint::streaming ? "streaming" : "normal");
}

std::vector<KernelVariant> kernel_variants(MemKernel k) {
  if (k == MemKernel::write || k == MemKernel::copy)
    return {std::begin(kWriteCopyVariants), std::end(kWriteCopyVariants)};
  return {KernelVariant{}};
}

int blocks_per_sm(MemKernel k, int threads, KernelVariant v) {
  int blocks = 0;
  switch (k) {
    case MemKernel::read:
      if (!(v == KernelVariant{})) unsupported("read", v);
      GB_CHECK_CUDA(
          cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, read_kernel, threads, 0));
      break;
    case MemKernel::write:
      GB_CHECK_CUDA(
          cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, write_function(v), threads, 0));
      break;
    case MemKernel::copy:
      GB_CHECK_CUDA(
          cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, copy_function(v), threads, 0));
      break;
    case MemKernel::triad:
      if (!(v == KernelVariant{})) unsupported("triad", v);
      GB_CHECK_CUDA(
          cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, triad_kernel, threads, 0));
      break;
  }
  return blocks;
}

int tiled_grid_blocks(std::size_t n, int threads, int unroll) {
  const std::size_t tile = static_cast<std::size_t>(std::max(threads, 1)) *
                           static_cast<std::size_t>(std::max(unroll, 1));
  const std::size_t tiles = (n / 4 + tile - 1) / tile;
  constexpr auto kMax = static_cast<std::size_t>(std::numeric_limits<int>::max());
  return static_cast<int>(std::clamp<std::size_t>(tiles, 1, kMax));
}

void fill_pattern_u32(std::uint32_t* dst, std::size_t n, std::uint32_t seed, cudaStream_t stream) {
  const LaunchShape shape = helper_shape(n);
  if (shape.blocks == 0) return;
  fill_u32_kernel<<<shape.blocks, shape.threads, 0, stream>>>(dst, n, seed);
  GB_CHECK_LAUNCH();
}

void fill_pattern_f32(float* dst, std::size_t n, std::uint32_t seed, cudaStream_t stream) {
  const LaunchShape shape = helper_shape(n);
  if (shape.blocks == 0) return;
  fill_f32_kernel<<<shape.blocks, shape.threads, 0, stream>>>(dst, n, seed);
  GB_CHECK_LAUNCH();
}

void launch_read(const std::uint32_t* src, std::size_t n, std::uint32_t* partial_sums,
                 LaunchShape shape, cudaStream_t stream) {
  require_shape(shape);
  require_aligned(src, "read source");
  const std::size_t nvec = n / 4;
  read_kernel<<<shape.blocks, shape.threads, 0, stream>>>(reinterpret_cast<const uint4*>(src), nvec,
                                                          src + 4 * nvec, n % 4, partial_sums);
  GB_CHECK_LAUNCH();
}

void launch_write(std::uint32_t* dst, std::size_t n, std::uint32_t seed, LaunchShape shape,
                  cudaStream_t stream, KernelVariant variant) {
  require_shape(shape);
  require_aligned(dst, "write destination");
  const WriteFn kernel = write_function(variant);
  const std::size_t nvec = n / 4;
  kernel<<<shape.blocks, shape.threads, 0, stream>>>(reinterpret_cast<uint4*>(dst), nvec,
                                                     dst + 4 * nvec, n % 4, seed);
  GB_CHECK_LAUNCH();
}

void launch_copy(const std::uint32_t* src, std::uint32_t* dst, std::size_t n, LaunchShape shape,
                 cudaStream_t stream, KernelVariant variant) {
  require_shape(shape);
  require_aligned(src, "copy source");
  require_aligned(dst, "copy destination");
  const CopyFn kernel = copy_function(variant);
  const std::size_t nvec = n / 4;
  kernel<<<shape.blocks, shape.threads, 0, stream>>>(reinterpret_cast<const uint4*>(src),
                                                     reinterpret_cast<uint4*>(dst), nvec,
                                                     src + 4 * nvec, dst + 4 * nvec, n % 4);
  GB_CHECK_LAUNCH();
}

void launch_triad(float* a, const float* b, const float* c, float s, std::size_t n,
                  LaunchShape shape, cudaStream_t stream) {
  require_shape(shape);
  require_aligned(a, "triad output a");
  require_aligned(b, "triad input b");
  require_aligned(c, "triad input c");
  const std::size_t nvec = n / 4;
  triad_kernel<<<shape.blocks, shape.threads, 0, stream>>>(
      reinterpret_cast<float4*>(a), reinterpret_cast<const float4*>(b),
      reinterpret_cast<const float4*>(c), s, nvec, a + 4 * nvec, b + 4 * nvec, c + 4 * nvec, n % 4);
  GB_CHECK_LAUNCH();
}

void gather_u32(const std::uint32_t* src, const std::uint64_t* indices, std::size_t count,
                std::uint32_t* out, cudaStream_t stream) {
  const LaunchShape shape = helper_shape(count);
  if (shape.blocks == 0) return;
  gather_kernel<<<shape.blocks, shape.threads, 0, stream>>>(src, indices, count, out);
  GB_CHECK_LAUNCH();
}

std::uint32_t device_checksum_u32(const std::uint32_t* src, std::size_t n, cudaStream_t stream) {
  constexpr LaunchShape kShape{1024, 256};
  const DeviceBuffer partial(kShape.blocks * sizeof(std::uint32_t));
  launch_read(src, n, partial.as<std::uint32_t>(), kShape, stream);
  std::vector<std::uint32_t> host(kShape.blocks);
  GB_CHECK_CUDA(cudaMemcpyAsync(host.data(), partial.data(), partial.bytes(),
                                cudaMemcpyDeviceToHost, stream));
  GB_CHECK_CUDA(cudaStreamSynchronize(stream));
  std::uint32_t sum = 0;
  for (const std::uint32_t v : host) sum += v;
  return sum;
}

void memcpy_repeated(void* dst, const void* src, std::size_t bytes, int count, cudaMemcpyKind kind,
                     cudaStream_t stream) {
  for (int i = 0; i < count; ++i) GB_CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, kind, stream));
}

void memcpy_bidirectional(void* dev_dst, const void* host_src, void* host_dst, const void* dev_src,
                          std::size_t bytes, int count, cudaStream_t h2d_stream,
                          cudaStream_t d2h_stream) {
  const Event fork = Event::create(cudaEventDisableTiming);
  const Event join = Event::create(cudaEventDisableTiming);
  fork.record(h2d_stream);
  GB_CHECK_CUDA(cudaStreamWaitEvent(d2h_stream, fork.get(), 0));
  for (int i = 0; i < count; ++i) {
    GB_CHECK_CUDA(cudaMemcpyAsync(dev_dst, host_src, bytes, cudaMemcpyHostToDevice, h2d_stream));
    GB_CHECK_CUDA(cudaMemcpyAsync(host_dst, dev_src, bytes, cudaMemcpyDeviceToHost, d2h_stream));
  }
  join.record(d2h_stream);
  GB_CHECK_CUDA(cudaStreamWaitEvent(h2d_stream, join.get(), 0));
}

}  // namespace gb::gpu
