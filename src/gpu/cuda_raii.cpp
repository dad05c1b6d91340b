// gpu/cuda_raii.cpp: see cuda_raii.hpp.
#include "gpu/cuda_raii.hpp"

#include "core/cancel_wait.hpp"
#include "core/error.hpp"
#include "gpu/cublaslt_lazy.hpp"

namespace gb::gpu {

Stream Stream::create() {
  cudaStream_t s{};
  GB_CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return Stream(s);
}

Stream Stream::create_high_priority() {
  int least = 0, greatest = 0;
  GB_CHECK_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  cudaStream_t s{};
  GB_CHECK_CUDA(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, greatest));
  return Stream(s);
}

Event Event::create(unsigned flags) {
  cudaEvent_t e{};
  GB_CHECK_CUDA(cudaEventCreateWithFlags(&e, flags));
  return Event(e);
}

bool Event::done() const {
  const cudaError_t rc = cudaEventQuery(get());
  if (rc == cudaErrorNotReady) return false;
  GB_CHECK_CUDA(rc);
  return true;
}

void Event::wait_cancellable() const {
  gb::wait_cancellable([this] { return done(); });
}

float Event::elapsed_ms(const Event& start, const Event& stop) {
  float ms = 0;
  GB_CHECK_CUDA(cudaEventElapsedTime(&ms, start.get(), stop.get()));
  return ms;
}

void* DeviceAllocator::allocate(std::size_t bytes, unsigned /*flags*/) {
  void* p = nullptr;
  GB_CHECK_CUDA(cudaMalloc(&p, bytes));
  return p;
}

void* PinnedAllocator::allocate(std::size_t bytes, unsigned flags) {
  void* p = nullptr;
  GB_CHECK_CUDA(cudaHostAlloc(&p, bytes, flags));
  return p;
}

CublasLtHandle CublasLtHandle::create() {
  // cuBLASLt is opened on first use: a machine without it gets the reason, not a bare status.
  if (!cublaslt_available())
    throw Error(ErrorKind::runtime, "cuBLASLt is unavailable: " + cublaslt_load_error());
  cublasLtHandle_t h{};
  GB_CHECK_CUBLAS(cublasLtCreate(&h));
  return CublasLtHandle(h);
}

CudaGraphExec CudaGraph::instantiate() const {
  cudaGraphExec_t exec{};
  GB_CHECK_CUDA(cudaGraphInstantiate(&exec, get(), 0));
  return CudaGraphExec(exec);
}

}  // namespace gb::gpu
