// tests/gpu/cuda_activity_job.cu: a small CUDA program with known activity, watched by
// test_cuda_activity.cpp through the injection library. Each of STEPS steps:
//   - copies 8 MiB host to GPU from pageable memory and 8 MiB from pinned memory,
//   - runs 10 "busy" kernels (~100 µs each) and 20 tiny ones (an empty body: < 10 µs),
//   - copies 4 bytes back into pageable memory and synchronizes the stream (a .item()).
// Usage: cuda_activity_job STEPS [EXIT_CODE] [KILL_AT_STEP]
//   EXIT_CODE: the code to exit with at the end (default 0);
//   KILL_AT_STEP: raise SIGKILL after that step (the watcher must cope with a dead producer).
// Environment:
//   GB_JOB_FORKS=N: fork N workers before touching CUDA; each does the same steps in its own
//     CUDA context (a DataLoader whose workers use the GPU); the job waits for them;
//   GB_JOB_STREAMS=N: the busy kernels of a step go round N streams, running side by side.
#include <cuda_runtime.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

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

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 100;
  const int exit_code = argc > 2 ? std::atoi(argv[2]) : 0;
  const int kill_at = argc > 3 ? std::atoi(argv[3]) : -1;
  const int streams = env_int("GB_JOB_STREAMS", 1) > 1 ? env_int("GB_JOB_STREAMS", 1) : 1;
  std::vector<pid_t> workers;
  bool worker = false;
  for (int f = 0; f < env_int("GB_JOB_FORKS", 0); ++f) {
    const pid_t p = fork();
    if (p < 0) return 2;
    if (p == 0) {
      worker = true;
      workers.clear();
      break;
    }
    workers.push_back(p);
  }
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
  // Streams 1.. take turns with s for the busy kernels; s waits for them before its copy back.
  std::vector<cudaStream_t> side(static_cast<std::size_t>(streams - 1));
  std::vector<cudaEvent_t> side_done(side.size());
  for (std::size_t k = 0; k < side.size(); ++k) {
    CHECK(cudaStreamCreateWithFlags(&side[k], cudaStreamNonBlocking));
    CHECK(cudaEventCreateWithFlags(&side_done[k], cudaEventDisableTiming));
  }
  float result = 0;
  for (int step = 0; step < steps; ++step) {
    nvtxRangePushA("step");  // one NVTX range per step, "copies" nested inside it
    nvtxRangePushA("copies");
    CHECK(cudaMemcpyAsync(d_copy, pageable.data(), kCopyBytes, cudaMemcpyHostToDevice, s));
    CHECK(cudaMemcpyAsync(d_copy, pinned, kCopyBytes, cudaMemcpyHostToDevice, s));
    nvtxRangePop();
    for (int k = 0; k < 10; ++k) {
      const int on = k % streams;
      busy_kernel<<<kN / 256, 256, 0, on ? side[on - 1] : s>>>(d_x, kN, 200);
    }
    for (std::size_t k = 0; k < side.size(); ++k) {
      CHECK(cudaEventRecord(side_done[k], side[k]));
      CHECK(cudaStreamWaitEvent(s, side_done[k], 0));
    }
    for (int k = 0; k < 20; ++k) tiny_kernel<<<1, 32, 0, s>>>(d_x);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpyAsync(&result, d_x, sizeof(float), cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamSynchronize(s));
    nvtxRangePop();
    if (step == kill_at) raise(SIGKILL);
  }
  std::printf("steps %d result %g\n", steps, result);
  for (std::size_t k = 0; k < side.size(); ++k) {
    CHECK(cudaEventDestroy(side_done[k]));
    CHECK(cudaStreamDestroy(side[k]));
  }
  CHECK(cudaStreamDestroy(s));
  CHECK(cudaFree(d_copy));
  CHECK(cudaFree(d_x));
  CHECK(cudaFreeHost(pinned));
  if (worker) return 0;
  for (const pid_t p : workers) {
    int status = 0;
    if (waitpid(p, &status, 0) != p || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return 2;
  }
  return exit_code;
}
