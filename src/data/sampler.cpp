// data/sampler.cpp: epoch order, sharding and batches (see sampler.hpp).
#include "data/sampler.hpp"

#include <algorithm>
#include <numeric>
#include <string>
#include <utility>

#include "core/error.hpp"
#include "data/rng.hpp"

namespace gb::data {

namespace {

std::size_t shard_size(std::size_t n, const SamplerOptions& o) {
  const std::size_t w = o.world_size;
  return o.drop_last ? n / w : (n + w - 1) / w;
}

}  // namespace

void shuffle_indices(std::span<std::size_t> order, std::uint64_t seed, std::uint32_t epoch) {
  Philox rng(seed, epoch, Philox::kShuffleStream);
  // Fisher-Yates from the back: position i swaps with a uniform j in [0, i]. ~5 ns per sample
  // (a quarter of a Philox block plus a swap): 7 ms for ImageNet's 1.28 M per epoch.
  for (std::size_t i = order.size(); i > 1; --i) {
    const std::size_t j = static_cast<std::size_t>(rng.uniform_u64(i));
    std::swap(order[i - 1], order[j]);
  }
}

Sampler::Sampler(std::size_t dataset_size, const SamplerOptions& options)
    : dataset_size_(dataset_size), options_(options) {
  if (options_.batch_size == 0) throw Error(ErrorKind::usage, "sampler: batch size must be > 0");
  if (options_.world_size == 0) throw Error(ErrorKind::usage, "sampler: world size must be > 0");
  if (options_.rank >= options_.world_size) {
    throw Error(ErrorKind::usage, "sampler: rank " + std::to_string(options_.rank) +
                                      " is not below world size " +
                                      std::to_string(options_.world_size));
  }
  order_.resize(dataset_size_);
  shard_.resize(dataset_size_ == 0 ? 0 : shard_size(dataset_size_, options_));
  set_epoch(0);
}

void Sampler::set_epoch(std::uint32_t epoch) {
  epoch_ = epoch;
  if (dataset_size_ == 0) return;
  std::iota(order_.begin(), order_.end(), std::size_t{0});
  if (options_.shuffle) shuffle_indices(order_, options_.seed, epoch);
  // Rank r takes positions r, r + W, ...; positions past N wrap to the start (padding). With
  // drop_last the shard is floor(N/W) long, so positions never reach N.
  const std::size_t w = options_.world_size;
  for (std::size_t k = 0; k < shard_.size(); ++k) {
    shard_[k] = order_[(options_.rank + k * w) % dataset_size_];
  }
}

std::size_t Sampler::samples_per_epoch() const {
  if (!options_.drop_last) return shard_.size();
  return shard_.size() / options_.batch_size * options_.batch_size;
}

std::size_t Sampler::num_batches() const {
  const std::size_t b = options_.batch_size;
  return options_.drop_last ? shard_.size() / b : (shard_.size() + b - 1) / b;
}

std::span<const std::size_t> Sampler::batch(std::size_t b) const {
  const std::size_t begin = b * options_.batch_size;
  if (begin >= samples_per_epoch()) return {};
  const std::size_t count = std::min(options_.batch_size, samples_per_epoch() - begin);
  return std::span<const std::size_t>(shard_).subspan(begin, count);
}

std::size_t Sampler::capacity_bytes() const {
  return (order_.capacity() + shard_.capacity()) * sizeof(std::size_t);
}

}  // namespace gb::data
