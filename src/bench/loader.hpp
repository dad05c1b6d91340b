// bench/loader.hpp: the `gpubase loader` suite, CPU half -- the data::Loader fed by a JPEG
// dataset, with the per-sample work of a training input pipeline (JPEG decode of the crop
// region, RandomResizedCrop + flip into the batch slot, HWC uint8), swept over worker counts.
//
// Each sweep point builds a Loader with that many workers, takes one warm-up batch, then takes
// whole batches until `seconds_per_point` have passed. Per point: images/s (the median of the
// per-batch rates -- the first batches after the warm-up come out of the prefetch ring at once,
// so the median, not the mean, is the steady rate), images/s per busy core, mean read / decode /
// augment ms per image, worker idle share, bad samples, CPU busy per usable core (/proc/stat
// before and after) and context switches/s.
//
// Napkin math (docs/decode.md): a 500x375 JPEG decodes its crop region in ~0.6 ms and resizes in
// ~0.6 ms, so one core should reach ~800 images/s -- the per-core target -- and N cores
// N times that until memory bandwidth or the consumer thread gets in the way.
//
// Results go through a ResultSink (keys: docs/results.md "loader.*"). Ctrl-C ends the sweep: the
// point in progress is dropped, the points measured are summarised and reported.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/probe.hpp"
#include "data/dataset.hpp"
#include "data/loader.hpp"

namespace gb::bench {

// The target for the CPU path, images/s per core on the synthetic ImageNet-like set.
inline constexpr double kLoaderTargetPerCoreImagesPerS = 800;
// The knee: the smallest worker count within this share of the best rate.
inline constexpr double kLoaderKneeShare = 0.97;

struct LoaderBenchOptions {
  std::size_t batch_size = 256;
  int image_size = 224;           // output side: image_size x image_size x 3, HWC uint8
  std::vector<unsigned> workers;  // sweep points, ascending; empty: default_worker_sweep()
  std::size_t prefetch_depth = 4;
  double seconds_per_point = 4;  // after one warm-up batch
  std::uint64_t seed = 0;
  // The GPU step the loader feeds for the data-wait share: batch / gpu_images_per_s long.
  // 3,000 images/s is about an eager-PyTorch ResNet-50 step on an H200 (bench/NOTES.md).
  double gpu_images_per_s = 3000;
};

// 1, 2, 4, 8, ... below `cores`, then `cores` itself.
std::vector<unsigned> default_worker_sweep(unsigned cores);

// The per-sample work: one JpegDecoder and scratch per worker (SampleView::worker), decode +
// RandomResizedCrop + flip into dst (image_size^2 * 3 bytes, HWC), stage times "decode" and
// "augment". A JPEG the decoder rejects is SampleResult::bad (the loader substitutes it).
data::ProcessFn jpeg_train_process(unsigned workers, int image_size);

// The Loader options of a benchmark run with `workers` worker threads.
data::LoaderOptions loader_options(const LoaderBenchOptions& options, unsigned workers);

// The next batch, starting the next epoch when one ends (epoch counts them); empty after Ctrl-C.
std::optional<data::Batch> next_batch(data::Loader& loader, std::uint32_t& epoch);

// One measured sweep point.
struct LoaderPoint {
  unsigned workers = 0;
  std::vector<double> batch_images_per_s;  // one per timed batch
  double images_per_s = 0;                 // median of batch_images_per_s
  double wall_images_per_s = 0;            // LoaderStats::images_per_s (includes the prefetched)
  double images_per_busy_core_s = 0;
  double read_ms = 0, decode_ms = 0, augment_ms = 0;  // mean per image
  double worker_idle_share = 0;
  std::size_t images = 0;  // timed
  std::size_t bad_samples = 0;
  std::vector<std::string> bad_examples;
  std::optional<double> cpu_busiest_core_pct;  // over the usable cores
  std::optional<double> cpu_mean_pct;
  std::optional<double> context_switches_per_s;
};

struct LoaderBenchOutcome {
  std::vector<LoaderPoint> points;
  bool interrupted = false;  // Ctrl-C: the points measured before it
};

// Runs the sweep on `dataset` and reports facts and results to `sink`. Throws gb::Error (usage)
// for a dataset whose samples are not JPEGs or bad options.
LoaderBenchOutcome run_loader_bench(const data::Dataset& dataset, const LoaderBenchOptions& options,
                                    ResultSink& sink);

// The data-wait share on a GPU (bench/gpu/loader_feed.cpp): the loader with `workers` feeds a
// stand-in GPU step of batch / gpu_images_per_s through pinned slots, H2D and normalization.
struct DataWaitMeasurement {
  unsigned workers = 0;
  double step_ms = 0;                    // asked
  std::vector<double> step_ms_measured;  // events around each timed step
  double wall_ms = 0;
  double wait_share_pct = 0;             // 1 - sum(steps) / wall
  double consumer_wait_ms = 0;           // the host blocked in Loader::next()
  double images_per_s = 0;
  std::size_t images = 0;
  bool interrupted = false;
};
// Empty without a GPU (or in a build without CUDA).
std::optional<DataWaitMeasurement> measure_data_wait(const data::Dataset& dataset,
                                                     const LoaderBenchOptions& options,
                                                     unsigned workers);
Result data_wait_result(const std::optional<DataWaitMeasurement>& m, const std::string& why_not);

// One batch's host-to-device copy from pinned and from pageable memory (median of 5, GB/s):
// why the loader's slots are pinned. Empty without a GPU.
struct BatchCopyMeasurement {
  std::size_t bytes = 0;
  double pinned_gbps = 0;
  double pageable_gbps = 0;
};
std::optional<BatchCopyMeasurement> measure_batch_copy(std::size_t bytes);

// The results a sweep summarises to (per point, best, per core, knee, oversubscription,
// stages, bad samples, the data-wait share not measured yet). Exposed for tests.
std::vector<Result> loader_results(const std::vector<LoaderPoint>& points);

}  // namespace gb::bench
