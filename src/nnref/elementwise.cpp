// nnref/elementwise.cpp: ReLU, ReLU6 and add.
#include "nnref/elementwise.hpp"

#include <cmath>

namespace gb::nnref {
namespace {

Tensor like(const Tensor& t) {
  return Tensor(t.n, t.c, t.h, t.w);
}

void check_same(const Tensor& a, const Tensor& b, const char* where) {
  require(a.same_shape(b), where, shape_string(a) + " vs " + shape_string(b));
}

}  // namespace

Tensor relu_forward(const Tensor& x) {
  Tensor y = like(x);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float v = x.v[i];
    y.v[i] = (std::isnan(v) || v > 0.0f) ? v : 0.0f;
  }
  return y;
}

Tensor relu_backward(const Tensor& y, const Tensor& dy) {
  check_same(y, dy, "relu_backward");
  Tensor dx = like(y);
  for (std::size_t i = 0; i < y.size(); ++i) dx.v[i] = y.v[i] > 0.0f ? dy.v[i] : 0.0f;
  return dx;
}

Tensor relu6_forward(const Tensor& x) {
  Tensor y = like(x);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float v = x.v[i];
    y.v[i] = std::isnan(v) ? v : (v < 0.0f ? 0.0f : (v > 6.0f ? 6.0f : v));
  }
  return y;
}

Tensor relu6_backward(const Tensor& y, const Tensor& dy) {
  check_same(y, dy, "relu6_backward");
  Tensor dx = like(y);
  for (std::size_t i = 0; i < y.size(); ++i) {
    dx.v[i] = (y.v[i] > 0.0f && y.v[i] < 6.0f) ? dy.v[i] : 0.0f;
  }
  return dx;
}

Tensor add(const Tensor& a, const Tensor& b) {
  check_same(a, b, "add");
  Tensor y = like(a);
  for (std::size_t i = 0; i < a.size(); ++i) y.v[i] = a.v[i] + b.v[i];
  return y;
}

}  // namespace gb::nnref
