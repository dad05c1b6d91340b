// gpu/collective_check.hpp: the kernels that fill a rank's NCCL input with collective_input and
// check a rank's output against collective_expected on the GPU (gpu/collective_data.hpp), so a
// 1 GiB result is checked without copying it back. Kernels in collective_check.cu.
// Napkin math: the check reads 4 bytes and hashes `ranks` values per element: 1 GiB with 8
// ranks is ~0.3 ms of HBM time and a few ms of integer work on an H200.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "gpu/collective_data.hpp"

namespace gb::gpu {

// dst[i] = collective_input(rank, i) for i in [0, n), asynchronously on `stream`.
void fill_collective_input(float* dst, std::size_t n, int rank, cudaStream_t stream);

// Checks rank `rank`'s output `out` (collective_output_elements(op, ranks, count) elements) on
// the GPU and waits for the answer: "" when every element is what the collective must give,
// else the message of describe_collective_mismatch. Synchronizes `stream`.
std::string check_collective_on_gpu(const float* out, CollectiveOp op, int rank, int ranks,
                                    std::uint64_t count, cudaStream_t stream);

}  // namespace gb::gpu
