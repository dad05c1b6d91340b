// data/loader.hpp: the loader's CPU core -- a pool of worker threads that turns an epoch's
// batches of sample indices into filled batch slots, in order, with per-stage timing.
//
//   Loader loader(dataset, options, process, allocator);
//   loader.start_epoch(e);
//   while (auto b = loader.next()) { use b->data, b->labels, b->size; loader.release(*b); }
//
// The per-sample work (JPEG decode, RandomResizedCrop, flip) is not here: it is the `process`
// callback, called by a worker as process(sample, rng, dst). It gets the sample's bytes and label,
// a Philox stream keyed by (seed, epoch, sample index), and the sample's place in the batch slot
// (options.sample_bytes bytes); it must fill all of dst and return good() with its stage times,
// or bad("reason") for bad data (a truncated JPEG). Throwing is for bugs: the exception reaches
// the consumer's next().
//
// Slots: a ring of prefetch_depth slots, each batch_size * sample_bytes of output followed by
// batch_size int32 labels, allocated once by the allocator callback (pinned memory on the GPU
// path, plain memory here). Batch b of an epoch fills slot (b + o) % depth, o advancing by
// num_batches() with each epoch begun, so the ring runs on across epochs (an epoch's first batch
// takes the slot freed first); a slot takes its next batch only once the consumer released the
// one before (the GPU path releases once the H2D copy's event has completed). Workers take
// single samples, not whole batches, so one slow sample holds up only its own position; batches
// are delivered strictly in order whatever order the workers finish in.
//
// Look-ahead of one epoch: once every position of epoch e has been handed to a worker, the
// workers begin epoch e + 1 in the slots e no longer needs (idle ones, and each as the consumer
// releases its last batch of e), with e + 1's order and Philox keys, so they do not idle while
// the consumer takes e's last batches and calls start_epoch(e + 1). Work of e always comes first,
// and at most one batch per slot of e + 1 is filled before start_epoch(e + 1). That call adopts
// the work; any other start_epoch() discards it (see start_epoch). Either way the batches are
// the ones a fresh start_epoch() would give, byte for byte.
//
// Determinism: a batch's bytes depend on (seed, epoch, dataset) only -- the same with 1 or 16
// workers -- as long as `process` uses only its arguments (SampleView::worker is there for
// per-worker state such as a decoder handle, never for the output).
//
// Bad samples (a read that throws gb::Error, or process returning bad()): by default the
// position is filled with a substitute: the next sample in this rank's epoch order (wrapping)
// that is good, processed with the rng of (seed + t * 0x9E3779B97F4A7C15, epoch, substitute)
// where t is how many places further it is. Batches stay full and the result is the same
// whichever worker runs it, so determinism holds; a substitute's crop differs from its own
// appearance in the epoch. Known-bad samples are remembered (one bit each), so a run of bad
// files is not re-read for every position. With strict, the first bad sample stops the epoch and
// next() throws gb::Error (usage) naming it (dataset.sample_name(i)).
//
// Shutdown: stop() (and the destructor) lets each worker finish the sample in hand and joins
// them, even while batches are in flight or held. Ctrl-C (gb::cancel_requested()) ends the epoch
// early: next() returns nothing more, and epoch_cancelled() says why.
//
// Memory is fixed after the first epoch: the slots (allocated once), two samplers' index buffers
// (the current epoch's order and the look-ahead's, 2 x 16 bytes per sample; they swap roles, never
// grow), one scratch vector per worker (grown to the largest sample a reader had to copy), and a
// bitmap of known-bad samples (N bits).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "data/dataset.hpp"
#include "data/rng.hpp"
#include "data/sampler.hpp"

namespace gb::data {

inline constexpr std::size_t kMaxProcessStages = 4;

struct SampleView {
  std::span<const std::uint8_t> bytes;  // valid during the call only
  std::int32_t label = 0;
  std::size_t index = 0;  // in the dataset
  unsigned worker = 0;    // 0 .. workers-1: for per-worker state, never for the output
};

struct SampleResult {
  bool ok = true;
  std::string reason;  // when !ok: what is wrong with the data, for messages
  // Seconds spent in each stage named by LoaderOptions::process_stages (decode, augment).
  std::array<double, kMaxProcessStages> stage_s{};

  static SampleResult good() { return {}; }
  static SampleResult bad(std::string why) {
    SampleResult r;
    r.ok = false;
    r.reason = std::move(why);
    return r;
  }
};

using ProcessFn =
    std::function<SampleResult(const SampleView& sample, Philox& rng, std::span<std::uint8_t> dst)>;

// Where slot memory comes from. allocate(bytes) returns memory aligned to at least 64 bytes (or
// throws); deallocate(p, bytes) returns it. Called only from the Loader's constructor and
// destructor.
struct SlotAllocator {
  std::function<void*(std::size_t bytes)> allocate;
  std::function<void(void* p, std::size_t bytes)> deallocate;
};
// Plain, page-aligned host memory (CPU use and tests).
SlotAllocator host_slot_allocator();

struct LoaderOptions {
  SamplerOptions sampling;       // batch size, seed, shuffle, drop_last, rank, world size
  std::size_t sample_bytes = 0;  // output bytes per sample (224 x 224 x 3 = 150,528)
  unsigned workers = 1;
  std::size_t prefetch_depth = 4;  // batch slots in the ring
  bool strict = false;             // a bad sample is an error instead of being substituted
  // Names of the stage times process() reports, in SampleResult::stage_s order (at most 4).
  std::vector<std::string> process_stages = {"decode", "augment"};
};

// A filled batch, lent to the consumer until release().
struct Batch {
  std::uint32_t epoch = 0;
  std::size_t number = 0;                // 0 .. num_batches()-1, delivered in this order
  std::size_t size = 0;                  // samples: batch_size, or fewer for a partial last batch
  std::size_t slot = 0;                  // ring position ((number + epoch's offset) % depth)
  std::span<std::uint8_t> data;          // size * sample_bytes, sample j at j * sample_bytes
  std::span<std::int32_t> labels;        // size
  std::span<const std::size_t> indices;  // dataset index of each sample, substitutes included
  std::size_t substituted = 0;           // positions filled by a substitute for a bad sample
};

// A total of timed events.
struct TimeTotal {
  double total_s = 0;
  double max_s = 0;
  std::size_t count = 0;
  void add(double s);
  double mean_s() const { return count == 0 ? 0 : total_s / static_cast<double>(count); }
};

struct StageTotal {
  std::string name;
  TimeTotal time;
};

// Totals since construction or reset_stats(). Worker times are summed over workers.
struct LoaderStats {
  unsigned workers = 0;
  std::size_t samples = 0;                // delivered in batches
  std::size_t batches = 0;                // delivered
  std::size_t substituted = 0;            // positions filled by a substitute
  std::size_t bad_samples = 0;            // distinct dataset samples found bad
  std::vector<std::string> bad_examples;  // the first few "<sample name>: <reason>"
  std::size_t epochs_cancelled = 0;       // ended early by Ctrl-C

  // Epochs running: start_epoch to the last batch delivered; an epoch start_epoch() adopted from
  // the look-ahead runs from the last epoch's end instead, so back-to-back epochs count as one
  // unbroken stretch. Work done ahead for the next epoch is added to the worker totals below when
  // start_epoch() adopts or discards it; bad_samples and bad_examples count a bad sample when a
  // worker finds it.
  double wall_s = 0;
  TimeTotal read;                     // dataset.read, per attempt
  TimeTotal process;                  // the whole process() call, per attempt
  std::vector<StageTotal> stages;     // process()'s own stages (decode, augment)
  double wait_slot_s = 0;             // workers with work to do but every slot full or held
  TimeTotal batch_latency;            // slot handed to the workers -> batch complete
  TimeTotal consumer_wait;            // next() blocked for its batch (the GPU waiting for data)
  std::vector<double> worker_busy_s;  // per worker: reading + processing

  double busy_s() const;
  double images_per_s() const;            // samples / wall_s
  double images_per_busy_core_s() const;  // samples / (sum of worker busy seconds)
  double worker_idle_share() const;       // 1 - busy / (workers * wall_s)
};

// Memory the loader holds, for checking it stays constant across epochs.
struct LoaderMemory {
  std::size_t slot_bytes = 0;     // allocated through the SlotAllocator
  std::size_t scratch_bytes = 0;  // capacity of the workers' read scratch vectors
  std::size_t index_bytes = 0;    // sampler buffers, slot index arrays, known-bad bitmap
  bool operator==(const LoaderMemory&) const = default;
};

class Loader {
 public:
  // Starts the workers; they wait for start_epoch(). Throws gb::Error (usage) for bad options
  // (sample_bytes 0, workers 0, prefetch_depth 0, more than 4 process stages, no process).
  // `dataset` must outlive the Loader.
  Loader(const Dataset& dataset, LoaderOptions options, ProcessFn process,
         SlotAllocator allocator = host_slot_allocator());
  ~Loader();  // stop()
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  // Begins `epoch` (its order from the sampler).
  // Adoption: called with e + 1 once epoch e delivered all its batches (next() returned nothing,
  // not by Ctrl-C or an error), it takes over the work the look-ahead has done on e + 1: it
  // waits for nothing (at most for e + 1's order, if a worker is still computing it), jobs in
  // hand carry on, and batches already filled are delivered by next() at once. A worker error
  // the look-ahead met is rethrown by next() from now on, never by e's.
  // Otherwise (another epoch, or e not finished): the running epoch and any look-ahead are
  // abandoned (samples in hand finish first) and `epoch` starts afresh.
  // Batches of the last epoch may still be held (a copy reading them): their slots are left
  // alone and join the new epoch when released, while the free slots fill at once, so prefetch
  // runs on across the epoch boundary. The epoch's clock (LoaderStats::wall_s) starts here, or,
  // when adopting, where the last epoch's stopped (its work began then).
  void start_epoch(std::uint32_t epoch);
  // The epoch's next batch in order, waiting for it; nothing at the end of the epoch, after
  // stop(), or once Ctrl-C was requested. Rethrows a worker's error (strict bad sample, an
  // exception in process()) -- and keeps rethrowing it until the next start_epoch(). Throws
  // gb::Error (runtime) when the batch's slot is held by the consumer (release first).
  std::optional<Batch> next();
  // Gives the batch's slot back to the workers.
  void release(const Batch& batch);
  // Joins every worker; idempotent. Afterwards next() returns nothing.
  void stop();

  bool epoch_cancelled() const;
  std::size_t num_batches() const;  // per epoch, this rank
  const Sampler& sampler() const;   // the current epoch's order; valid until start_epoch()
  const LoaderOptions& options() const;
  LoaderStats stats() const;
  void reset_stats();
  LoaderMemory memory() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gb::data
