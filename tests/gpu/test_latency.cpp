// tests/gpu/test_latency.cpp: the empty-kernel launchers run, and a stream capture records
// exactly the kernels launched into it and leaves the stream usable.
#include <gtest/gtest.h>

#include "gpu/cuda_raii.hpp"
#include "gpu/latency.hpp"

namespace gb::gpu {
namespace {

bool has_gpu() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

#define REQUIRE_GPU() \
  if (!has_gpu()) GTEST_SKIP() << "no CUDA device"

TEST(Latency, EmptyKernelsLaunchAndComplete) {
  REQUIRE_GPU();
  const Stream s = Stream::create();
  launch_empty_kernel(s.get());
  launch_empty_kernels(100, s.get());
  s.synchronize();
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST(Latency, CaptureRecordsOneNodePerKernel) {
  REQUIRE_GPU();
  const Stream s = Stream::create();
  for (const int count : {0, 1, 1000}) {
    const CudaGraph graph = capture_empty_kernels(count, s.get());
    EXPECT_EQ(graph_node_count(graph), static_cast<std::size_t>(count));
  }
}

TEST(Latency, CapturedGraphReplaysAndTheStreamIsNoLongerCapturing) {
  REQUIRE_GPU();
  const Stream s = Stream::create();
  const CudaGraph graph = capture_empty_kernels(50, s.get());
  cudaStreamCaptureStatus status{};
  ASSERT_EQ(cudaStreamIsCapturing(s.get(), &status), cudaSuccess);
  EXPECT_EQ(status, cudaStreamCaptureStatusNone);
  const CudaGraphExec exec = graph.instantiate();
  for (int i = 0; i < 3; ++i) ASSERT_EQ(cudaGraphLaunch(exec.get(), s.get()), cudaSuccess);
  s.synchronize();
  launch_empty_kernel(s.get());  // ordinary launches still work on the stream
  s.synchronize();
}

}  // namespace
}  // namespace gb::gpu
