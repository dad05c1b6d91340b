// Specification of the CPU reference batch norm: PyTorch's training-mode statistics (biased
// variance to normalise, unbiased variance into running_var), inference with running statistics,
// and finite-difference gradients for x, gamma and beta.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/error.hpp"
#include "nnref/gradcheck.hpp"
#include "nnref/ref.hpp"

namespace gb::nnref {
namespace {

TEST(NnrefBatchNorm, TrainingNormalisesWithBatchStatistics) {
  // One channel holding 1, 2, 3, 4 (N=2, 1x2): mean 2.5, biased variance 1.25.
  Tensor x(2, 1, 1, 2);
  x.v = {1, 2, 3, 4};
  std::vector<float> running_mean{0.0f}, running_var{1.0f};
  BatchNormSaved saved;
  const float eps = 1e-5f;
  const Tensor y =
      batchnorm_forward_train(x, {2.0f}, {0.5f}, running_mean, running_var, 0.1f, eps, saved);
  const double inv_std = 1.0 / std::sqrt(1.25 + 1e-5);  // 0.8944236...
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(y.v[i], 2.0 * (x.v[i] - 2.5) * inv_std + 0.5, 1e-6) << i;
  }
  EXPECT_FLOAT_EQ(saved.mean[0], 2.5f);
  EXPECT_NEAR(saved.inv_std[0], 0.8944236, 1e-6);
}

TEST(NnrefBatchNorm, RunningStatisticsUsePyTorchMomentumAndUnbiasedVariance) {
  Tensor x(2, 1, 1, 2);
  x.v = {1, 2, 3, 4};
  std::vector<float> running_mean{0.0f}, running_var{1.0f};
  BatchNormSaved saved;
  batchnorm_forward_train(x, {1.0f}, {0.0f}, running_mean, running_var, 0.1f, 1e-5f, saved);
  EXPECT_NEAR(running_mean[0], 0.9 * 0.0 + 0.1 * 2.5, 1e-7);
  // Unbiased variance 5/3 (sum of squares 5 over M-1 = 3), not the biased 1.25.
  EXPECT_NEAR(running_var[0], 0.9 * 1.0 + 0.1 * (5.0 / 3.0), 1e-6);
}

TEST(NnrefBatchNorm, ChannelsAreNormalisedIndependently) {
  // Two channels, N=2, 1x1: channel 0 holds {0, 10}, channel 1 holds {-1, -3}.
  Tensor x(2, 2, 1, 1);
  x.v = {0, -1, 10, -3};  // NCHW: n0c0, n0c1, n1c0, n1c1
  std::vector<float> rm{0, 0}, rv{1, 1};
  BatchNormSaved saved;
  const Tensor y = batchnorm_forward_train(x, {1, 1}, {0, 0}, rm, rv, 1.0f, 0.0f, saved);
  EXPECT_FLOAT_EQ(saved.mean[0], 5.0f);
  EXPECT_FLOAT_EQ(saved.mean[1], -2.0f);
  EXPECT_FLOAT_EQ(saved.inv_std[0], 0.2f);  // biased std 5
  EXPECT_FLOAT_EQ(saved.inv_std[1], 1.0f);  // biased std 1
  EXPECT_FLOAT_EQ(y.at(0, 0, 0, 0), -1.0f);
  EXPECT_FLOAT_EQ(y.at(1, 0, 0, 0), 1.0f);
  EXPECT_FLOAT_EQ(y.at(0, 1, 0, 0), 1.0f);
  EXPECT_FLOAT_EQ(y.at(1, 1, 0, 0), -1.0f);
  // momentum 1: running statistics become the batch ones (variance unbiased: 50 and 2).
  EXPECT_FLOAT_EQ(rm[0], 5.0f);
  EXPECT_FLOAT_EQ(rv[0], 50.0f);
  EXPECT_FLOAT_EQ(rv[1], 2.0f);
}

TEST(NnrefBatchNorm, InferenceUsesRunningStatistics) {
  Tensor x(1, 2, 1, 2);
  x.v = {1, 3, 10, 20};
  const Tensor y = batchnorm_forward_inference(x, {2, 1}, {1, -1}, {1, 10}, {4, 100}, 0.0f);
  // channel 0: 2 * (x - 1) / 2 + 1; channel 1: (x - 10) / 10 - 1
  EXPECT_FLOAT_EQ(y.v[0], 1.0f);
  EXPECT_FLOAT_EQ(y.v[1], 3.0f);
  EXPECT_FLOAT_EQ(y.v[2], -1.0f);
  EXPECT_FLOAT_EQ(y.v[3], 0.0f);
}

TEST(NnrefBatchNorm, TrainingNeedsMoreThanOneValuePerChannel) {
  std::vector<float> rm{0}, rv{1};
  BatchNormSaved saved;
  EXPECT_THROW(batchnorm_forward_train(Tensor(1, 1, 1, 1), {1}, {0}, rm, rv, 0.1f, 1e-5f, saved),
               Error);
}

TEST(NnrefBatchNorm, GradientsOfTrainingModeMatchFiniteDifferences) {
  std::mt19937 rng(21);
  Tensor x = random_tensor(3, 4, 3, 3, rng, -2.0f, 2.0f);
  std::vector<float> gamma = random_vector(4, rng, 0.5f, 1.5f);
  std::vector<float> beta = random_vector(4, rng);
  const std::vector<float> rm0(4, 0.0f), rv0(4, 1.0f);
  auto forward = [&] {
    std::vector<float> rm = rm0, rv = rv0;
    BatchNormSaved s;
    return batchnorm_forward_train(x, gamma, beta, rm, rv, 0.1f, 1e-5f, s);
  };
  std::vector<float> rm = rm0, rv = rv0;
  BatchNormSaved saved;
  const Tensor y = batchnorm_forward_train(x, gamma, beta, rm, rv, 0.1f, 1e-5f, saved);
  const std::vector<float> proj = random_vector(y.size(), rng);
  Tensor dx;
  std::vector<float> dgamma, dbeta;
  batchnorm_backward(x, projection_grad(y, proj), gamma, saved, dx, dgamma, dbeta);
  auto loss = [&] { return projection_loss(forward(), proj); };
  const GradCheckOptions opts{.step = 1e-3};
  const GradCheckResult gx = check_gradient(x.v, dx.v, loss, opts);
  const GradCheckResult gg = check_gradient(gamma, dgamma, loss, opts);
  const GradCheckResult gbeta = check_gradient(beta, dbeta, loss, opts);
  EXPECT_LT(gx.max_rel_error, 1e-2) << "dx: " << describe(gx);
  EXPECT_LT(gg.max_rel_error, 1e-3) << "dgamma: " << describe(gg);
  EXPECT_LT(gbeta.max_rel_error, 1e-3) << "dbeta: " << describe(gbeta);
}

TEST(NnrefBatchNorm, InputGradientSumsToZeroPerChannel) {
  // The output does not change when a channel is shifted by a constant, so dx sums to 0.
  std::mt19937 rng(22);
  const Tensor x = random_tensor(2, 3, 4, 4, rng);
  std::vector<float> rm(3, 0), rv(3, 1);
  BatchNormSaved saved;
  batchnorm_forward_train(x, {1, 2, 3}, {0, 0, 0}, rm, rv, 0.1f, 1e-5f, saved);
  Tensor dx;
  std::vector<float> dgamma, dbeta;
  batchnorm_backward(x, random_tensor(2, 3, 4, 4, rng), {1, 2, 3}, saved, dx, dgamma, dbeta);
  for (int c = 0; c < 3; ++c) {
    double sum = 0;
    for (int n = 0; n < 2; ++n)
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) sum += dx.at(n, c, i, j);
    EXPECT_NEAR(sum, 0.0, 1e-5) << "channel " << c;
  }
}

}  // namespace
}  // namespace gb::nnref
