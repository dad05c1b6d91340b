// tests/unit/test_core_stats.cpp: core/stats, the one place repetitions become a median,
// spread and coefficient of variation.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/stats.hpp"

TEST(Stats, MedianOfOddCountIsTheMiddleValue) {
  const std::vector<double> v{5, 1, 3};
  EXPECT_DOUBLE_EQ(gb::compute_stats(v).median, 3);
}

TEST(Stats, MedianOfEvenCountIsTheMeanOfTheTwoMiddleValues) {
  const std::vector<double> v{4, 1, 3, 2};
  EXPECT_DOUBLE_EQ(gb::compute_stats(v).median, 2.5);
}

TEST(Stats, MinMaxMeanAndSampleStddev) {
  const std::vector<double> v{2, 4, 4, 4, 5, 5, 7, 9};
  const gb::SampleStats s = gb::compute_stats(v);
  EXPECT_EQ(s.n, 8u);
  EXPECT_DOUBLE_EQ(s.min, 2);
  EXPECT_DOUBLE_EQ(s.max, 9);
  EXPECT_DOUBLE_EQ(s.mean, 5);
  EXPECT_NEAR(s.stddev, std::sqrt(32.0 / 7.0), 1e-12);  // n-1 denominator
}

TEST(Stats, CoefficientOfVariationIsStddevOverMean) {
  const std::vector<double> v{9, 10, 11};
  const gb::SampleStats s = gb::compute_stats(v);
  EXPECT_DOUBLE_EQ(s.stddev, 1.0);
  EXPECT_DOUBLE_EQ(s.cv, 0.1);
}

TEST(Stats, CoefficientOfVariationIsZeroWhenMeanIsZero) {
  const std::vector<double> v{-1, 1};
  EXPECT_DOUBLE_EQ(gb::compute_stats(v).cv, 0);
}

TEST(Stats, SingleSampleHasNoSpread) {
  const std::vector<double> v{42};
  const gb::SampleStats s = gb::compute_stats(v);
  EXPECT_DOUBLE_EQ(s.median, 42);
  EXPECT_DOUBLE_EQ(s.stddev, 0);
  EXPECT_DOUBLE_EQ(s.cv, 0);
}

TEST(Stats, EmptySamplesGiveZeroCount) {
  const gb::SampleStats s = gb::compute_stats(std::vector<double>{});
  EXPECT_EQ(s.n, 0u);
  EXPECT_DOUBLE_EQ(s.median, 0);
}

TEST(Quantile, InterpolatesLinearlyBetweenOrderStatistics) {
  const std::vector<double> v{40, 10, 30, 20};  // sorted: 10 20 30 40
  EXPECT_DOUBLE_EQ(gb::quantile(v, 0.0), 10);
  EXPECT_DOUBLE_EQ(gb::quantile(v, 1.0), 40);
  EXPECT_DOUBLE_EQ(gb::quantile(v, 0.5), 25);
  EXPECT_DOUBLE_EQ(gb::quantile(v, 0.25), 17.5);  // numpy: position 0.75 -> 10 + 0.75 * 10
  EXPECT_DOUBLE_EQ(gb::quantile(v, 0.9), 37);
}

TEST(Quantile, ClampsQToTheUnitInterval) {
  const std::vector<double> v{1, 2, 3};
  EXPECT_DOUBLE_EQ(gb::quantile(v, -0.5), 1);
  EXPECT_DOUBLE_EQ(gb::quantile(v, 1.5), 3);
}

TEST(Quantile, OfNothingIsZero) { EXPECT_DOUBLE_EQ(gb::quantile({}, 0.5), 0); }
