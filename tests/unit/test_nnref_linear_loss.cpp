// Specification of the CPU reference linear layer (weight [out, in] row-major, 4-D inputs
// flattened as c*h*w), softmax cross-entropy (mean over the batch, stable for large logits) and
// top-1 counting (ties to the lowest class).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/error.hpp"
#include "nnref/gradcheck.hpp"
#include "nnref/ref.hpp"

namespace gb::nnref {
namespace {

TEST(NnrefLinear, ForwardIsXTimesWeightTransposedPlusBias) {
  Tensor x(1, 2);
  x.v = {1, 2};
  const std::vector<float> weight{1, 2, 3, 4, 5, 6};  // [3, 2]
  const Tensor y = linear_forward(x, weight, {0.5f, -1.0f, 0.0f}, 3);
  ASSERT_EQ(y.n, 1);
  ASSERT_EQ(y.c, 3);
  EXPECT_EQ(y.v, (std::vector<float>{5.5f, 10.0f, 17.0f}));
}

TEST(NnrefLinear, FourDimensionalInputIsFlattenedInChwOrder) {
  Tensor x(1, 2, 1, 2);  // c0: 1 2, c1: 3 4 -> features 1 2 3 4
  x.v = {1, 2, 3, 4};
  const Tensor y = linear_forward(x, {0, 0, 1, 0}, {0}, 1);  // picks feature 2 = (c1, w0)
  EXPECT_FLOAT_EQ(y.v[0], 3.0f);
}

TEST(NnrefLinear, BackwardHandCase) {
  Tensor x(2, 2);
  x.v = {1, 2, 3, 4};
  const std::vector<float> weight{1, 2, 3, 4, 5, 6};  // [3, 2]
  Tensor dy(2, 3);
  dy.v = {1, 0, -1, 0, 2, 0};
  Tensor dx;
  std::vector<float> dw, db;
  linear_backward(x, dy, weight, dx, dw, db);
  EXPECT_EQ(dx.v, (std::vector<float>{-4, -4, 6, 8}));      // dy W
  EXPECT_EQ(dw, (std::vector<float>{1, 2, 6, 8, -1, -2}));  // dy^T x
  EXPECT_EQ(db, (std::vector<float>{1, 2, -1}));
}

TEST(NnrefLinear, GradientsMatchFiniteDifferences) {
  std::mt19937 rng(51);
  Tensor x = random_tensor(3, 2, 2, 2, rng);  // 8 features
  std::vector<float> weight = random_vector(5 * 8, rng), bias = random_vector(5, rng);
  const Tensor y = linear_forward(x, weight, bias, 5);
  const std::vector<float> proj = random_vector(y.size(), rng);
  Tensor dx;
  std::vector<float> dw, db;
  linear_backward(x, projection_grad(y, proj), weight, dx, dw, db);
  ASSERT_TRUE(dx.same_shape(x));
  auto loss = [&] { return projection_loss(linear_forward(x, weight, bias, 5), proj); };
  const GradCheckResult gx = check_gradient(x.v, dx.v, loss);
  const GradCheckResult gw = check_gradient(weight, dw, loss);
  const GradCheckResult gbias = check_gradient(bias, db, loss);
  EXPECT_LT(gx.max_rel_error, 1e-3) << "dx: " << describe(gx);
  EXPECT_LT(gw.max_rel_error, 1e-3) << "dw: " << describe(gw);
  EXPECT_LT(gbias.max_rel_error, 1e-3) << "db: " << describe(gbias);
}

TEST(NnrefLinear, RejectsWrongWeightSize) {
  EXPECT_THROW(linear_forward(Tensor(1, 3), std::vector<float>(5), {0, 0}, 2), Error);
}

TEST(NnrefLoss, CrossEntropyOfUniformLogitsIsLogClasses) {
  Tensor logits(2, 4);
  EXPECT_NEAR(softmax_cross_entropy(logits, {0, 3}, nullptr), std::log(4.0), 1e-6);
}

TEST(NnrefLoss, CrossEntropyHandCaseAndGradient) {
  Tensor logits(1, 3);
  logits.v = {1, 2, 3};
  Tensor d;
  EXPECT_NEAR(softmax_cross_entropy(logits, {2}, &d), 0.40760596, 1e-6);
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  EXPECT_NEAR(d.v[0], std::exp(1.0) / z, 1e-6);
  EXPECT_NEAR(d.v[1], std::exp(2.0) / z, 1e-6);
  EXPECT_NEAR(d.v[2], std::exp(3.0) / z - 1.0, 1e-6);
}

TEST(NnrefLoss, CrossEntropyIsMeanOverBatchAndGradientDividesByN) {
  Tensor logits(2, 2);
  logits.v = {0, 0, 0, std::log(3.0f)};  // row 1: softmax (1/4, 3/4)
  Tensor d;
  const float loss = softmax_cross_entropy(logits, {0, 1}, &d);
  EXPECT_NEAR(loss, (std::log(2.0) + std::log(4.0 / 3.0)) / 2.0, 1e-6);
  EXPECT_NEAR(d.v[0], (0.5 - 1.0) / 2.0, 1e-7);
  EXPECT_NEAR(d.v[3], (0.75 - 1.0) / 2.0, 1e-7);
}

TEST(NnrefLoss, CrossEntropyIsStableForLargeLogits) {
  Tensor logits(1, 2);
  logits.v = {1000.0f, 0.0f};
  Tensor d;
  EXPECT_NEAR(softmax_cross_entropy(logits, {1}, &d), 1000.0, 1e-3);
  EXPECT_NEAR(d.v[0], 1.0, 1e-7);
  EXPECT_NEAR(d.v[1], -1.0, 1e-7);
  logits.v = {-1000.0f, -1000.0f};
  EXPECT_NEAR(softmax_cross_entropy(logits, {0}, &d), std::log(2.0), 1e-6);
}

TEST(NnrefLoss, CrossEntropyGradientMatchesFiniteDifferences) {
  std::mt19937 rng(52);
  Tensor logits = random_tensor(4, 6, 1, 1, rng, -3.0f, 3.0f);
  const std::vector<int> labels{0, 5, 2, 2};
  Tensor d;
  softmax_cross_entropy(logits, labels, &d);
  const GradCheckResult g = check_gradient(
      logits.v, d.v, [&] { return softmax_cross_entropy(logits, labels, nullptr); },
      GradCheckOptions{.step = 1e-2, .min_denominator = 1e-2});
  EXPECT_LT(g.max_rel_error, 1e-2) << describe(g);
}

TEST(NnrefLoss, RejectsLabelsOutOfRange) {
  EXPECT_THROW(softmax_cross_entropy(Tensor(1, 3), {3}, nullptr), Error);
  EXPECT_THROW(softmax_cross_entropy(Tensor(2, 3), {0}, nullptr), Error);
}

TEST(NnrefLoss, CountCorrectUsesTopOneWithTiesToLowestIndex) {
  Tensor logits(4, 3);
  logits.v = {0.1f,  0.9f,  0.0f,    // predicts 1
              2.0f,  2.0f,  1.0f,    // tie 0/1 -> 0
              0.0f,  0.0f,  0.0f,    // all tie -> 0
              -1.0f, -3.0f, -0.5f};  // predicts 2
  EXPECT_EQ(count_correct(logits, {1, 1, 0, 2}), 3u);
  EXPECT_EQ(count_correct(logits, {1, 0, 0, 2}), 4u);
}

}  // namespace
}  // namespace gb::nnref
