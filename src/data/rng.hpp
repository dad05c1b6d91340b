// data/rng.hpp: the loader's random numbers -- Philox4x32-10, a counter-based generator (Salmon,
// Moraes, Dror, Shaw, "Parallel Random Numbers: As Easy as 1, 2, 3", SC'11; the generator cuRAND,
// JAX and numpy's Philox use).
//
// Why counter-based: a Philox output is a pure function of (key, counter), ten rounds of
// multiply-hi/lo and xor, with no state carried from one draw to the next. The loader keys one
// stream per sample by (seed, epoch, sample index), so a sample's augmentation draws are the
// same whichever worker runs it and in whatever order, and no two samples ever share a stream
// (the classic DataLoader bug: forked workers inheriting one RNG state and drawing the same
// crops).
//
// Layout of the 128-bit counter and 64-bit key (fixed: changing it changes every augmentation):
//   key     = {seed low 32 bits, seed high 32 bits}
//   counter = {block, epoch, stream low 32 bits, stream high 32 bits}
// stream = the sample index for a sample's draws; kShuffleStream for the epoch's shuffle (no
// dataset has 2^64 - 1 samples). `block` counts 4-word outputs within a stream, starting at
// first_block: 2^32 blocks = 16 GiB of draws per (seed, epoch, stream), far more than any crop.
//
// Cost: one block is ~20 integer multiplies for four 32-bit words, a few ns.
#pragma once
#include <array>
#include <concepts>
#include <cstdint>

namespace gb::data {

using PhiloxCounter = std::array<std::uint32_t, 4>;
using PhiloxKey = std::array<std::uint32_t, 2>;

// The Philox4x32-10 block function exactly as Random123's philox4x32(ctr, key): checked against
// its published known-answer vectors (tests/unit/test_data_rng.cpp).
PhiloxCounter philox4x32_10(PhiloxCounter counter, PhiloxKey key);

// What the augment side needs from a generator: uniform doubles in [0, 1).
template <class R>
concept RandomSource = requires(R& r) {
  { r.uniform() } -> std::same_as<double>;
};

// One stream of draws keyed by (seed, epoch, stream). Cheap to make (no set-up work): make one
// per sample. Not thread-safe; a stream belongs to the one job that made it.
class Philox {
 public:
  static constexpr std::uint64_t kShuffleStream = ~std::uint64_t{0};

  Philox(std::uint64_t seed, std::uint32_t epoch, std::uint64_t stream,
         std::uint32_t first_block = 0);

  std::uint32_t next_u32();
  std::uint64_t next_u64();  // two words, the first in the high half
  // Uniform in [0, 1) with 53 random bits (every double k / 2^53 equally likely).
  double uniform();
  // Uniform in [lo, hi).
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  // Uniform integer in [0, bound), unbiased (Lemire's multiply-shift with rejection); 0 when
  // bound is 0.
  std::uint32_t uniform_u32(std::uint32_t bound);
  // Uniform integer in [0, bound), unbiased (masked rejection); 0 when bound is 0.
  std::uint64_t uniform_u64(std::uint64_t bound);

  // 32-bit words drawn so far (for tests and accounting).
  std::uint64_t words_drawn() const { return words_drawn_; }

 private:
  void refill();

  PhiloxKey key_;
  PhiloxCounter counter_;
  PhiloxCounter buffer_{};
  unsigned used_ = 4;  // words of buffer_ already handed out
  std::uint64_t words_drawn_ = 0;
};

static_assert(RandomSource<Philox>);

}  // namespace gb::data
