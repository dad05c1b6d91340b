// nnref/pool.hpp: max, average and global-average pooling, PyTorch semantics (ceil_mode false,
// dilation 1): output = floor((in + 2*pad - kernel) / stride) + 1, padding at most kernel/2.
// Max pooling pads with -inf (a window never takes a padded value) and its backward sends each
// window's gradient to the FIRST maximum in row-major order (smallest h, then smallest w);
// gradients of overlapping windows add up. Average pooling counts the padded zeros
// (count_include_pad = true, cuDNN's CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING).
#pragma once
#include "nnref/tensor.hpp"

namespace gb::nnref {

struct PoolParams {
  int kernel_h, kernel_w, stride_h, stride_w, pad_h = 0, pad_w = 0;
};

int pool_out_size(int in, int kernel, int stride, int pad);

Tensor maxpool2d_forward(const Tensor& x, const PoolParams& p);
Tensor maxpool2d_backward(const Tensor& x, const Tensor& dy, const PoolParams& p);
Tensor avgpool2d_forward(const Tensor& x, const PoolParams& p);
Tensor avgpool2d_backward(const Tensor& dy, const PoolParams& p, int in_h, int in_w);
Tensor global_avgpool_forward(const Tensor& x);                        // [N,C,H,W] -> [N,C,1,1]
Tensor global_avgpool_backward(const Tensor& dy, int in_h, int in_w);  // dy [N,C,1,1]

}  // namespace gb::nnref
