// Specification of the CPU reference convolution: hand-computed cases, finite-difference
// gradients for every parameter the GPU engine uses (stride, padding, groups, depthwise,
// dilation), and the adjoint identity that ties the forward to backward-data.
#include <gtest/gtest.h>

#include <chrono>
#include <random>

#include "core/error.hpp"
#include "nnref/gradcheck.hpp"
#include "nnref/ref.hpp"

namespace gb::nnref {
namespace {

Tensor sequence(int n, int c, int h, int w) {  // 1, 2, 3, ... in NCHW order
  Tensor t(n, c, h, w);
  for (std::size_t i = 0; i < t.size(); ++i) t.v[i] = static_cast<float>(i + 1);
  return t;
}

Tensor filled(int n, int c, int h, int w, float value) {
  Tensor t(n, c, h, w);
  std::fill(t.v.begin(), t.v.end(), value);
  return t;
}

void expect_values(const Tensor& t, const std::vector<float>& expected) {
  ASSERT_EQ(t.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i)
    EXPECT_FLOAT_EQ(t.v[i], expected[i]) << "at " << i;
}

TEST(NnrefConv, OutputSizeFollowsTheCudnnFormula) {
  EXPECT_EQ(conv_out_size(224, 7, 2, 3, 1), 112);
  EXPECT_EQ(conv_out_size(56, 3, 1, 1, 1), 56);
  EXPECT_EQ(conv_out_size(56, 1, 2, 0, 1), 28);
  EXPECT_EQ(conv_out_size(7, 3, 1, 2, 2), 7);   // dilation 2: span 5
  EXPECT_EQ(conv_out_size(14, 3, 2, 1, 1), 7);  // floor((14 + 2 - 3) / 2) + 1
  EXPECT_THROW(conv_out_size(2, 5, 1, 0, 1), Error);
}

TEST(NnrefConv, ForwardIsCrossCorrelationNotConvolution) {
  // x = 1..9 (3x3), w = [[1,2],[3,4]]: y[0,0] = 1*1 + 2*2 + 3*4 + 4*5 = 37 (no kernel flip).
  Tensor w(1, 1, 2, 2);
  w.v = {1, 2, 3, 4};
  expect_values(conv2d_forward(sequence(1, 1, 3, 3), w, {}), {37, 47, 67, 77});
}

TEST(NnrefConv, ForwardZeroPadsTheBorder) {
  // 3x3 box filter with padding 1: each output is the sum of the in-bounds 3x3 neighbourhood.
  const Tensor y = conv2d_forward(sequence(1, 1, 3, 3), filled(1, 1, 3, 3, 1.0f),
                                  ConvParams{.pad_h = 1, .pad_w = 1});
  expect_values(y, {12, 21, 16, 27, 45, 33, 24, 39, 28});
}

TEST(NnrefConv, ForwardStrideTwoSamplesEveryOtherPosition) {
  const Tensor y = conv2d_forward(sequence(1, 1, 3, 3), filled(1, 1, 3, 3, 1.0f),
                                  ConvParams{.stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1});
  ASSERT_EQ(y.h, 2);
  ASSERT_EQ(y.w, 2);
  expect_values(y, {12, 16, 24, 28});
}

TEST(NnrefConv, ForwardDilationSpreadsTheTaps) {
  // 2x2 kernel with dilation 2 over 3x3 reads the four corners: 1 + 3 + 7 + 9.
  const Tensor y = conv2d_forward(sequence(1, 1, 3, 3), filled(1, 1, 2, 2, 1.0f),
                                  ConvParams{.dil_h = 2, .dil_w = 2});
  ASSERT_EQ(y.size(), 1u);
  EXPECT_FLOAT_EQ(y.v[0], 20.0f);
}

TEST(NnrefConv, ForwardGroupsKeepChannelsApart) {
  // 2 channels, groups = 2, 1x1 filters 2 and 3: each output channel sees only its own input.
  const Tensor x = sequence(1, 2, 1, 2);  // channel 0: 1 2, channel 1: 3 4
  Tensor w(2, 1, 1, 1);
  w.v = {2, 3};
  expect_values(conv2d_forward(x, w, ConvParams{.groups = 2}), {2, 4, 9, 12});
}

TEST(NnrefConv, GroupedEqualsSeparateConvolutionsPerGroup) {
  std::mt19937 rng(7);
  const Tensor x = random_tensor(2, 4, 5, 5, rng);
  const Tensor w = random_tensor(6, 2, 3, 3, rng);
  const ConvParams p{.pad_h = 1, .pad_w = 1, .groups = 2};
  const Tensor y = conv2d_forward(x, w, p);
  for (int g = 0; g < 2; ++g) {
    Tensor xg(2, 2, 5, 5), wg(3, 2, 3, 3);
    for (int n = 0; n < 2; ++n)
      for (int c = 0; c < 2; ++c)
        for (int i = 0; i < 5; ++i)
          for (int j = 0; j < 5; ++j) xg.at(n, c, i, j) = x.at(n, g * 2 + c, i, j);
    std::copy(w.v.begin() + g * 3 * 18, w.v.begin() + (g + 1) * 3 * 18, wg.v.begin());
    const Tensor yg = conv2d_forward(xg, wg, ConvParams{.pad_h = 1, .pad_w = 1});
    for (int n = 0; n < 2; ++n)
      for (int k = 0; k < 3; ++k)
        for (int i = 0; i < 5; ++i)
          for (int j = 0; j < 5; ++j) EXPECT_FLOAT_EQ(y.at(n, g * 3 + k, i, j), yg.at(n, k, i, j));
  }
}

TEST(NnrefConv, BackwardDataHandCase) {
  // dy = ones(2x2) through w = [[1,2],[3,4]]: each input collects the taps that touched it.
  Tensor w(1, 1, 2, 2);
  w.v = {1, 2, 3, 4};
  expect_values(conv2d_backward_data(filled(1, 1, 2, 2, 1.0f), w, {}, 3, 3),
                {1, 3, 2, 4, 10, 6, 3, 7, 4});
}

TEST(NnrefConv, BackwardFilterHandCase) {
  // dy = ones(2x2) over x = 1..9: dw[r][s] is the sum of the 2x2 block of x at offset (r, s).
  expect_values(conv2d_backward_filter(sequence(1, 1, 3, 3), filled(1, 1, 2, 2, 1.0f), {}, 2, 2),
                {12, 16, 24, 28});
}

TEST(NnrefConv, BackwardDataIsTheAdjointOfForward) {
  // <conv(x), dy> == <x, conv_backward_data(dy)> for any x, dy.
  std::mt19937 rng(11);
  const ConvParams p{
      .stride_h = 2, .stride_w = 1, .pad_h = 1, .pad_w = 2, .dil_h = 1, .dil_w = 2, .groups = 3};
  const Tensor x = random_tensor(2, 6, 9, 8, rng);
  const Tensor w = random_tensor(9, 2, 3, 3, rng);
  const Tensor y = conv2d_forward(x, w, p);
  const Tensor dy = random_tensor(y.n, y.c, y.h, y.w, rng);
  const Tensor dx = conv2d_backward_data(dy, w, p, x.h, x.w);
  double lhs = 0, rhs = 0;
  for (std::size_t i = 0; i < y.size(); ++i) lhs += static_cast<double>(y.v[i]) * dy.v[i];
  for (std::size_t i = 0; i < x.size(); ++i) rhs += static_cast<double>(x.v[i]) * dx.v[i];
  EXPECT_NEAR(lhs, rhs, 1e-4 * std::fabs(lhs) + 1e-5);
}

// Finite-difference check of dL/dx and dL/dw for L = sum(conv(x, w) * r).
void check_conv_gradients(int n, int c, int h, int w_, int k, int r, int s, const ConvParams& p,
                          unsigned seed) {
  std::mt19937 rng(seed);
  Tensor x = random_tensor(n, c, h, w_, rng);
  Tensor w = random_tensor(k, c / p.groups, r, s, rng);
  const Tensor y = conv2d_forward(x, w, p);
  const std::vector<float> proj = random_vector(y.size(), rng);
  const Tensor dy = projection_grad(y, proj);
  const Tensor dx = conv2d_backward_data(dy, w, p, h, w_);
  const Tensor dw = conv2d_backward_filter(x, dy, p, r, s);
  ASSERT_TRUE(dx.same_shape(x)) << shape_string(dx);
  ASSERT_TRUE(dw.same_shape(w)) << shape_string(dw);
  auto loss = [&] { return projection_loss(conv2d_forward(x, w, p), proj); };
  // The loss is linear in x and in w, so central differences have no truncation error and a
  // large step only shrinks the relative weight of FP32 rounding in the outputs.
  const GradCheckOptions opts{.step = 0.25};
  const GradCheckResult gx = check_gradient(x.v, dx.v, loss, opts);
  const GradCheckResult gw = check_gradient(w.v, dw.v, loss, opts);
  EXPECT_LT(gx.max_rel_error, 1e-3) << "dx: " << describe(gx);
  EXPECT_LT(gw.max_rel_error, 1e-3) << "dw: " << describe(gw);
  EXPECT_EQ(gx.checked, x.size());
  EXPECT_EQ(gw.checked, w.size());
}

TEST(NnrefConv, GradientsPlain3x3) {
  check_conv_gradients(2, 3, 5, 5, 4, 3, 3, {}, 1);
}

TEST(NnrefConv, GradientsStride2Padding1) {
  check_conv_gradients(2, 3, 7, 6, 4, 3, 3,
                       ConvParams{.stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1}, 2);
}

TEST(NnrefConv, GradientsStemLike7x7Stride2Padding3) {
  check_conv_gradients(1, 3, 9, 9, 2, 7, 7,
                       ConvParams{.stride_h = 2, .stride_w = 2, .pad_h = 3, .pad_w = 3}, 3);
}

TEST(NnrefConv, GradientsGroups2) {
  check_conv_gradients(2, 4, 5, 5, 6, 3, 3, ConvParams{.pad_h = 1, .pad_w = 1, .groups = 2}, 4);
}

TEST(NnrefConv, GradientsDepthwiseStride2) {
  check_conv_gradients(
      2, 5, 6, 6, 5, 3, 3,
      ConvParams{.stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1, .groups = 5}, 5);
}

TEST(NnrefConv, GradientsDepthwiseWithChannelMultiplier) {
  check_conv_gradients(1, 3, 5, 5, 6, 3, 3, ConvParams{.pad_h = 1, .pad_w = 1, .groups = 3}, 6);
}

TEST(NnrefConv, GradientsDilation2) {
  check_conv_gradients(2, 2, 7, 7, 3, 3, 3,
                       ConvParams{.pad_h = 2, .pad_w = 2, .dil_h = 2, .dil_w = 2}, 7);
}

TEST(NnrefConv, GradientsPointwiseStride2AsymmetricShape) {
  check_conv_gradients(3, 4, 6, 5, 3, 1, 1, ConvParams{.stride_h = 2, .stride_w = 2}, 8);
}

TEST(NnrefConv, GradientsAsymmetricKernelStrideAndPadding) {
  check_conv_gradients(
      1, 2, 6, 7, 2, 3, 2,
      ConvParams{.stride_h = 1, .stride_w = 2, .pad_h = 1, .pad_w = 0, .dil_h = 2, .dil_w = 1}, 9);
}

TEST(NnrefConv, RejectsMismatchedFilterChannels) {
  EXPECT_THROW(conv2d_forward(Tensor(1, 4, 3, 3), Tensor(2, 4, 1, 1), ConvParams{.groups = 2}),
               Error);
  EXPECT_THROW(conv2d_forward(Tensor(1, 3, 3, 3), Tensor(2, 3, 1, 1), ConvParams{.groups = 3}),
               Error);
}

TEST(NnrefConv, GpuTestShapeRunsWellUnderASecond) {
  // The engine's GPU tests call the reference at N=2, C=K=64, 14x14, 3x3: all three passes.
  std::mt19937 rng(12);
  const Tensor x = random_tensor(2, 64, 14, 14, rng);
  const Tensor w = random_tensor(64, 64, 3, 3, rng);
  const ConvParams p{.pad_h = 1, .pad_w = 1};
  const auto t0 = std::chrono::steady_clock::now();
  const Tensor y = conv2d_forward(x, w, p);
  const Tensor dx = conv2d_backward_data(y, w, p, 14, 14);
  const Tensor dw = conv2d_backward_filter(x, y, p, 3, 3);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(dx.size(), x.size());
  EXPECT_EQ(dw.size(), w.size());
  // Spot-check one output against a direct sum.
  double direct = 0;
  for (int c = 0; c < 64; ++c)
    for (int r = 0; r < 3; ++r)
      for (int s = 0; s < 3; ++s)
        direct += static_cast<double>(w.at(5, c, r, s)) * x.at(1, c, 3 + r - 1, 7 + s - 1);
  EXPECT_NEAR(y.at(1, 5, 3, 7), direct, 1e-4);
  EXPECT_LT(seconds, 1.0);
}

}  // namespace
}  // namespace gb::nnref
