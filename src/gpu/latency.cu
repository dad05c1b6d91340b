// gpu/latency.cu: the empty kernel and its launchers (see latency.hpp).
#include "gpu/latency.hpp"

namespace gb::gpu {

namespace {
__global__ void empty_kernel() {}
}  // namespace

void launch_empty_kernel(cudaStream_t stream) {
  empty_kernel<<<1, 1, 0, stream>>>();
  GB_CHECK_LAUNCH();
}

void launch_empty_kernels(int count, cudaStream_t stream) {
  for (int i = 0; i < count; ++i) empty_kernel<<<1, 1, 0, stream>>>();
  GB_CHECK_LAUNCH();
}

CudaGraph capture_empty_kernels(int count, cudaStream_t stream) {
  // Thread-local capture mode: other threads (the telemetry sampler) may call CUDA meanwhile.
  GB_CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < count; ++i) empty_kernel<<<1, 1, 0, stream>>>();
  // A failed launch invalidates the capture; EndCapture reports it, after ending the capture so
  // the stream is usable again.
  const cudaError_t launch_status = cudaGetLastError();
  cudaGraph_t graph{};
  const cudaError_t end_status = cudaStreamEndCapture(stream, &graph);
  CudaGraph owned(graph);
  GB_CHECK_CUDA(launch_status);
  GB_CHECK_CUDA(end_status);
  return owned;
}

std::size_t graph_node_count(const CudaGraph& graph) {
  std::size_t count = 0;
  GB_CHECK_CUDA(cudaGraphGetNodes(graph.get(), nullptr, &count));
  return count;
}

}  // namespace gb::gpu
