// gpu/collective_check.cu: the fill and check kernels of the NCCL collectives (see
// collective_check.hpp).
#include <algorithm>

#include "gpu/check.hpp"
#include "gpu/collective_check.hpp"
#include "gpu/cuda_raii.hpp"

namespace gb::gpu {

namespace {

constexpr int kThreads = 256;
constexpr std::size_t kMaxBlocks = 8192;  // larger buffers loop (grid stride)

unsigned blocks_for(std::size_t n) {
  return static_cast<unsigned>(std::max<std::size_t>(1, std::min(kMaxBlocks, (n + kThreads - 1) / kThreads)));
}

__global__ void fill_input_kernel(float* __restrict__ dst, std::size_t n, int rank) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride)
    dst[i] = collective_input(rank, i);
}

// result[0]: elements that differ; result[1]: the first of them (starts at ~0).
__global__ void check_kernel(const float* __restrict__ out, std::size_t n, CollectiveOp op,
                             int rank, int ranks, std::uint64_t count,
                             unsigned long long* result) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  unsigned long long bad = 0, first = ~0ull;
  for (std::size_t j = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < n;
       j += stride) {
    if (out[j] != collective_expected(op, rank, ranks, count, j)) {
      if (bad++ == 0) first = j;
    }
  }
  if (bad) {
    atomicAdd(&result[0], bad);
    atomicMin(&result[1], first);
  }
}

}  // namespace

void fill_collective_input(float* dst, std::size_t n, int rank, cudaStream_t stream) {
  if (n == 0) return;
  fill_input_kernel<<<blocks_for(n), kThreads, 0, stream>>>(dst, n, rank);
  GB_CHECK_LAUNCH();
}

std::string check_collective_on_gpu(const float* out, CollectiveOp op, int rank, int ranks,
                                    std::uint64_t count, cudaStream_t stream) {
  const std::uint64_t n = collective_output_elements(op, ranks, count);
  DeviceBuffer result(2 * sizeof(unsigned long long));
  const unsigned long long init[2] = {0, ~0ull};
  GB_CHECK_CUDA(cudaMemcpyAsync(result.data(), init, sizeof(init), cudaMemcpyHostToDevice, stream));
  auto* r = static_cast<unsigned long long*>(result.data());
  check_kernel<<<blocks_for(n), kThreads, 0, stream>>>(out, n, op, rank, ranks, count, r);
  GB_CHECK_LAUNCH();
  unsigned long long answer[2] = {0, 0};
  GB_CHECK_CUDA(cudaMemcpyAsync(answer, r, sizeof(answer), cudaMemcpyDeviceToHost, stream));
  GB_CHECK_CUDA(cudaStreamSynchronize(stream));
  if (answer[0] == 0) return "";
  float got = 0;
  GB_CHECK_CUDA(cudaMemcpy(&got, out + answer[1], sizeof(float), cudaMemcpyDeviceToHost));
  return describe_collective_mismatch(answer[0], n, answer[1], got,
                                      collective_expected(op, rank, ranks, count, answer[1]));
}

}  // namespace gb::gpu
