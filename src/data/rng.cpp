// data/rng.cpp: Philox4x32-10 (see rng.hpp). The round function and constants follow Random123's
// philox.h: two 32x32->64 multiplies per round, the key bumped by the Weyl constants (golden
// ratio and sqrt(3) - 1) between rounds.
#include "data/rng.hpp"

namespace gb::data {

namespace {

constexpr std::uint32_t kM0 = 0xD2511F53;  // multipliers
constexpr std::uint32_t kM1 = 0xCD9E8D57;
constexpr std::uint32_t kW0 = 0x9E3779B9;  // key schedule
constexpr std::uint32_t kW1 = 0xBB67AE85;

inline PhiloxCounter round(const PhiloxCounter& c, const PhiloxKey& k) {
  const std::uint64_t p0 = std::uint64_t{kM0} * c[0];
  const std::uint64_t p1 = std::uint64_t{kM1} * c[2];
  const auto hi0 = static_cast<std::uint32_t>(p0 >> 32);
  const auto lo0 = static_cast<std::uint32_t>(p0);
  const auto hi1 = static_cast<std::uint32_t>(p1 >> 32);
  const auto lo1 = static_cast<std::uint32_t>(p1);
  return {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
}

}  // namespace

PhiloxCounter philox4x32_10(PhiloxCounter counter, PhiloxKey key) {
  counter = round(counter, key);
  for (int r = 1; r < 10; ++r) {
    key[0] += kW0;
    key[1] += kW1;
    counter = round(counter, key);
  }
  return counter;
}

Philox::Philox(std::uint64_t seed, std::uint32_t epoch, std::uint64_t stream,
               std::uint32_t first_block)
    : key_{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)},
      counter_{first_block, epoch, static_cast<std::uint32_t>(stream),
               static_cast<std::uint32_t>(stream >> 32)} {}

void Philox::refill() {
  buffer_ = philox4x32_10(counter_, key_);
  ++counter_[0];  // wraps after 2^32 blocks (16 GiB of draws): see rng.hpp
  used_ = 0;
}

std::uint32_t Philox::next_u32() {
  if (used_ == 4) refill();
  ++words_drawn_;
  return buffer_[used_++];
}

std::uint64_t Philox::next_u64() {
  const std::uint64_t hi = next_u32();
  return (hi << 32) | next_u32();
}

double Philox::uniform() {
  // The top 53 bits of a 64-bit draw, times 2^-53: exactly representable, < 1.
  return static_cast<double>(next_u64() >> 11) * 0x1.0p-53;
}

std::uint32_t Philox::uniform_u32(std::uint32_t bound) {
  if (bound == 0) return 0;
  // Lemire, "Fast Random Integer Generation in an Interval" (2019): the high word of
  // x * bound is uniform once the few low words below 2^32 mod bound are rejected.
  std::uint64_t m = std::uint64_t{next_u32()} * bound;
  auto low = static_cast<std::uint32_t>(m);
  if (low < bound) {
    const std::uint32_t threshold = (0u - bound) % bound;
    while (low < threshold) {
      m = std::uint64_t{next_u32()} * bound;
      low = static_cast<std::uint32_t>(m);
    }
  }
  return static_cast<std::uint32_t>(m >> 32);
}

std::uint64_t Philox::uniform_u64(std::uint64_t bound) {
  if (bound == 0) return 0;
  if (bound <= 0xFFFFFFFFull) return uniform_u32(static_cast<std::uint32_t>(bound));
  // Smallest all-ones mask covering bound - 1; fewer than two draws on average.
  std::uint64_t mask = bound - 1;
  mask |= mask >> 1;
  mask |= mask >> 2;
  mask |= mask >> 4;
  mask |= mask >> 8;
  mask |= mask >> 16;
  mask |= mask >> 32;
  std::uint64_t x = next_u64() & mask;
  while (x >= bound) x = next_u64() & mask;
  return x;
}

}  // namespace gb::data
