// nnref/gradcheck.hpp: checks an analytic gradient against central finite differences, for the
// reference layers' tests (and any GPU test that wants a second opinion).
//
// The layers compute in FP32, so the step must be large enough that FP32 rounding of the loss
// does not swamp the difference: with |L| ~ 1 and h = 1e-2, rounding noise is ~1e-7 / 1e-2 =
// 1e-5, truncation error is O(h^2). Perturbed values are rounded to float, and the numeric slope
// divides by the step actually taken (float(x+h) - float(x-h)), not by 2h.
// Header-only: it needs nothing but the standard library.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "nnref/tensor.hpp"

namespace gb::nnref {

struct GradCheckOptions {
  double step = 1e-2;             // central-difference half-step h, in parameter units
  double min_denominator = 1e-2;  // relative error = |a - n| / max(|a|, |n|, min_denominator)
  std::size_t max_entries = 0;    // check at most this many evenly spread entries; 0 = all
};

struct GradCheckResult {
  double max_rel_error = 0.0;
  double max_abs_error = 0.0;
  std::size_t worst_index = 0;  // entry with the largest relative error
  double worst_analytic = 0.0, worst_numeric = 0.0;
  std::size_t checked = 0;
};

inline std::string describe(const GradCheckResult& r) {
  std::ostringstream os;
  os << "checked " << r.checked << " entries: max rel error " << r.max_rel_error
     << ", max abs error " << r.max_abs_error << "; worst at [" << r.worst_index << "]: analytic "
     << r.worst_analytic << " vs numeric " << r.worst_numeric;
  return os.str();
}

// Perturbs param[i] in place (restoring it), evaluates loss() on both sides and compares the
// slope with analytic[i]. loss must read param through a reference or pointer captured by the
// caller.
inline GradCheckResult check_gradient(std::vector<float>& param, const std::vector<float>& analytic,
                                      const std::function<double()>& loss,
                                      const GradCheckOptions& options = {}) {
  require(analytic.size() == param.size(), "check_gradient", "analytic gradient size != params");
  GradCheckResult result;
  const std::size_t total = param.size();
  const std::size_t count = options.max_entries == 0 ? total : std::min(total, options.max_entries);
  for (std::size_t k = 0; k < count; ++k) {
    const std::size_t i = count == total ? k : k * total / count;
    const float original = param[i];
    const float plus = static_cast<float>(original + options.step);
    const float minus = static_cast<float>(original - options.step);
    param[i] = plus;
    const double loss_plus = loss();
    param[i] = minus;
    const double loss_minus = loss();
    param[i] = original;
    const double numeric =
        (loss_plus - loss_minus) / (static_cast<double>(plus) - static_cast<double>(minus));
    const double a = analytic[i];
    const double abs_err = std::fabs(a - numeric);
    const double denom = std::max({std::fabs(a), std::fabs(numeric), options.min_denominator});
    const double rel = abs_err / denom;
    result.max_abs_error = std::max(result.max_abs_error, abs_err);
    const bool worse = result.checked == 0 || rel > result.max_rel_error ||
                       (std::isnan(rel) && !std::isnan(result.max_rel_error));
    if (worse) {
      result.max_rel_error = rel;
      result.worst_index = i;
      result.worst_analytic = a;
      result.worst_numeric = numeric;
    }
    ++result.checked;
  }
  return result;
}

// Test helpers: seeded uniform fills and a scalar "loss" that projects an output onto fixed
// random weights (sum_i y_i * r_i, in double), whose gradient with respect to y is r itself.
inline std::vector<float> random_vector(std::size_t size, std::mt19937& rng, float lo = -1.0f,
                                        float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(size);
  for (float& x : v) x = dist(rng);
  return v;
}

inline Tensor random_tensor(int n, int c, int h, int w, std::mt19937& rng, float lo = -1.0f,
                            float hi = 1.0f) {
  Tensor t(n, c, h, w);
  t.v = random_vector(t.size(), rng, lo, hi);
  return t;
}

inline double projection_loss(const Tensor& y, const std::vector<float>& r) {
  require(y.size() == r.size(), "projection_loss", "projection size != output size");
  double sum = 0.0;
  for (std::size_t i = 0; i < r.size(); ++i) sum += static_cast<double>(y.v[i]) * r[i];
  return sum;
}

// The tensor whose entries are the projection weights: dL/dy of projection_loss.
inline Tensor projection_grad(const Tensor& y, const std::vector<float>& r) {
  Tensor g(y.n, y.c, y.h, y.w);
  g.v = r;
  return g;
}

}  // namespace gb::nnref
