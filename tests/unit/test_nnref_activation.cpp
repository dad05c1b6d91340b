// Specification of the CPU reference ReLU, ReLU6 and add: values, the zero gradient at and beyond
// the kinks (backward reads the forward output), and finite differences away from the kinks.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "core/error.hpp"
#include "nnref/gradcheck.hpp"
#include "nnref/ref.hpp"

namespace gb::nnref {
namespace {

Tensor row(const std::vector<float>& values) {
  Tensor t(1, static_cast<int>(values.size()));
  t.v = values;
  return t;
}

TEST(NnrefActivation, ReluClampsNegativesToZero) {
  const Tensor y = relu_forward(row({-2.0f, -0.0f, 0.0f, 0.5f, 7.0f}));
  EXPECT_EQ(y.v, (std::vector<float>{0.0f, 0.0f, 0.0f, 0.5f, 7.0f}));
}

TEST(NnrefActivation, ReluPropagatesNaN) {
  EXPECT_TRUE(std::isnan(relu_forward(row({std::nanf("")})).v[0]));
}

TEST(NnrefActivation, ReluBackwardPassesGradientOnlyWhereOutputIsPositive) {
  const Tensor dx = relu_backward(row({0.0f, 0.5f, 3.0f}), row({1.0f, 2.0f, -3.0f}));
  EXPECT_EQ(dx.v, (std::vector<float>{0.0f, 2.0f, -3.0f}));
}

TEST(NnrefActivation, Relu6ClampsToZeroAndSix) {
  const Tensor y = relu6_forward(row({-1.0f, 0.0f, 2.5f, 6.0f, 9.0f}));
  EXPECT_EQ(y.v, (std::vector<float>{0.0f, 0.0f, 2.5f, 6.0f, 6.0f}));
}

TEST(NnrefActivation, Relu6BackwardIsZeroAtBothKinksAndOutside) {
  const Tensor dx = relu6_backward(row({0.0f, 0.1f, 5.9f, 6.0f}), row({1.0f, 2.0f, 3.0f, 4.0f}));
  EXPECT_EQ(dx.v, (std::vector<float>{0.0f, 2.0f, 3.0f, 0.0f}));
}

TEST(NnrefActivation, AddIsElementwise) {
  EXPECT_EQ(add(row({1.0f, -2.0f}), row({0.5f, 2.0f})).v, (std::vector<float>{1.5f, 0.0f}));
  EXPECT_THROW(add(row({1.0f}), row({1.0f, 2.0f})), Error);
}

// Fills x with values at least `margin` away from every kink in `kinks`.
Tensor away_from_kinks(int count, float lo, float hi, const std::vector<float>& kinks, float margin,
                       std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(lo, hi);
  Tensor x(1, count);
  for (float& v : x.v) {
    bool near_kink = true;
    while (near_kink) {
      v = dist(rng);
      near_kink = false;
      for (float k : kinks) near_kink = near_kink || std::fabs(v - k) < margin;
    }
  }
  return x;
}

TEST(NnrefActivation, ReluGradientMatchesFiniteDifferencesAwayFromZero) {
  std::mt19937 rng(31);
  Tensor x = away_from_kinks(40, -2.0f, 2.0f, {0.0f}, 0.05f, rng);
  const std::vector<float> proj = random_vector(x.size(), rng);
  const Tensor dx = relu_backward(relu_forward(x), projection_grad(x, proj));
  const GradCheckResult g =
      check_gradient(x.v, dx.v, [&] { return projection_loss(relu_forward(x), proj); });
  EXPECT_LT(g.max_rel_error, 1e-4) << describe(g);
}

TEST(NnrefActivation, Relu6GradientMatchesFiniteDifferencesAwayFromKinks) {
  std::mt19937 rng(32);
  Tensor x = away_from_kinks(60, -2.0f, 8.0f, {0.0f, 6.0f}, 0.05f, rng);
  const std::vector<float> proj = random_vector(x.size(), rng);
  const Tensor dx = relu6_backward(relu6_forward(x), projection_grad(x, proj));
  const GradCheckResult g =
      check_gradient(x.v, dx.v, [&] { return projection_loss(relu6_forward(x), proj); });
  EXPECT_LT(g.max_rel_error, 1e-4) << describe(g);
  std::size_t passed = 0;  // the sample covers all three regions
  for (float v : dx.v) passed += v != 0.0f;
  EXPECT_GT(passed, 10u);
  EXPECT_LT(passed, 50u);
}

}  // namespace
}  // namespace gb::nnref
