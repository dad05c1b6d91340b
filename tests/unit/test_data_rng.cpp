// test_data_rng.cpp: Philox4x32-10 against Random123's published known-answer vectors
// (kat_vectors, "philox4x32 10 ..."), the (seed, epoch, stream) keying, and the ranges and
// moments of the derived draws.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <set>
#include <vector>

#include "data/rng.hpp"

namespace gb::data {
namespace {

TEST(RngPhilox, MatchesRandom123KnownAnswerForZeros) {
  const PhiloxCounter out = philox4x32_10({0, 0, 0, 0}, {0, 0});
  EXPECT_EQ(out, (PhiloxCounter{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
}

TEST(RngPhilox, MatchesRandom123KnownAnswerForAllOnes) {
  const PhiloxCounter out =
      philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff});
  EXPECT_EQ(out, (PhiloxCounter{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
}

TEST(RngPhilox, MatchesRandom123KnownAnswerForPiDigits) {
  const PhiloxCounter out =
      philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0});
  EXPECT_EQ(out, (PhiloxCounter{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(RngPhilox, StreamLayoutIsSeedKeyAndBlockEpochStreamCounter) {
  const std::uint64_t seed = 0x0123456789abcdefull;
  const std::uint64_t stream = 0xfedcba9876543210ull;
  Philox rng(seed, 7, stream);
  for (std::uint32_t block = 0; block < 3; ++block) {
    const PhiloxCounter expected =
        philox4x32_10({block, 7, 0x76543210, 0xfedcba98}, {0x89abcdef, 0x01234567});
    for (std::uint32_t word : expected) EXPECT_EQ(rng.next_u32(), word);
  }
  EXPECT_EQ(rng.words_drawn(), 12u);
}

TEST(RngPhilox, FirstBlockSkipsWholeBlocks) {
  Philox from_zero(5, 1, 42);
  for (int i = 0; i < 8; ++i) from_zero.next_u32();
  Philox from_two(5, 1, 42, 2);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(from_two.next_u32(), from_zero.next_u32());
}

TEST(RngPhilox, SameKeyGivesSameDrawsAndAnyKeyChangeGivesOthers) {
  auto first_words = [](Philox rng) {
    std::vector<std::uint32_t> w;
    for (int i = 0; i < 8; ++i) w.push_back(rng.next_u32());
    return w;
  };
  const auto base = first_words(Philox(1, 2, 3));
  EXPECT_EQ(first_words(Philox(1, 2, 3)), base);
  EXPECT_NE(first_words(Philox(2, 2, 3)), base);  // seed
  EXPECT_NE(first_words(Philox(1, 3, 3)), base);  // epoch
  EXPECT_NE(first_words(Philox(1, 2, 4)), base);  // sample index
  EXPECT_NE(first_words(Philox(1, 2, Philox::kShuffleStream)), base);
}

TEST(RngPhilox, NeighbouringSamplesShareNoDraws) {
  // 1,000 samples x 64 words: a shared stream would show up as repeated words.
  std::set<std::uint32_t> seen;
  std::size_t drawn = 0;
  for (std::uint64_t index = 0; index < 1000; ++index) {
    Philox rng(9, 0, index);
    for (int i = 0; i < 64; ++i, ++drawn) seen.insert(rng.next_u32());
  }
  // 64,000 random 32-bit words: about 0.5 birthday collisions expected.
  EXPECT_GE(seen.size(), drawn - 5);
}

TEST(RngUniform, StaysInUnitIntervalWithMeanAndVarianceOfUniform) {
  Philox rng(123, 0, 0);
  const int n = 200000;
  double sum = 0, sum_sq = 0;
  for (int i = 0; i < n; ++i) {
    const double u = rng.uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
    sum_sq += u * u;
  }
  const double mean = sum / n;
  const double var = sum_sq / n - mean * mean;
  EXPECT_NEAR(mean, 0.5, 0.005);  // stddev of the mean: 0.29 / sqrt(n) = 0.00065
  EXPECT_NEAR(var, 1.0 / 12.0, 0.002);
}

TEST(RngUniform, Carries53Bits) {
  // Each draw is k / 2^53; with 32 bits only, k would always be a multiple of 2^21.
  Philox rng(4, 0, 0);
  int low_bits_used = 0;
  for (int i = 0; i < 100; ++i) {
    const double k = rng.uniform() * 0x1.0p53;
    ASSERT_EQ(k, std::floor(k));
    if (std::fmod(k, 0x1.0p21) != 0) ++low_bits_used;
  }
  EXPECT_GT(low_bits_used, 95);
}

TEST(RngUniform, RangeOverloadScales) {
  Philox rng(8, 0, 0);
  for (int i = 0; i < 1000; ++i) {
    const double x = rng.uniform(0.08, 1.0);
    ASSERT_GE(x, 0.08);
    ASSERT_LT(x, 1.0);
  }
}

TEST(RngUniformU32, StaysBelowBoundAndHitsEveryValueEvenly) {
  Philox rng(77, 0, 0);
  const std::uint32_t bound = 10;
  std::vector<int> counts(bound, 0);
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    const std::uint32_t x = rng.uniform_u32(bound);
    ASSERT_LT(x, bound);
    ++counts[x];
  }
  for (int c : counts) EXPECT_NEAR(c, n / 10, 600);  // stddev ~95
}

TEST(RngUniformU32, DegenerateBoundsGiveZero) {
  Philox rng(1, 0, 0);
  EXPECT_EQ(rng.uniform_u32(0), 0u);
  EXPECT_EQ(rng.uniform_u32(1), 0u);
  EXPECT_EQ(rng.uniform_u64(0), 0u);
  EXPECT_EQ(rng.uniform_u64(1), 0u);
}

TEST(RngUniformU64, StaysBelowLargeBound) {
  Philox rng(2, 0, 0);
  const std::uint64_t bound = (std::uint64_t{1} << 40) + 12345;
  bool above_32_bits = false;
  for (int i = 0; i < 1000; ++i) {
    const std::uint64_t x = rng.uniform_u64(bound);
    ASSERT_LT(x, bound);
    above_32_bits = above_32_bits || x > 0xFFFFFFFFull;
  }
  EXPECT_TRUE(above_32_bits);
}

}  // namespace
}  // namespace gb::data
