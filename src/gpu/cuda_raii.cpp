// gpu/cuda_raii.cpp: see cuda_raii.hpp.
#include "gpu/cuda_raii.hpp"

namespace gb::gpu {

Stream Stream::create() {
  cudaStream_t s{};
  GB_CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return Stream(s);
}

Event Event::create(unsigned flags) {
  cudaEvent_t e{};
  GB_CHECK_CUDA(cudaEventCreateWithFlags(&e, flags));
  return Event(e);
}

float Event::elapsed_ms(const Event& start, const Event& stop) {
  float ms = 0;
  GB_CHECK_CUDA(cudaEventElapsedTime(&ms, start.get(), stop.get()));
  return ms;
}

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  if (bytes > 0) GB_CHECK_CUDA(cudaMalloc(&ptr_, bytes));
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) GB_CHECK_CUDA_NOTHROW(cudaFree(ptr_));
    ptr_ = std::exchange(o.ptr_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) GB_CHECK_CUDA_NOTHROW(cudaFree(ptr_));
}

PinnedBuffer::PinnedBuffer(std::size_t bytes, unsigned flags) : bytes_(bytes) {
  if (bytes > 0) GB_CHECK_CUDA(cudaHostAlloc(&ptr_, bytes, flags));
}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) GB_CHECK_CUDA_NOTHROW(cudaFreeHost(ptr_));
    ptr_ = std::exchange(o.ptr_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

PinnedBuffer::~PinnedBuffer() {
  if (ptr_) GB_CHECK_CUDA_NOTHROW(cudaFreeHost(ptr_));
}

CublasLtHandle CublasLtHandle::create() {
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
