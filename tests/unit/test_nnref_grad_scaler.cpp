// Specification of the FP16 dynamic loss scaler's state machine, step by step, against
// torch.cuda.amp.GradScaler's documented behaviour (init 2^16, x2 after 2000 clean steps,
// x0.5 and a skipped step on inf/NaN) and ATen's _amp_update_scale_ corner cases.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/error.hpp"
#include "nnref/grad_scaler.hpp"

namespace gb::nnref {
namespace {

// One training step's scaler calls with the given gradient; returns whether it was skipped.
bool run_step(GradScaler& scaler, float grad_value) {
  std::vector<float> grads{grad_value, 1.0f};
  scaler.unscale(grads);
  const bool skipped = scaler.step_should_skip();
  scaler.update();
  return skipped;
}

TEST(NnrefGradScaler, StartsAtTwoToTheSixteen) {
  const GradScaler scaler;
  EXPECT_EQ(scaler.scale(), 65536.0f);
  EXPECT_EQ(scaler.growth_tracker(), 0);
  EXPECT_TRUE(scaler.enabled());
  EXPECT_EQ(scaler.options().growth_interval, 2000);
}

TEST(NnrefGradScaler, ScaleLossMultipliesByTheScale) {
  const GradScaler scaler;
  EXPECT_EQ(scaler.scale_loss(1.5f), 98304.0f);
  EXPECT_EQ(scaler.scale_loss(-0.25f), -16384.0f);
}

TEST(NnrefGradScaler, UnscaleDividesByTheScaleInPlace) {
  GradScaler scaler;
  std::vector<float> grads{65536.0f, -131072.0f, 32768.0f, 0.0f};
  EXPECT_FALSE(scaler.unscale(grads));
  EXPECT_EQ(grads, (std::vector<float>{1.0f, -2.0f, 0.5f, 0.0f}));
  EXPECT_FALSE(scaler.step_should_skip());
}

TEST(NnrefGradScaler, GrowsExactlyAfter2000CleanSteps) {
  GradScaler scaler;
  for (int step = 1; step < 2000; ++step) {
    ASSERT_FALSE(run_step(scaler, 0.5f));
    ASSERT_EQ(scaler.scale(), 65536.0f) << "step " << step;
    ASSERT_EQ(scaler.growth_tracker(), step);
  }
  EXPECT_FALSE(run_step(scaler, 0.5f));  // the 2000th clean step
  EXPECT_EQ(scaler.scale(), 131072.0f);
  EXPECT_EQ(scaler.growth_tracker(), 0);
}

TEST(NnrefGradScaler, InfBacksOffAndSkipsTheStep) {
  GradScaler scaler;
  std::vector<float> grads{1.0f, std::numeric_limits<float>::infinity(), 2.0f};
  EXPECT_TRUE(scaler.unscale(grads));
  EXPECT_TRUE(scaler.step_should_skip());
  scaler.update();
  EXPECT_EQ(scaler.scale(), 32768.0f);
  EXPECT_EQ(scaler.growth_tracker(), 0);
  EXPECT_FALSE(scaler.step_should_skip());  // per-step state cleared by update()
}

TEST(NnrefGradScaler, NegativeInfAndNaNAreHandledLikeInf) {
  GradScaler scaler;
  EXPECT_TRUE(run_step(scaler, std::numeric_limits<float>::quiet_NaN()));
  EXPECT_EQ(scaler.scale(), 32768.0f);
  EXPECT_TRUE(run_step(scaler, -std::numeric_limits<float>::infinity()));
  EXPECT_EQ(scaler.scale(), 16384.0f);
}

TEST(NnrefGradScaler, InfResetsTheGrowthTracker) {
  GradScaler scaler;
  for (int step = 0; step < 1500; ++step) run_step(scaler, 0.5f);
  ASSERT_EQ(scaler.growth_tracker(), 1500);
  run_step(scaler, std::numeric_limits<float>::infinity());
  EXPECT_EQ(scaler.growth_tracker(), 0);
  EXPECT_EQ(scaler.scale(), 32768.0f);
  // Growth needs 2000 clean steps counted from the reset, not 500.
  for (int step = 1; step < 2000; ++step) run_step(scaler, 0.5f);
  EXPECT_EQ(scaler.scale(), 32768.0f);
  run_step(scaler, 0.5f);
  EXPECT_EQ(scaler.scale(), 65536.0f);
}

TEST(NnrefGradScaler, UnscaleTwiceInOneStepThrows) {
  GradScaler scaler;
  std::vector<float> grads{65536.0f};
  scaler.unscale(grads);
  EXPECT_THROW(scaler.unscale(grads), Error);
  EXPECT_EQ(grads[0], 1.0f);  // the refused call did not divide again
  EXPECT_THROW(scaler.mark_unscaled(false), Error);
  scaler.update();
  EXPECT_NO_THROW(scaler.unscale(grads));  // a new step may unscale again
}

TEST(NnrefGradScaler, UpdateWithoutAnInfCheckThrows) {
  GradScaler scaler;
  EXPECT_THROW(scaler.update(), Error);
  EXPECT_EQ(scaler.scale(), 65536.0f);
}

TEST(NnrefGradScaler, UnscaleCoversAllGradientsOfTheStepAtOnce) {
  GradScaler scaler;
  std::vector<float> a{65536.0f}, b{std::numeric_limits<float>::infinity(), 131072.0f};
  EXPECT_TRUE(scaler.unscale({&a, &b}));
  EXPECT_EQ(a[0], 1.0f);
  EXPECT_EQ(b[1], 2.0f);  // all gradients are unscaled even when one is not finite
  EXPECT_TRUE(std::isinf(b[0]));
}

TEST(NnrefGradScaler, MarkUnscaledFeedsAGpuInfFlag) {
  GradScaler scaler;
  scaler.mark_unscaled(true);
  EXPECT_TRUE(scaler.step_should_skip());
  scaler.update();
  EXPECT_EQ(scaler.scale(), 32768.0f);
}

TEST(NnrefGradScaler, DisabledScalerIsTransparent) {
  GradScaler scaler(GradScalerOptions{.enabled = false});
  EXPECT_EQ(scaler.scale(), 1.0f);
  EXPECT_EQ(scaler.scale_loss(3.5f), 3.5f);
  std::vector<float> grads{std::numeric_limits<float>::infinity(), 8.0f};
  EXPECT_FALSE(scaler.unscale(grads));
  EXPECT_EQ(grads[1], 8.0f);
  EXPECT_FALSE(scaler.step_should_skip());
  EXPECT_NO_THROW(scaler.update());
  EXPECT_NO_THROW(scaler.unscale(grads));  // no once-per-step rule when disabled
  EXPECT_EQ(scaler.growth_tracker(), 0);
}

TEST(NnrefGradScaler, RejectsFactorsThatDoNotGrowOrShrink) {
  EXPECT_THROW(GradScaler(GradScalerOptions{.growth_factor = 1.0}), Error);
  EXPECT_THROW(GradScaler(GradScalerOptions{.backoff_factor = 1.0}), Error);
  EXPECT_THROW(GradScaler(GradScalerOptions{.growth_interval = 0}), Error);
}

TEST(NnrefGradScaler, CustomOptionsAreHonoured) {
  GradScaler scaler(GradScalerOptions{
      .init_scale = 8.0f, .growth_factor = 4.0, .backoff_factor = 0.25, .growth_interval = 3});
  run_step(scaler, 1.0f);
  run_step(scaler, 1.0f);
  EXPECT_EQ(scaler.scale(), 8.0f);
  run_step(scaler, 1.0f);
  EXPECT_EQ(scaler.scale(), 32.0f);
  run_step(scaler, std::numeric_limits<float>::infinity());
  EXPECT_EQ(scaler.scale(), 8.0f);
}

TEST(NnrefUpdateScale, CleanStepCountsUpThenGrowsAndResets) {
  EXPECT_EQ(update_scale(65536.0f, 0, false, 2.0, 0.5, 2000), std::make_pair(65536.0f, 1));
  EXPECT_EQ(update_scale(65536.0f, 1998, false, 2.0, 0.5, 2000), std::make_pair(65536.0f, 1999));
  EXPECT_EQ(update_scale(65536.0f, 1999, false, 2.0, 0.5, 2000), std::make_pair(131072.0f, 0));
}

TEST(NnrefUpdateScale, InfBacksOffAndResets) {
  EXPECT_EQ(update_scale(65536.0f, 1999, true, 2.0, 0.5, 2000), std::make_pair(32768.0f, 0));
}

TEST(NnrefUpdateScale, NeverGrowsPastFloatMaxButStillResetsTheTracker) {
  const float big = std::ldexp(1.0f, 127);  // 2^127; 2^128 overflows FP32
  EXPECT_EQ(update_scale(big, 1999, false, 2.0, 0.5, 2000), std::make_pair(big, 0));
  const float max = std::numeric_limits<float>::max();
  EXPECT_EQ(update_scale(max, 0, false, 2.0, 0.5, 1), std::make_pair(max, 0));
}

TEST(NnrefUpdateScale, ProductIsFormedInDoubleAndRoundedOnce) {
  // ATen multiplies the float scale by the double factor: 65536 * 0.3 = 19660.8 -> float.
  EXPECT_EQ(update_scale(65536.0f, 0, true, 2.0, 0.3, 2000).first,
            static_cast<float>(65536.0 * 0.3));
  EXPECT_EQ(update_scale(3.0f, 0, false, 1.1, 0.5, 1).first, static_cast<float>(3.0 * 1.1));
}

TEST(NnrefUpdateScale, BackoffCanUnderflowToZeroAsInATen) {
  // The smallest subnormal halves to exactly 0 (round to nearest even); ATen does not clamp.
  EXPECT_EQ(update_scale(std::numeric_limits<float>::denorm_min(), 0, true, 2.0, 0.5, 2000).first,
            0.0f);
}

}  // namespace
}  // namespace gb::nnref
