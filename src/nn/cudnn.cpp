// nn/cudnn.cpp: see cudnn.hpp.
#include "nn/cudnn_desc.hpp"

namespace gb::nn {

const char* cudnn_status_name(cudnnStatus_t s) { return cudnnGetErrorString(s); }

CudnnHandle CudnnHandle::create() {
  cudnnHandle_t h{};
  GB_CHECK_CUDNN(cudnnCreate(&h));
  return CudnnHandle(h);
}

cudnnDataType_t cudnn_dtype(ElementType t) {
  switch (t) {
    case ElementType::f32: return CUDNN_DATA_FLOAT;
    case ElementType::f16: return CUDNN_DATA_HALF;
    case ElementType::bf16: return CUDNN_DATA_BFLOAT16;
    default: unsupported_element_type(t, "nn::cudnn_dtype");
  }
}

TensorDesc TensorDesc::create(const Shape& s, ElementType t, bool nhwc) {
  cudnnTensorDescriptor_t d{};
  GB_CHECK_CUDNN(cudnnCreateTensorDescriptor(&d));
  TensorDesc owner(d);
  GB_CHECK_CUDNN(cudnnSetTensor4dDescriptor(d, nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW,
                                            cudnn_dtype(t), s.n, s.c, s.h, s.w));
  return owner;
}

TensorDesc TensorDesc::per_channel(int channels) {
  return create(Shape{1, channels, 1, 1}, ElementType::f32, false);
}

FilterDesc FilterDesc::create(int k, int c_per_group, int r, int s, ElementType t, bool nhwc) {
  cudnnFilterDescriptor_t d{};
  GB_CHECK_CUDNN(cudnnCreateFilterDescriptor(&d));
  FilterDesc owner(d);
  GB_CHECK_CUDNN(cudnnSetFilter4dDescriptor(d, cudnn_dtype(t),
                                            nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, k,
                                            c_per_group, r, s));
  return owner;
}

ActivationDesc ActivationDesc::relu() {
  cudnnActivationDescriptor_t d{};
  GB_CHECK_CUDNN(cudnnCreateActivationDescriptor(&d));
  ActivationDesc owner(d);
  GB_CHECK_CUDNN(cudnnSetActivationDescriptor(d, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN,
                                              0.0));
  return owner;
}

}  // namespace gb::nn
