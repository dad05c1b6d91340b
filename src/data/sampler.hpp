// data/sampler.hpp: the order in which an epoch visits a dataset -- shuffle, sharding across
// ranks, drop-last, batches of indices.
//
// Order: with shuffle, a permutation of 0..N-1 drawn by Fisher-Yates from the Philox stream
// (seed, epoch, Philox::kShuffleStream): a pure function of (seed, epoch, N), so every rank of a
// distributed job computes the same permutation without talking to the others, and a run can be
// resumed at any epoch. Without shuffle, 0..N-1 in order.
//
// Sharding (like torch's DistributedSampler): rank r of W takes positions r, r+W, r+2W, ... of
// the epoch's order. W rarely divides N, and the two ways out are:
//   drop_last = false (default): pad by wrapping -- the order is extended with its own first
//     ceil(N/W)*W - N entries -- so every rank gets ceil(N/W) samples. Every sample is seen
//     each epoch; a few are seen twice. Equal counts matter: a rank with one batch fewer would
//     leave the others waiting forever in the gradient all-reduce.
//   drop_last = true: the order is cut to floor(N/W)*W, every rank gets floor(N/W) samples, and
//     the last partial batch of each rank is dropped too (one flag, as torch users set both).
// Within a rank, batches are consecutive runs of batch_size samples; the last one is partial
// unless drop_last.
//
// Memory: two buffers of indices (the epoch's order, N entries, and this rank's shard), sized at
// construction and reused by every set_epoch(): 16 bytes per sample (1.28 M ImageNet images:
// 20 MB), the same at epoch 1 and epoch 100.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace gb::data {

struct SamplerOptions {
  std::size_t batch_size = 256;
  std::uint64_t seed = 0;
  bool shuffle = true;
  bool drop_last = false;  // see the file comment: cuts both the shard tail and the partial batch
  std::uint32_t rank = 0;
  std::uint32_t world_size = 1;
};

class Sampler {
 public:
  // Throws gb::Error (usage) for batch_size 0, world_size 0 or rank >= world_size.
  Sampler(std::size_t dataset_size, const SamplerOptions& options);

  // Computes the order of `epoch`; the spans below stay valid until the next call.
  void set_epoch(std::uint32_t epoch);
  std::uint32_t epoch() const { return epoch_; }

  std::size_t dataset_size() const { return dataset_size_; }
  const SamplerOptions& options() const { return options_; }

  // This rank's samples for the epoch, in order (samples_per_rank() entries).
  std::span<const std::size_t> indices() const { return shard_; }
  std::size_t samples_per_rank() const { return shard_.size(); }
  // Samples delivered per epoch: samples_per_rank() less a dropped partial batch.
  std::size_t samples_per_epoch() const;
  std::size_t num_batches() const;
  // Batch b's indices (batch_size of them, fewer for a partial last batch).
  std::span<const std::size_t> batch(std::size_t b) const;

  // Bytes of index buffers held (capacity): constant after construction.
  std::size_t capacity_bytes() const;

 private:
  std::size_t dataset_size_;
  SamplerOptions options_;
  std::uint32_t epoch_ = 0;
  std::vector<std::size_t> order_;  // the whole epoch's order, N entries
  std::vector<std::size_t> shard_;  // this rank's positions of order_ (after padding/cutting)
};

// Fisher-Yates of `order` (any contents) driven by Philox(seed, epoch, kShuffleStream).
void shuffle_indices(std::span<std::size_t> order, std::uint64_t seed, std::uint32_t epoch);

}  // namespace gb::data
