// nnref/conv.hpp: 2-D convolution (cross-correlation, as cuDNN and PyTorch compute it) with
// stride, zero padding, dilation and groups, forward and both backward passes.
// Layouts: x [N,C,H,W], w [K, C/groups, R, S], y [N,K,P,Q]; output channel k belongs to group
// k / (K/groups) and reads input channels g*(C/groups) .. (g+1)*(C/groups)-1.
// Sums are accumulated in double, so these are more accurate than any FP32 GPU result.
#pragma once
#include "nnref/tensor.hpp"

namespace gb::nnref {

struct ConvParams {
  int stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dil_h = 1, dil_w = 1, groups = 1;
};

// floor((in + 2*pad - dil*(kernel-1) - 1) / stride) + 1; throws when that is < 1.
int conv_out_size(int in, int kernel, int stride, int pad, int dil);

Tensor conv2d_forward(const Tensor& x, const Tensor& w, const ConvParams& p);
// dx [N,C,in_h,in_w] from dy [N,K,P,Q].
Tensor conv2d_backward_data(const Tensor& dy, const Tensor& w, const ConvParams& p, int in_h,
                            int in_w);
// dw [K, C/groups, kernel_h, kernel_w]; K is dy.c.
Tensor conv2d_backward_filter(const Tensor& x, const Tensor& dy, const ConvParams& p, int kernel_h,
                              int kernel_w);

}  // namespace gb::nnref
