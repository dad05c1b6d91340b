// test_data_sampler.cpp: the epoch order -- a valid permutation, a pure function of (seed,
// epoch), sharding that is disjoint and covering (padded by wrapping, or cut with drop_last),
// batches, and buffers that do not grow across epochs.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>
#include <vector>

#include "core/error.hpp"
#include "data/sampler.hpp"

namespace gb::data {
namespace {

std::vector<std::size_t> order_of(std::size_t n, SamplerOptions o, std::uint32_t epoch) {
  Sampler s(n, o);
  s.set_epoch(epoch);
  return {s.indices().begin(), s.indices().end()};
}

bool is_permutation_of_iota(std::vector<std::size_t> v) {
  std::sort(v.begin(), v.end());
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (v[i] != i) return false;
  }
  return true;
}

TEST(SamplerOrder, ShuffledEpochIsAPermutation) {
  const auto order = order_of(1000, {.batch_size = 32, .seed = 3}, 0);
  ASSERT_EQ(order.size(), 1000u);
  EXPECT_TRUE(is_permutation_of_iota(order));
  std::vector<std::size_t> iota(1000);
  std::iota(iota.begin(), iota.end(), std::size_t{0});
  EXPECT_NE(order, iota);
}

TEST(SamplerOrder, SameSeedAndEpochGiveSameOrder) {
  const SamplerOptions o{.batch_size = 8, .seed = 11};
  EXPECT_EQ(order_of(500, o, 4), order_of(500, o, 4));
  // Recomputing an earlier epoch on a used sampler gives it again (resume at any epoch).
  Sampler s(500, o);
  s.set_epoch(4);
  const std::vector<std::size_t> first(s.indices().begin(), s.indices().end());
  s.set_epoch(5);
  s.set_epoch(4);
  EXPECT_EQ(std::vector<std::size_t>(s.indices().begin(), s.indices().end()), first);
}

TEST(SamplerOrder, DifferentEpochsAndSeedsDiffer) {
  const SamplerOptions o{.batch_size = 8, .seed = 11};
  EXPECT_NE(order_of(500, o, 0), order_of(500, o, 1));
  SamplerOptions other = o;
  other.seed = 12;
  EXPECT_NE(order_of(500, o, 0), order_of(500, other, 0));
}

TEST(SamplerOrder, ShuffleIsRoughlyUniformOverPositions) {
  // Where sample 0 lands over 4,000 epochs of a 4-sample dataset: each place ~1,000 times.
  std::vector<int> counts(4, 0);
  Sampler s(4, {.batch_size = 1, .seed = 1});
  for (std::uint32_t e = 0; e < 4000; ++e) {
    s.set_epoch(e);
    const auto idx = s.indices();
    ++counts[static_cast<std::size_t>(std::find(idx.begin(), idx.end(), 0) - idx.begin())];
  }
  for (int c : counts) EXPECT_NEAR(c, 1000, 120);  // stddev ~27
}

TEST(SamplerOrder, NoShuffleVisitsInDatasetOrder) {
  const auto order = order_of(10, {.batch_size = 4, .shuffle = false}, 3);
  EXPECT_EQ(order, (std::vector<std::size_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
}

TEST(SamplerBatches, LastBatchIsPartialUnlessDropLast) {
  Sampler keep(10, {.batch_size = 4, .shuffle = false});
  ASSERT_EQ(keep.num_batches(), 3u);
  EXPECT_EQ(keep.samples_per_epoch(), 10u);
  EXPECT_EQ(std::vector<std::size_t>(keep.batch(2).begin(), keep.batch(2).end()),
            (std::vector<std::size_t>{8, 9}));
  EXPECT_TRUE(keep.batch(3).empty());

  Sampler drop(10, {.batch_size = 4, .shuffle = false, .drop_last = true});
  EXPECT_EQ(drop.num_batches(), 2u);
  EXPECT_EQ(drop.samples_per_epoch(), 8u);
  EXPECT_TRUE(drop.batch(2).empty());
}

TEST(SamplerShards, PaddedShardsAreEqualDisjointExceptPaddingAndCoverEverySample) {
  const std::size_t n = 103;
  const std::uint32_t world = 4;  // 103 = 4 * 25 + 3: one padded entry
  std::vector<std::size_t> all;
  for (std::uint32_t r = 0; r < world; ++r) {
    const auto shard = order_of(n, {.batch_size = 8, .seed = 5, .rank = r, .world_size = world}, 2);
    EXPECT_EQ(shard.size(), 26u) << "rank " << r;
    all.insert(all.end(), shard.begin(), shard.end());
  }
  ASSERT_EQ(all.size(), 104u);
  EXPECT_EQ(std::set<std::size_t>(all.begin(), all.end()).size(), n);  // covering, 1 repeat
  // The repeat is the first sample of the epoch's order (wrapping), as torch pads.
  const auto global = order_of(n, {.batch_size = 8, .seed = 5}, 2);
  EXPECT_EQ(std::count(all.begin(), all.end(), global[0]), 2);
}

TEST(SamplerShards, DropLastShardsAreEqualAndDisjoint) {
  const std::size_t n = 103;
  const std::uint32_t world = 4;
  std::vector<std::size_t> all;
  for (std::uint32_t r = 0; r < world; ++r) {
    const SamplerOptions o{
        .batch_size = 5, .seed = 5, .drop_last = true, .rank = r, .world_size = world};
    const auto shard = order_of(n, o, 2);
    EXPECT_EQ(shard.size(), 25u);
    all.insert(all.end(), shard.begin(), shard.end());
  }
  EXPECT_EQ(std::set<std::size_t>(all.begin(), all.end()).size(), 100u);  // no repeats
}

TEST(SamplerShards, RanksAgreeOnTheEpochOrder) {
  // Rank r's k-th sample is position r + k*W of the single-process order.
  const auto global = order_of(40, {.batch_size = 4, .seed = 9}, 1);
  const auto rank1 = order_of(40, {.batch_size = 4, .seed = 9, .rank = 1, .world_size = 4}, 1);
  for (std::size_t k = 0; k < rank1.size(); ++k) EXPECT_EQ(rank1[k], global[1 + 4 * k]);
}

TEST(SamplerShards, MoreRanksThanSamplesStillGivesEveryRankOne) {
  const auto shard = order_of(3, {.batch_size = 2, .rank = 4, .world_size = 5}, 0);
  ASSERT_EQ(shard.size(), 1u);
  EXPECT_LT(shard[0], 3u);
}

TEST(SamplerOptions, RejectsZeroBatchAndBadRank) {
  EXPECT_THROW(Sampler(10, {.batch_size = 0}), Error);
  EXPECT_THROW(Sampler(10, {.rank = 2, .world_size = 2}), Error);
  EXPECT_THROW(Sampler(10, {.world_size = 0}), Error);
}

TEST(SamplerOptions, EmptyDatasetHasNoBatches) {
  Sampler s(0, {.batch_size = 4});
  EXPECT_EQ(s.num_batches(), 0u);
  EXPECT_TRUE(s.indices().empty());
}

TEST(SamplerMemory, BuffersDoNotGrowAcrossEpochs) {
  Sampler s(10000, {.batch_size = 64, .seed = 2, .world_size = 3});
  const std::size_t bytes = s.capacity_bytes();
  EXPECT_LE(bytes, 2 * 10000 * sizeof(std::size_t));
  for (std::uint32_t e = 1; e < 6; ++e) {
    s.set_epoch(e);
    EXPECT_EQ(s.capacity_bytes(), bytes);
  }
}

}  // namespace
}  // namespace gb::data
