// tests/gpu/cuda_activity_job.cu: a small CUDA program with known activity, watched by
// test_cuda_activity.cpp through the injection library. Each of STEPS steps:
//   - copies 8 MiB host to GPU from pageable memory and 8 MiB from pinned memory,
//   - runs 10 "busy" kernels (~100 µs each) and 20 tiny ones (an empty body: < 10 µs),
//   - copies 4 bytes back into pageable memory and synchronizes the stream (a .item()).
// Usage: cuda_activity_job STEPS [EXIT_CODE] [KILL_AT_STEP]
//   EXIT_CODE: the code to exit with at the end (default 0);
//   KILL_AT_STEP: raise SIGKILL after that step (the watcher must cope with a dead producer).
#include <cuda_runtime.h>
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <nvtx3/nvToolsExt.h>

namespace {

__global__ void busy_kernel(float* x, int n, int rounds) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  for (int r = 0; r < rounds; ++r) v = v * 0.999f + 0.001f;
  x[i] = v;
}

__global__ void tiny_kernel(float* x) {
  if (threadIdx.x == 0 && blockIdx.x == 0) x[0] += 1.0f;
}

#define CHECK(call)                                                                  \
  do {                                                                               \
    const cudaError_t e = (call);                                                    \
    if (e != cudaSuccess) {                                                          \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call,              \
                   cudaGetErrorString(e));                                           \
      return 2;                                                                      \
    }                                                                                \
  } while (0)

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 100;
  const int exit_code = argc > 2 ? std::atoi(argv[2]) : 0;
  const int kill_at = argc > 3 ? std::atoi(argv[3]) : -1;
  constexpr std::size_t kCopyBytes = 8u << 20;
  constexpr int kN = 1 << 20;

  std::vector<char> pageable(kCopyBytes, 1);
  char* pinned = nullptr;
  CHECK(cudaMallocHost(&pinned, kCopyBytes));
  std::memset(pinned, 2, kCopyBytes);
  char* d_copy = nullptr;
  float* d_x = nullptr;
  CHECK(cudaMalloc(&d_copy, kCopyBytes));
  CHECK(cudaMalloc(&d_x, kN * sizeof(float)));
  CHECK(cudaMemset(d_x, 0, kN * sizeof(float)));
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  float result = 0;
  for (int step = 0; step < steps; ++step) {
    nvtxRangePushA("step");  // one NVTX range per step, "copies" nested inside it
    nvtxRangePushA("copies");
    CHECK(cudaMemcpyAsync(d_copy, pageable.data(), kCopyBytes, cudaMemcpyHostToDevice, s));
    CHECK(cudaMemcpyAsync(d_copy, pinned, kCopyBytes, cudaMemcpyHostToDevice, s));
    nvtxRangePop();
    for (int k = 0; k < 10; ++k) busy_kernel<<<kN / 256, 256, 0, s>>>(d_x, kN, 200);
    for (int k = 0; k < 20; ++k) tiny_kernel<<<1, 32, 0, s>>>(d_x);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpyAsync(&result, d_x, sizeof(float), cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamSynchronize(s));
    nvtxRangePop();
    if (step == kill_at) raise(SIGKILL);
  }
  std::printf("steps %d result %g\n", steps, result);
  CHECK(cudaStreamDestroy(s));
  CHECK(cudaFree(d_copy));
  CHECK(cudaFree(d_x));
  CHECK(cudaFreeHost(pinned));
  return exit_code;
}
