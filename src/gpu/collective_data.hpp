// gpu/collective_data.hpp: what the NCCL collectives are checked with. Rank r's input element
// i is collective_input(r, i), a small integer in [-16, 15] from a hash of (r, i): every rank
// and every element differs, and any sum over ranks is exact in FP32 (|sum| < 2^24 for up to
// half a million ranks), whatever order NCCL adds in. So the expected output of each
// collective is known exactly, per element, on the CPU and in a kernel alike:
//   all-reduce      out[j] = sum over ranks k of input(k, j)                 (count elements)
//   all-gather      out[j] = input(j / count, j % count)                     (ranks x count)
//   reduce-scatter  out[j] on rank r = sum over k of input(k, r*count + j)   (count elements)
// where count is the per-rank element count NCCL is given (its count / sendcount / recvcount).
// Plain C++ (host and device); the kernels are in collective_check.cu.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#if !defined(GB_HOST_DEVICE)
#if defined(__CUDACC__)
#define GB_HOST_DEVICE __host__ __device__
#else
#define GB_HOST_DEVICE
#endif
#endif

namespace gb::gpu {

enum class CollectiveOp { all_reduce = 0, all_gather = 1, reduce_scatter = 2 };

GB_HOST_DEVICE inline float collective_input(int rank, std::uint64_t i) {
  // splitmix64's finaliser over (rank, i): neighbours differ, no period a sweep could hit.
  std::uint64_t z = i * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(rank) * 0xD1B54A32D192ED03ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(static_cast<int>(z >> 59) - 16);
}

// Element j of rank `rank`'s output (see above); `count` is the per-rank element count.
GB_HOST_DEVICE inline float collective_expected(CollectiveOp op, int rank, int ranks,
                                                std::uint64_t count, std::uint64_t j) {
  if (op == CollectiveOp::all_gather)
    return collective_input(static_cast<int>(j / count), j % count);
  const std::uint64_t i = op == CollectiveOp::reduce_scatter
                              ? static_cast<std::uint64_t>(rank) * count + j
                              : j;
  float sum = 0;
  for (int k = 0; k < ranks; ++k) sum += collective_input(k, i);
  return sum;
}

// Elements of each rank's input and output buffer for a per-rank count.
inline std::uint64_t collective_input_elements(CollectiveOp op, int ranks, std::uint64_t count) {
  return op == CollectiveOp::reduce_scatter ? count * static_cast<std::uint64_t>(ranks) : count;
}
inline std::uint64_t collective_output_elements(CollectiveOp op, int ranks, std::uint64_t count) {
  return op == CollectiveOp::all_gather ? count * static_cast<std::uint64_t>(ranks) : count;
}

// The CPU reference: "" when `out` (rank `rank`'s whole output) holds what the collective must
// give, else how many elements differ and the first: "3 of 4096 elements differ; element 17 is
// 5, expected -3". Compares exactly (the values are small integers).
std::string check_collective_output(std::span<const float> out, CollectiveOp op, int rank,
                                    int ranks, std::uint64_t count);

// The same message from a mismatch count and the first differing element (the GPU check's
// answer).
std::string describe_collective_mismatch(std::uint64_t mismatches, std::uint64_t elements,
                                         std::uint64_t first, float got, float expected);

}  // namespace gb::gpu
