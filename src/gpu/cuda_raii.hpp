// gpu/cuda_raii.hpp: move-only owners for CUDA streams, events, device and pinned host buffers
// and the cuBLASLt handle. Suite code never calls cudaFree/cudaFreeHost itself.
#pragma once
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>

#include "gpu/check.hpp"

namespace gb::gpu {

// Base for a move-only owner of one handle; Derived::destroy(handle) releases it (no-throw).
template <typename Handle, typename Derived>
class UniqueHandle {
 public:
  UniqueHandle() = default;
  explicit UniqueHandle(Handle h) : h_(h) {}
  UniqueHandle(const UniqueHandle&) = delete;
  UniqueHandle& operator=(const UniqueHandle&) = delete;
  UniqueHandle(UniqueHandle&& o) noexcept : h_(std::exchange(o.h_, Handle{})) {}
  UniqueHandle& operator=(UniqueHandle&& o) noexcept {
    if (this != &o) {
      reset();
      h_ = std::exchange(o.h_, Handle{});
    }
    return *this;
  }
  ~UniqueHandle() { reset(); }
  Handle get() const { return h_; }
  explicit operator bool() const { return h_ != Handle{}; }
  void reset() {
    if (h_ != Handle{}) Derived::destroy(std::exchange(h_, Handle{}));
  }

 private:
  Handle h_{};
};

class Stream : public UniqueHandle<cudaStream_t, Stream> {
 public:
  // A non-blocking stream (does not synchronise with the legacy default stream).
  static Stream create();
  // The same at the device's highest priority: its kernels are scheduled before those of
  // streams made by create() when both wait for SMs (the input pipeline's decode beside a step).
  static Stream create_high_priority();
  static void destroy(cudaStream_t s) noexcept { GB_CHECK_CUDA_NOTHROW(cudaStreamDestroy(s)); }
  void synchronize() const { GB_CHECK_CUDA(cudaStreamSynchronize(get())); }
  using UniqueHandle::UniqueHandle;
};

class Event : public UniqueHandle<cudaEvent_t, Event> {
 public:
  static Event create(unsigned flags = cudaEventDefault);
  static void destroy(cudaEvent_t e) noexcept { GB_CHECK_CUDA_NOTHROW(cudaEventDestroy(e)); }
  void record(cudaStream_t s) const { GB_CHECK_CUDA(cudaEventRecord(get(), s)); }
  void synchronize() const { GB_CHECK_CUDA(cudaEventSynchronize(get())); }
  // Whether the work before the record has finished (cudaEventQuery; throws on an error).
  bool done() const;
  // synchronize(), but Ctrl-C ends it (gb::Cancelled): a signal handler cannot wake the
  // driver's wait, so this polls done() with core/cancel_wait's back-off.
  void wait_cancellable() const;
  // Milliseconds between two recorded events.
  static float elapsed_ms(const Event& start, const Event& stop);
  using UniqueHandle::UniqueHandle;
};

// Owner of a block of memory from one CUDA allocator; Allocator supplies allocate(bytes, flags)
// and release(ptr) (no-throw). Typed access through as<T>().
template <typename Allocator>
class MemoryBuffer {
 public:
  MemoryBuffer() = default;
  explicit MemoryBuffer(std::size_t bytes, unsigned flags = 0)
      : ptr_(bytes > 0 ? Allocator::allocate(bytes, flags) : nullptr), bytes_(bytes) {}
  MemoryBuffer(const MemoryBuffer&) = delete;
  MemoryBuffer& operator=(const MemoryBuffer&) = delete;
  MemoryBuffer(MemoryBuffer&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  MemoryBuffer& operator=(MemoryBuffer&& o) noexcept {
    if (this != &o) {
      if (ptr_) Allocator::release(ptr_);
      ptr_ = std::exchange(o.ptr_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  ~MemoryBuffer() {
    if (ptr_) Allocator::release(ptr_);
  }
  void* data() const { return ptr_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  std::size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

struct DeviceAllocator {
  static void* allocate(std::size_t bytes, unsigned flags);  // cudaMalloc; flags unused
  static void release(void* p) noexcept { GB_CHECK_CUDA_NOTHROW(cudaFree(p)); }
};

// Page-locked host memory (cudaHostAlloc with flags, default cudaHostAllocDefault), for
// full-speed DMA over PCIe.
struct PinnedAllocator {
  static void* allocate(std::size_t bytes, unsigned flags);
  static void release(void* p) noexcept { GB_CHECK_CUDA_NOTHROW(cudaFreeHost(p)); }
};

using DeviceBuffer = MemoryBuffer<DeviceAllocator>;
using PinnedBuffer = MemoryBuffer<PinnedAllocator>;

class CublasLtHandle : public UniqueHandle<cublasLtHandle_t, CublasLtHandle> {
 public:
  static CublasLtHandle create();
  static void destroy(cublasLtHandle_t h) noexcept { GB_CHECK_CUBLAS_NOTHROW(cublasLtDestroy(h)); }
  using UniqueHandle::UniqueHandle;
};

class CudaGraphExec : public UniqueHandle<cudaGraphExec_t, CudaGraphExec> {
 public:
  static void destroy(cudaGraphExec_t g) noexcept { GB_CHECK_CUDA_NOTHROW(cudaGraphExecDestroy(g)); }
  using UniqueHandle::UniqueHandle;
};

class CudaGraph : public UniqueHandle<cudaGraph_t, CudaGraph> {
 public:
  static void destroy(cudaGraph_t g) noexcept { GB_CHECK_CUDA_NOTHROW(cudaGraphDestroy(g)); }
  CudaGraphExec instantiate() const;
  using UniqueHandle::UniqueHandle;
};

}  // namespace gb::gpu
