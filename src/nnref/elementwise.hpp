// nnref/elementwise.hpp: activations and the residual add. The backward passes take the forward
// OUTPUT y (what cuDNN's activation backward and an in-place ReLU keep), not the input.
#pragma once
#include "nnref/tensor.hpp"

namespace gb::nnref {

Tensor relu_forward(const Tensor& x);                      // max(x, 0); NaN stays NaN
Tensor relu_backward(const Tensor& y, const Tensor& dy);   // dy where y > 0, else 0
Tensor relu6_forward(const Tensor& x);                     // min(max(x, 0), 6); NaN stays NaN
Tensor relu6_backward(const Tensor& y, const Tensor& dy);  // dy where 0 < y < 6, else 0
Tensor add(const Tensor& a, const Tensor& b);              // same shapes, elementwise

}  // namespace gb::nnref
