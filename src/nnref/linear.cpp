// nnref/linear.cpp: the three GEMMs of a linear layer as plain loops with double sums.
#include "nnref/linear.hpp"

#include <algorithm>

namespace gb::nnref {

Tensor linear_forward(const Tensor& x, const std::vector<float>& weight,
                      const std::vector<float>& bias, int out_features) {
  const char* where = "linear_forward";
  const std::size_t in = x.features(), out = static_cast<std::size_t>(out_features);
  require(out_features >= 1, where, "out_features must be >= 1");
  require(weight.size() == out * in, where,
          "weight has " + std::to_string(weight.size()) + " entries, expected " +
              std::to_string(out) + "x" + std::to_string(in));
  require(bias.size() == out, where, "bias size != out_features");
  Tensor y(x.n, out_features);
  for (int n = 0; n < x.n; ++n) {
    const float* xr = &x.v[static_cast<std::size_t>(n) * in];
    for (std::size_t o = 0; o < out; ++o) {
      const float* wr = &weight[o * in];
      double sum = bias[o];
      for (std::size_t i = 0; i < in; ++i) sum += static_cast<double>(wr[i]) * xr[i];
      y.v[static_cast<std::size_t>(n) * out + o] = static_cast<float>(sum);
    }
  }
  return y;
}

void linear_backward(const Tensor& x, const Tensor& dy, const std::vector<float>& weight,
                     Tensor& dx, std::vector<float>& dweight, std::vector<float>& dbias) {
  const char* where = "linear_backward";
  const std::size_t in = x.features(), out = dy.features();
  require(dy.n == x.n, where, "dy " + shape_string(dy) + " vs x " + shape_string(x));
  require(weight.size() == out * in, where, "weight size != out x in");
  const std::size_t N = static_cast<std::size_t>(x.n);
  // dx = dy W: [N, out] x [out, in]
  dx = Tensor(x.n, x.c, x.h, x.w);
  std::vector<double> acc(in);
  for (std::size_t n = 0; n < N; ++n) {
    std::fill(acc.begin(), acc.end(), 0.0);
    for (std::size_t o = 0; o < out; ++o) {
      const double g = dy.v[n * out + o];
      const float* wr = &weight[o * in];
      for (std::size_t i = 0; i < in; ++i) acc[i] += g * wr[i];
    }
    for (std::size_t i = 0; i < in; ++i) dx.v[n * in + i] = static_cast<float>(acc[i]);
  }
  // dW = dy^T x: [out, N] x [N, in];  db = sum over the batch of dy
  dweight.assign(out * in, 0.0f);
  dbias.assign(out, 0.0f);
  for (std::size_t o = 0; o < out; ++o) {
    std::fill(acc.begin(), acc.end(), 0.0);
    double bsum = 0.0;
    for (std::size_t n = 0; n < N; ++n) {
      const double g = dy.v[n * out + o];
      bsum += g;
      const float* xr = &x.v[n * in];
      for (std::size_t i = 0; i < in; ++i) acc[i] += g * xr[i];
    }
    for (std::size_t i = 0; i < in; ++i) dweight[o * in + i] = static_cast<float>(acc[i]);
    dbias[o] = static_cast<float>(bsum);
  }
}

}  // namespace gb::nnref
