// gpu/membw.cu: device-memory bandwidth kernels and their launchers (see membw.hpp for the
// byte accounting).
//
// Napkin math (H200, HBM3e 4.8 TB/s): a 2 GiB read takes ~0.49 ms at 4.4 TB/s. Bandwidth x
// latency (~0.7 us) is ~3.4 MB that must be in flight, ~26 KB per SM over 132 SMs. A full SM
// (2048 threads) with 4 independent 16-byte loads per thread has 128 KB in flight: plenty, so
// the unroll by 4 and full occupancy are what keep HBM busy, not any cleverness.
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

__global__ void write_kernel(uint4* __restrict__ dst, std::size_t nvec,
                             std::uint32_t* __restrict__ tail, std::size_t ntail,
                             std::uint32_t seed) {
  const std::size_t stride = grid_threads();
  std::size_t i = global_thread_index();
  for (; i + (kUnroll - 1) * stride < nvec; i += kUnroll * stride) {
    dst[i] = pattern_vector(4 * i, seed);
    dst[i + stride] = pattern_vector(4 * (i + stride), seed);
    dst[i + 2 * stride] = pattern_vector(4 * (i + 2 * stride), seed);
    dst[i + 3 * stride] = pattern_vector(4 * (i + 3 * stride), seed);
  }
  for (; i < nvec; i += stride) dst[i] = pattern_vector(4 * i, seed);
  const std::size_t t = global_thread_index();
  if (t < ntail) tail[t] = pattern_u32(4 * nvec + t, seed);
}

__global__ void copy_kernel(const uint4* __restrict__ src, uint4* __restrict__ dst,
                            std::size_t nvec, const std::uint32_t* __restrict__ src_tail,
                            std::uint32_t* __restrict__ dst_tail, std::size_t ntail) {
  const std::size_t stride = grid_threads();
  std::size_t i = global_thread_index();
  for (; i + (kUnroll - 1) * stride < nvec; i += kUnroll * stride) {
    const uint4 v0 = src[i];
    const uint4 v1 = src[i + stride];
    const uint4 v2 = src[i + 2 * stride];
    const uint4 v3 = src[i + 3 * stride];
    dst[i] = v0;
    dst[i + stride] = v1;
    dst[i + 2 * stride] = v2;
    dst[i + 3 * stride] = v3;
  }
  for (; i < nvec; i += stride) dst[i] = src[i];
  const std::size_t t = global_thread_index();
  if (t < ntail) dst_tail[t] = src_tail[t];
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

int blocks_per_sm(MemKernel k, int threads) {
  int blocks = 0;
  switch (k) {
    case MemKernel::read:
      GB_CHECK_CUDA(
          cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, read_kernel, threads, 0));
      break;
    case MemKernel::write:
      GB_CHECK_CUDA(
          cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, write_kernel, threads, 0));
      break;
    case MemKernel::copy:
      GB_CHECK_CUDA(
          cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, copy_kernel, threads, 0));
      break;
    case MemKernel::triad:
      GB_CHECK_CUDA(
          cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, triad_kernel, threads, 0));
      break;
  }
  return blocks;
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
                  cudaStream_t stream) {
  require_shape(shape);
  require_aligned(dst, "write destination");
  const std::size_t nvec = n / 4;
  write_kernel<<<shape.blocks, shape.threads, 0, stream>>>(reinterpret_cast<uint4*>(dst), nvec,
                                                           dst + 4 * nvec, n % 4, seed);
  GB_CHECK_LAUNCH();
}

void launch_copy(const std::uint32_t* src, std::uint32_t* dst, std::size_t n, LaunchShape shape,
                 cudaStream_t stream) {
  require_shape(shape);
  require_aligned(src, "copy source");
  require_aligned(dst, "copy destination");
  const std::size_t nvec = n / 4;
  copy_kernel<<<shape.blocks, shape.threads, 0, stream>>>(reinterpret_cast<const uint4*>(src),
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
