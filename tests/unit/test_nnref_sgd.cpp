// Specification of the reference SGD step: PyTorch's momentum (buffer starts at the first
// gradient) and L2 weight decay added to the gradient before the momentum.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "nnref/ref.hpp"

namespace gb::nnref {
namespace {

TEST(NnrefSgd, ThreeStepsWithMomentumAndWeightDecayMatchHandComputation) {
  // lr 0.1, momentum 0.9, weight decay 0.01, w0 = 1, gradients 0.5, -0.25, 1.0:
  //   step 1: g = 0.5 + 0.01 * 1       = 0.51        buf = 0.51        w = 0.949
  //   step 2: g = -0.25 + 0.01 * 0.949 = -0.24051    buf = 0.21849     w = 0.927151
  //   step 3: g = 1 + 0.01 * 0.927151  = 1.00927151  buf = 1.20591251  w = 0.806559749
  std::vector<float> w{1.0f}, buf;
  const float grads[3] = {0.5f, -0.25f, 1.0f};
  const float expected_buf[3] = {0.51f, 0.21849f, 1.20591251f};
  const float expected_w[3] = {0.949f, 0.927151f, 0.806559749f};
  for (int step = 0; step < 3; ++step) {
    sgd_step(w, {grads[step]}, buf, 0.1f, 0.9f, 0.01f);
    ASSERT_EQ(buf.size(), 1u);
    EXPECT_NEAR(buf[0], expected_buf[step], 1e-6) << "step " << step + 1;
    EXPECT_NEAR(w[0], expected_w[step], 1e-6) << "step " << step + 1;
  }
}

TEST(NnrefSgd, WithoutMomentumIsPlainGradientDescent) {
  std::vector<float> w{2.0f, -1.0f}, buf;
  sgd_step(w, {1.0f, 1.0f}, buf, 0.5f, 0.0f, 0.0f);
  EXPECT_FLOAT_EQ(w[0], 1.5f);
  EXPECT_FLOAT_EQ(w[1], -1.5f);
  sgd_step(w, {1.0f, 1.0f}, buf, 0.5f, 0.0f, 0.0f);  // no carry-over without momentum
  EXPECT_FLOAT_EQ(w[0], 1.0f);
}

TEST(NnrefSgd, WeightDecayShrinksWeightsWithZeroGradient) {
  std::vector<float> w{4.0f}, buf;
  sgd_step(w, {0.0f}, buf, 0.1f, 0.9f, 0.5f);
  EXPECT_FLOAT_EQ(w[0], 4.0f - 0.1f * 0.5f * 4.0f);
}

TEST(NnrefSgd, RejectsMismatchedSizes) {
  std::vector<float> w{1.0f, 2.0f}, buf;
  EXPECT_THROW(sgd_step(w, {1.0f}, buf, 0.1f, 0.9f, 0.0f), Error);
  buf = {0.0f};
  EXPECT_THROW(sgd_step(w, {1.0f, 1.0f}, buf, 0.1f, 0.9f, 0.0f), Error);
}

}  // namespace
}  // namespace gb::nnref
