// nnref/batchnorm.cpp: batch norm with per-channel sums in double (two passes: mean, then the
// centred second moment, so large means do not cancel the variance away).
#include "nnref/batchnorm.hpp"

#include <cmath>

namespace gb::nnref {
namespace {

void check_channel_vector(const std::vector<float>& v, int channels, const char* where,
                          const char* name) {
  require(v.size() == static_cast<std::size_t>(channels), where,
          std::string(name) + " has " + std::to_string(v.size()) + " entries, expected " +
              std::to_string(channels));
}

// Calls f(value_ref_index) over every element of channel c: offsets of the N planes.
template <typename F>
void for_channel(const Tensor& t, int c, F&& f) {
  const std::size_t plane = t.plane();
  for (int n = 0; n < t.n; ++n) {
    const std::size_t base = t.index(n, c, 0, 0);
    for (std::size_t i = 0; i < plane; ++i) f(base + i);
  }
}

}  // namespace

Tensor batchnorm_forward_train(const Tensor& x, const std::vector<float>& gamma,
                               const std::vector<float>& beta, std::vector<float>& running_mean,
                               std::vector<float>& running_var, float momentum, float eps,
                               BatchNormSaved& saved) {
  const char* where = "batchnorm_forward_train";
  const int C = x.c;
  check_channel_vector(gamma, C, where, "gamma");
  check_channel_vector(beta, C, where, "beta");
  check_channel_vector(running_mean, C, where, "running_mean");
  check_channel_vector(running_var, C, where, "running_var");
  const std::size_t M = static_cast<std::size_t>(x.n) * x.plane();
  require(M > 1, where, "expected more than 1 value per channel when training");
  saved.mean.assign(C, 0.0f);
  saved.inv_std.assign(C, 0.0f);
  Tensor y(x.n, x.c, x.h, x.w);
  for (int c = 0; c < C; ++c) {
    double sum = 0.0;
    for_channel(x, c, [&](std::size_t i) { sum += x.v[i]; });
    const double mean = sum / static_cast<double>(M);
    double sq = 0.0;
    for_channel(x, c, [&](std::size_t i) {
      const double d = x.v[i] - mean;
      sq += d * d;
    });
    const double var = sq / static_cast<double>(M);
    const double inv_std = 1.0 / std::sqrt(var + static_cast<double>(eps));
    const double scale = gamma[c] * inv_std;
    for_channel(x, c, [&](std::size_t i) {
      y.v[i] = static_cast<float>((x.v[i] - mean) * scale + beta[c]);
    });
    saved.mean[c] = static_cast<float>(mean);
    saved.inv_std[c] = static_cast<float>(inv_std);
    const double unbiased = sq / static_cast<double>(M - 1);
    running_mean[c] = static_cast<float>((1.0 - momentum) * running_mean[c] + momentum * mean);
    running_var[c] = static_cast<float>((1.0 - momentum) * running_var[c] + momentum * unbiased);
  }
  return y;
}

Tensor batchnorm_forward_inference(const Tensor& x, const std::vector<float>& gamma,
                                   const std::vector<float>& beta,
                                   const std::vector<float>& running_mean,
                                   const std::vector<float>& running_var, float eps) {
  const char* where = "batchnorm_forward_inference";
  const int C = x.c;
  check_channel_vector(gamma, C, where, "gamma");
  check_channel_vector(beta, C, where, "beta");
  check_channel_vector(running_mean, C, where, "running_mean");
  check_channel_vector(running_var, C, where, "running_var");
  Tensor y(x.n, x.c, x.h, x.w);
  for (int c = 0; c < C; ++c) {
    const double scale =
        gamma[c] / std::sqrt(static_cast<double>(running_var[c]) + static_cast<double>(eps));
    const double mean = running_mean[c];
    for_channel(x, c, [&](std::size_t i) {
      y.v[i] = static_cast<float>((x.v[i] - mean) * scale + beta[c]);
    });
  }
  return y;
}

void batchnorm_backward(const Tensor& x, const Tensor& dy, const std::vector<float>& gamma,
                        const BatchNormSaved& saved, Tensor& dx, std::vector<float>& dgamma,
                        std::vector<float>& dbeta) {
  const char* where = "batchnorm_backward";
  const int C = x.c;
  require(x.same_shape(dy), where, "dy " + shape_string(dy) + " != x " + shape_string(x));
  check_channel_vector(gamma, C, where, "gamma");
  check_channel_vector(saved.mean, C, where, "saved.mean");
  check_channel_vector(saved.inv_std, C, where, "saved.inv_std");
  const double M = static_cast<double>(x.n) * static_cast<double>(x.plane());
  dx = Tensor(x.n, x.c, x.h, x.w);
  dgamma.assign(C, 0.0f);
  dbeta.assign(C, 0.0f);
  for (int c = 0; c < C; ++c) {
    const double mean = saved.mean[c], inv_std = saved.inv_std[c];
    double sum_dy = 0.0, sum_dy_xhat = 0.0;
    for_channel(x, c, [&](std::size_t i) {
      sum_dy += dy.v[i];
      sum_dy_xhat += dy.v[i] * (x.v[i] - mean) * inv_std;
    });
    // dx = gamma * inv_std / M * (M * dy - sum(dy) - xhat * sum(dy * xhat))
    const double k = gamma[c] * inv_std / M;
    for_channel(x, c, [&](std::size_t i) {
      const double xhat = (x.v[i] - mean) * inv_std;
      dx.v[i] = static_cast<float>(k * (M * dy.v[i] - sum_dy - xhat * sum_dy_xhat));
    });
    dgamma[c] = static_cast<float>(sum_dy_xhat);
    dbeta[c] = static_cast<float>(sum_dy);
  }
}

}  // namespace gb::nnref
