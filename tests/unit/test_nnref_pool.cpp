// Specification of the CPU reference pooling: PyTorch output sizes, max pooling's -inf padding
// and first-maximum tie rule, average pooling counting padded zeros, global average pooling,
// and finite-difference gradients for all three.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "core/error.hpp"
#include "nnref/gradcheck.hpp"
#include "nnref/ref.hpp"

namespace gb::nnref {
namespace {

Tensor plane(int h, int w, const std::vector<float>& values) {
  Tensor t(1, 1, h, w);
  t.v = values;
  return t;
}

// Distinct values spaced 0.1 apart in random order: no ties, and a perturbation of 1e-2 never
// changes which element is the maximum of a window.
Tensor shuffled_distinct(int n, int c, int h, int w, std::mt19937& rng) {
  Tensor t(n, c, h, w);
  for (std::size_t i = 0; i < t.size(); ++i) t.v[i] = 0.1f * static_cast<float>(i) - 2.0f;
  std::shuffle(t.v.begin(), t.v.end(), rng);
  return t;
}

TEST(NnrefPool, MaxPool2x2Stride2TakesEachWindowMaximum) {
  const Tensor x = plane(4, 4,
                         {1, 2, 5, 3,    //
                          4, 0, 1, 1,    //
                          -1, -2, 7, 8,  //
                          -3, -4, 9, 6});
  const Tensor y = maxpool2d_forward(x, PoolParams{2, 2, 2, 2});
  EXPECT_EQ(y.v, (std::vector<float>{4, 5, -1, 9}));
}

TEST(NnrefPool, MaxPoolPaddingIsMinusInfinityNotZero) {
  // All inputs negative: with zero padding the border windows would return 0.
  const Tensor x = plane(2, 2, {-3, -4, -5, -6});
  const Tensor y = maxpool2d_forward(x, PoolParams{3, 3, 1, 1, 1, 1});
  ASSERT_EQ(y.h, 2);
  EXPECT_EQ(y.v, (std::vector<float>{-3, -3, -3, -3}));
}

TEST(NnrefPool, MaxPoolBackwardSendsGradientToTheFirstMaximumInRowMajorOrder) {
  // Window [[1, 5], [5, 2]]: both 5s tie; the one at (0, 1) comes first in row-major order.
  const Tensor x = plane(2, 2, {1, 5, 5, 2});
  const Tensor dx = maxpool2d_backward(x, plane(1, 1, {3.0f}), PoolParams{2, 2, 2, 2});
  EXPECT_EQ(dx.v, (std::vector<float>{0, 3, 0, 0}));
  // A constant window: everything ties, the top-left element takes the gradient.
  const Tensor flat = plane(2, 2, {7, 7, 7, 7});
  EXPECT_EQ(maxpool2d_backward(flat, plane(1, 1, {1.0f}), PoolParams{2, 2, 2, 2}).v,
            (std::vector<float>{1, 0, 0, 0}));
}

TEST(NnrefPool, MaxPoolBackwardAddsGradientsOfOverlappingWindows) {
  // 3x3 stride 1 over a 3x4 plane: the global maximum at (1, 1) wins both windows.
  const Tensor x = plane(3, 4,
                         {0, 0, 0, 0,  //
                          0, 9, 0, 0,  //
                          0, 0, 0, 0});
  const Tensor dx = maxpool2d_backward(x, plane(1, 2, {1.5f, 2.0f}), PoolParams{3, 3, 1, 1});
  EXPECT_FLOAT_EQ(dx.at(0, 0, 1, 1), 3.5f);
  EXPECT_FLOAT_EQ(std::accumulate(dx.v.begin(), dx.v.end(), 0.0f), 3.5f);
}

TEST(NnrefPool, OutputSizeFollowsPyTorchFloorMode) {
  EXPECT_EQ(pool_out_size(112, 3, 2, 1), 56);  // ResNet stem max pool
  EXPECT_EQ(pool_out_size(5, 2, 2, 0), 2);     // the last column is dropped
  EXPECT_EQ(pool_out_size(7, 7, 1, 0), 1);
}

TEST(NnrefPool, RejectsPaddingBeyondHalfTheKernel) {
  EXPECT_THROW(maxpool2d_forward(Tensor(1, 1, 4, 4), PoolParams{2, 2, 1, 1, 2, 2}), Error);
}

TEST(NnrefPool, AvgPoolCountsPaddedZeros) {
  // 2x2 input 1..4, 3x3 window, padding 1: each window holds all four values and five zeros.
  const Tensor y = avgpool2d_forward(plane(2, 2, {1, 2, 3, 4}), PoolParams{3, 3, 1, 1, 1, 1});
  ASSERT_EQ(y.size(), 4u);
  for (float v : y.v) EXPECT_FLOAT_EQ(v, 10.0f / 9.0f);
}

TEST(NnrefPool, AvgPoolWithoutPaddingAveragesEachWindow) {
  const Tensor y = avgpool2d_forward(plane(2, 4, {1, 2, 3, 4, 5, 6, 7, 8}), PoolParams{2, 2, 2, 2});
  EXPECT_EQ(y.v, (std::vector<float>{3.5f, 5.5f}));
}

TEST(NnrefPool, AvgPoolBackwardSpreadsOverTheFullWindowCount) {
  // One 3x3 window with padding 1 over a 1x1 input: the input gets dy / 9.
  const Tensor dx = avgpool2d_backward(plane(1, 1, {9.0f}), PoolParams{3, 3, 1, 1, 1, 1}, 1, 1);
  EXPECT_EQ(dx.v, (std::vector<float>{1.0f}));
}

TEST(NnrefPool, GlobalAvgPoolAveragesEachPlane) {
  Tensor x(2, 2, 2, 2);
  for (std::size_t i = 0; i < x.size(); ++i) x.v[i] = static_cast<float>(i);
  const Tensor y = global_avgpool_forward(x);
  ASSERT_EQ(y.n, 2);
  ASSERT_EQ(y.c, 2);
  ASSERT_EQ(y.h, 1);
  EXPECT_EQ(y.v, (std::vector<float>{1.5f, 5.5f, 9.5f, 13.5f}));
  const Tensor dx = global_avgpool_backward(y, 2, 2);
  EXPECT_FLOAT_EQ(dx.at(1, 0, 1, 1), 9.5f / 4.0f);
}

TEST(NnrefPool, MaxPoolGradientMatchesFiniteDifferences) {
  std::mt19937 rng(41);
  Tensor x = shuffled_distinct(2, 3, 7, 7, rng);
  const PoolParams p{3, 3, 2, 2, 1, 1};  // ResNet stem: overlapping windows and padding
  const Tensor y = maxpool2d_forward(x, p);
  const std::vector<float> proj = random_vector(y.size(), rng);
  const Tensor dx = maxpool2d_backward(x, projection_grad(y, proj), p);
  const GradCheckResult g =
      check_gradient(x.v, dx.v, [&] { return projection_loss(maxpool2d_forward(x, p), proj); });
  EXPECT_LT(g.max_rel_error, 1e-3) << describe(g);
}

TEST(NnrefPool, AvgPoolGradientMatchesFiniteDifferences) {
  std::mt19937 rng(42);
  for (const PoolParams& p :
       {PoolParams{3, 3, 2, 2, 1, 1}, PoolParams{2, 2, 2, 2}, PoolParams{3, 2, 1, 2, 1, 0}}) {
    Tensor x = random_tensor(2, 2, 6, 7, rng);
    const Tensor y = avgpool2d_forward(x, p);
    const std::vector<float> proj = random_vector(y.size(), rng);
    const Tensor dx = avgpool2d_backward(projection_grad(y, proj), p, x.h, x.w);
    const GradCheckResult g =
        check_gradient(x.v, dx.v, [&] { return projection_loss(avgpool2d_forward(x, p), proj); });
    EXPECT_LT(g.max_rel_error, 1e-3)
        << "kernel " << p.kernel_h << "x" << p.kernel_w << ": " << describe(g);
  }
}

TEST(NnrefPool, GlobalAvgPoolGradientMatchesFiniteDifferences) {
  std::mt19937 rng(43);
  Tensor x = random_tensor(2, 3, 4, 5, rng);
  const std::vector<float> proj = random_vector(6, rng);
  const Tensor dx = global_avgpool_backward(projection_grad(global_avgpool_forward(x), proj), 4, 5);
  const GradCheckResult g =
      check_gradient(x.v, dx.v, [&] { return projection_loss(global_avgpool_forward(x), proj); });
  EXPECT_LT(g.max_rel_error, 1e-3) << describe(g);
}

}  // namespace
}  // namespace gb::nnref
