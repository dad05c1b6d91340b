// nnref/linear.hpp: fully connected layer y = x W^T + b.
// x [N, in] where a 4-D x is flattened per sample as c*h*w (NCHW order: the order PyTorch's
// flatten uses; an NHWC engine must transpose before comparing). weight [out, in] row-major,
// bias [out]; y is [N, out, 1, 1].
#pragma once
#include <vector>

#include "nnref/tensor.hpp"

namespace gb::nnref {

Tensor linear_forward(const Tensor& x, const std::vector<float>& weight,
                      const std::vector<float>& bias, int out_features);
// dy [N, out]; dx takes x's shape (4-D stays 4-D); dweight [out*in], dbias [out] are resized.
void linear_backward(const Tensor& x, const Tensor& dy, const std::vector<float>& weight,
                     Tensor& dx, std::vector<float>& dweight, std::vector<float>& dbias);

}  // namespace gb::nnref
