// nn/cudnn_desc.hpp: move-only owners of cuDNN's legacy descriptors (tensor, filter,
// convolution, activation, pooling).
//
// cuDNN 9 marks the legacy API (these descriptors, cudnnConvolution*, cudnnBatchNormalization*,
// cudnnPooling*) deprecated; the files that include this header (conv.cpp, batchnorm.cpp,
// pool.cpp, cudnn.cpp) are compiled with -Wno-deprecated-declarations (src/CMakeLists.txt, gb_nn
// block) and nothing else is silenced.
#pragma once
#include "nn/cudnn.hpp"

namespace gb::nn {

class TensorDesc : public gpu::UniqueHandle<cudnnTensorDescriptor_t, TensorDesc> {
 public:
  static TensorDesc create(const Shape& s, ElementType t, bool nhwc);
  // The 1xCx1x1 FP32 descriptor of batch-norm scale, bias, mean and variance.
  static TensorDesc per_channel(int channels);
  static void destroy(cudnnTensorDescriptor_t d) noexcept {
    GB_CHECK_CUDNN_NOTHROW(cudnnDestroyTensorDescriptor(d));
  }
  using UniqueHandle::UniqueHandle;
};

class FilterDesc : public gpu::UniqueHandle<cudnnFilterDescriptor_t, FilterDesc> {
 public:
  // K x C/groups x R x S, stored KCRS (nhwc = false) or KRSC (nhwc = true).
  static FilterDesc create(int k, int c_per_group, int r, int s, ElementType t, bool nhwc);
  static void destroy(cudnnFilterDescriptor_t d) noexcept {
    GB_CHECK_CUDNN_NOTHROW(cudnnDestroyFilterDescriptor(d));
  }
  using UniqueHandle::UniqueHandle;
};

class ConvDesc : public gpu::UniqueHandle<cudnnConvolutionDescriptor_t, ConvDesc> {
 public:
  static void destroy(cudnnConvolutionDescriptor_t d) noexcept {
    GB_CHECK_CUDNN_NOTHROW(cudnnDestroyConvolutionDescriptor(d));
  }
  using UniqueHandle::UniqueHandle;
};

class ActivationDesc : public gpu::UniqueHandle<cudnnActivationDescriptor_t, ActivationDesc> {
 public:
  static ActivationDesc relu();
  static void destroy(cudnnActivationDescriptor_t d) noexcept {
    GB_CHECK_CUDNN_NOTHROW(cudnnDestroyActivationDescriptor(d));
  }
  using UniqueHandle::UniqueHandle;
};

class PoolDesc : public gpu::UniqueHandle<cudnnPoolingDescriptor_t, PoolDesc> {
 public:
  static void destroy(cudnnPoolingDescriptor_t d) noexcept {
    GB_CHECK_CUDNN_NOTHROW(cudnnDestroyPoolingDescriptor(d));
  }
  using UniqueHandle::UniqueHandle;
};

}  // namespace gb::nn
