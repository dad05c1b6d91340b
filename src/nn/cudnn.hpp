// nn/cudnn.hpp: GB_CHECK_CUDNN (built from GB_CHECK_GEN like the CUDA and cuBLAS checks in
// gpu/check.hpp), the cuDNN handle's owner and the mapping of engine types to cuDNN types.
// Nothing deprecated here: the legacy descriptors are in cudnn_desc.hpp.
#pragma once
#include <cudnn.h>

#include "gpu/check.hpp"
#include "gpu/cuda_raii.hpp"
#include "nn/tensor.hpp"

namespace gb::nn {

const char* cudnn_status_name(cudnnStatus_t s);

}  // namespace gb::nn

#define GB_CHECK_CUDNN(expr)                                                    \
  GB_CHECK_GEN(expr, CUDNN_STATUS_SUCCESS, "cuDNN", ::gb::nn::cudnn_status_name, \
               ::gb::gpu::throw_cuda_failure)
#define GB_CHECK_CUDNN_NOTHROW(expr)                                            \
  GB_CHECK_GEN(expr, CUDNN_STATUS_SUCCESS, "cuDNN", ::gb::nn::cudnn_status_name, \
               ::gb::warn_check_failure)

namespace gb::nn {

class CudnnHandle : public gpu::UniqueHandle<cudnnHandle_t, CudnnHandle> {
 public:
  static CudnnHandle create();
  static void destroy(cudnnHandle_t h) noexcept { GB_CHECK_CUDNN_NOTHROW(cudnnDestroy(h)); }
  using UniqueHandle::UniqueHandle;
};

cudnnDataType_t cudnn_dtype(ElementType t);

}  // namespace gb::nn
