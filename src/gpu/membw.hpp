// gpu/membw.hpp: device-memory bandwidth kernels (read, write, copy, triad), the data patterns
// they are checked with, and the memcpy helpers the PCIe and host probes time. Kernels live in
// membw.cu; this header is plain C++ so host code (bench/gpu/*.cpp) includes it without nvcc.
//
// Every kernel moves 16-byte vectors (uint4/float4) and handles the n % 4 tail elements with
// scalar accesses, so any element count works. Pointers must be 16-byte aligned (cudaMalloc
// gives 256). Read and triad use one access pattern (a persistent grid-stride loop, four
// independent loads in flight per thread); write and copy come in several variants (KernelVariant
// below: grid-stride or one-shot tiles, unroll 4 or 8, normal or streaming cache hints) that the
// probe sweeps, keeping the fastest. Every variant is correct for any element count and any
// launch shape; only the speed differs.
//
// Byte accounting (what a GB/s figure divides by), n = elements, 4 bytes each:
//   read  : 4n        (each element loaded once; one 4-byte partial sum per block is written)
//   write : 4n
//   copy  : 8n        (4n read + 4n written)
//   triad : 12n       (a = b + s*c: 2 x 4n read + 4n written)
//   cudaMemcpy D2D : 2 x bytes (read + write)
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#if defined(__CUDACC__)
#define GB_HOST_DEVICE __host__ __device__
#else
#define GB_HOST_DEVICE
#endif

namespace gb::gpu {

// --- data patterns -------------------------------------------------------------------------
// Element i of the integer pattern: i * odd constant + seed (mod 2^32). Every element differs
// from its neighbours, and the sum over [0, n) has a closed form (expected_pattern_sum), so a
// read kernel's checksum over gigabytes is checked exactly without a host pass over the data.
inline constexpr std::uint32_t kPatternMultiplier = 0x9E3779B1u;

GB_HOST_DEVICE inline std::uint32_t pattern_u32(std::uint64_t i, std::uint32_t seed) {
  return static_cast<std::uint32_t>(i) * kPatternMultiplier + seed;
}

// Element i of the float pattern: an integer in [-32768, 32767] taken from the high bits of
// pattern_u32. Small integers keep b + s*c exact in FP32 for small integer s (|result| < 2^24),
// so the triad check compares bits, with or without FMA contraction.
GB_HOST_DEVICE inline float pattern_f32(std::uint64_t i, std::uint32_t seed) {
  return static_cast<float>(static_cast<int>(pattern_u32(i, seed) >> 16) - 32768);
}

// Sum of pattern_u32(i, seed) over i in [0, n), mod 2^32 (closed form).
std::uint32_t expected_pattern_sum(std::size_t n, std::uint32_t seed);

// --- launch shapes -------------------------------------------------------------------------
enum class MemKernel { read, write, copy, triad };

struct LaunchShape {
  int blocks = 0;
  int threads = 0;
};

// How a write or copy kernel walks the buffer (read and triad ignore this: always the default).
enum class MemAccess {
  // Persistent grid (sm_count x blocks_per_sm blocks); each thread strides over the buffer by
  // the whole grid, `unroll` 16-byte vectors per iteration, all loads issued before any store.
  grid_stride,
  // One-shot tiles, like PyTorch's vectorized elementwise kernels: block b copies tile b of
  // threads x unroll vectors (vector j of thread t is tile_base + j * threads + t, so each warp
  // instruction covers 512 contiguous bytes), all loads before any store. With
  // tiled_grid_blocks(...) blocks every block does exactly one tile; a smaller grid loops over
  // tiles (grid-stride by tile), so any launch shape is still correct.
  tiled,
};

enum class CacheHint {
  normal,     // plain ld.global / st.global
  streaming,  // __ldcs / __stcs (ld.global.cs / st.global.cs: evict-first, touched once)
};

struct KernelVariant {
  MemAccess access = MemAccess::grid_stride;
  int unroll = 4;  // 16-byte vectors per thread per iteration (tile): 4 or 8
  CacheHint hint = CacheHint::normal;
  friend bool operator==(const KernelVariant&, const KernelVariant&) = default;
};

// Short name, e.g. "grid_stride/u4/normal" or "tiled/u8/streaming".
std::string variant_name(KernelVariant v);

// Every variant the write and copy kernels support (the default first); read and triad support
// only the default KernelVariant{}.
std::vector<KernelVariant> kernel_variants(MemKernel k);

// Blocks of `threads` threads that fit on one SM at once for kernel k in variant v (occupancy
// API), so a persistent grid is sm_count x blocks_per_sm(k, threads, v). Throws for a variant
// the kernel does not support.
int blocks_per_sm(MemKernel k, int threads, KernelVariant v = {});

// Blocks for a one-shot tiled launch over n 4-byte elements: one tile of threads x unroll
// 16-byte vectors per block (at least 1, at most INT_MAX).
int tiled_grid_blocks(std::size_t n, int threads, int unroll);

// --- kernels (asynchronous on `stream`; launch errors are checked) --------------------------
void fill_pattern_u32(std::uint32_t* dst, std::size_t n, std::uint32_t seed, cudaStream_t stream);
void fill_pattern_f32(float* dst, std::size_t n, std::uint32_t seed, cudaStream_t stream);

// Sums n elements (mod 2^32) and writes one partial sum per block to partial_sums, which must
// hold shape.blocks elements. The sum of the partials is the checksum of src; the write keeps
// the compiler from dropping the loads.
void launch_read(const std::uint32_t* src, std::size_t n, std::uint32_t* partial_sums,
                 LaunchShape shape, cudaStream_t stream);
// dst[i] = pattern_u32(i, seed).
void launch_write(std::uint32_t* dst, std::size_t n, std::uint32_t seed, LaunchShape shape,
                  cudaStream_t stream, KernelVariant variant = {});
// dst[i] = src[i].
void launch_copy(const std::uint32_t* src, std::uint32_t* dst, std::size_t n, LaunchShape shape,
                 cudaStream_t stream, KernelVariant variant = {});
// a[i] = b[i] + s * c[i].
void launch_triad(float* a, const float* b, const float* c, float s, std::size_t n,
                  LaunchShape shape, cudaStream_t stream);
// out[k] = src[indices[k]] for k < count (indices and out in device memory): samples a large
// buffer for a host-side check without copying it back.
void gather_u32(const std::uint32_t* src, const std::uint64_t* indices, std::size_t count,
                std::uint32_t* out, cudaStream_t stream);

// Checksum (sum mod 2^32) of n device elements, computed with the read kernel; synchronizes
// `stream`. Used to check write/copy/memcpy results and host-to-device transfers in full.
std::uint32_t device_checksum_u32(const std::uint32_t* src, std::size_t n, cudaStream_t stream);

// --- memcpy helpers ------------------------------------------------------------------------
// Enqueues `count` cudaMemcpyAsync(dst, src, bytes, kind) on `stream`.
void memcpy_repeated(void* dst, const void* src, std::size_t bytes, int count, cudaMemcpyKind kind,
                     cudaStream_t stream);

// One bidirectional round: `count` host-to-device copies on `h2d_stream` running concurrently
// with `count` device-to-host copies on `d2h_stream`. Both streams wait for work enqueued
// before on `h2d_stream`, and `h2d_stream` waits for the D2H copies at the end, so events
// recorded on `h2d_stream` around this call time both directions together.
void memcpy_bidirectional(void* dev_dst, const void* host_src, void* host_dst, const void* dev_src,
                          std::size_t bytes, int count, cudaStream_t h2d_stream,
                          cudaStream_t d2h_stream);

}  // namespace gb::gpu
