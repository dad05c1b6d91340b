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
// Napkin math (docs/datasets.md "Decode and augment"): a 500x375 JPEG decodes its crop region in
// ~0.6 ms and resizes in ~0.6 ms, so one core should reach ~800 images/s (the per-core target)
// and N cores N times that until memory bandwidth or the consumer thread gets in the way.
//
// Results go through a ResultSink (keys: docs/results.md "loader.*"). Ctrl-C ends the sweep: the
// point in progress is dropped, the points measured are summarised and reported.
//
// The input pipeline itself is src/pipeline (the CPU per-sample work, the device halves, the
// nvJPEG path and the CPU/GPU split); this suite measures it.
//
// --decode gpu|both adds the GPU decode path (pipeline/gpu/nvjpeg_batch.hpp, docs/loader.md):
// host threads read the files and parse headers, nvJPEG decodes whole batches (the hardware
// JPEG engines where the card has them), one kernel crops, resizes, flips and normalizes into
// the batch tensor with the CPU path's crop and flip draws.
//
// --decode both then runs the CPU/GPU split (pipeline/split.hpp): one Loader whose workers
// decode a share of the samples on the CPU and only read + parse the rest for nvJPEG, in the
// same batches; the share sent to the GPU defaults to what keeps both busy, R_gpu / (R_gpu +
// R_cpu) from the two rates just measured (--gpu-share overrides it).
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bench/suite.hpp"
#include "data/dataset.hpp"
#include "data/loader.hpp"
#include "pipeline/options.hpp"

namespace gb::bench {

// The CPU path's target, images/s per core on the synthetic ImageNet-like set.
inline constexpr double kLoaderTargetPerCoreImagesPerS = 800;
// The knee: the smallest worker count within this share of the best rate.
inline constexpr double kLoaderKneeShare = 0.97;
// The GPU decode path's target, end to end (files to the normalized batch tensor): above
// torchvision's batched decode call alone on an H200, with reading, cropping and H2D included.
inline constexpr double kLoaderGpuDecodeTargetImagesPerS = 15000;
// The target for one 16-core host, files to the batch tensor: enough to feed ResNet-50 in
// reduced precision on one H200 (about 7,000 images/s) with room to spare.
inline constexpr double kLoaderHostTargetImagesPerS = 10000;

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
  // Which paths run: the CPU sweep, the GPU (nvJPEG) path, or both (the CPU sweep first, then
  // the GPU path, then the split).
  pipeline::DecodeMode decode = pipeline::DecodeMode::cpu;
  bool strict = false;  // a bad sample fails the run, naming the file
  // The GPU decode path: host threads reading files and parsing headers (0: min(4, cores)),
  // nvJPEG backend ("auto", "hardware", "gpu_hybrid", "default"), and the largest JPEG a sample
  // slot holds (larger files are bad samples, counted, with the reason).
  unsigned gpu_decode_workers = 0;
  std::string nvjpeg_backend = "auto";
  std::size_t gpu_max_jpeg_bytes = std::size_t{1} << 20;
  // The CPU/GPU split (--decode both): share of the samples nvJPEG decodes, in (0, 1]; 0: from
  // the measured rates of the two paths.
  double gpu_share = 0;
  int device = 0;  // the CUDA device of the GPU parts (bench/suite.hpp open_device)
  // After the CPU sweep, the data-wait share of a stand-in GPU step (and its prefetch sweep);
  // off where a real training run measures it (`gpubase baseline`).
  bool data_wait = true;
};

// 1, 2, 4, 8, ... below `cores`, then `cores` itself.
std::vector<unsigned> default_worker_sweep(unsigned cores);

// The Loader options of a benchmark run with `workers` worker threads (the CPU path's).
data::LoaderOptions loader_options(const LoaderBenchOptions& options, unsigned workers);
// The input pipeline a benchmark run measures: the options' batch, size, prefetch, seed,
// strict and nvJPEG knobs, bf16 NCHW with ImageNet normalization, `workers` threads.
pipeline::PipelineOptions pipeline_options(const LoaderBenchOptions& options,
                                           pipeline::DecodeMode decode, unsigned workers);

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
  std::size_t substituted = 0;  // timed positions filled by a substitute for a bad sample
  std::vector<std::string> bad_examples;
  std::optional<double> cpu_busiest_core_pct;  // over the usable cores
  std::optional<double> cpu_mean_pct;
  std::optional<double> context_switches_per_s;
};

struct LoaderBenchOutcome {
  std::vector<LoaderPoint> points;
  bool interrupted = false;  // Ctrl-C: the points measured before it
};

// Runs what options.decode asks (the CPU sweep and its data-wait share, the GPU decode path, or
// both) on `dataset` and reports facts and results to `sink`. Throws gb::Error (usage) for a
// dataset whose samples are not JPEGs or bad options, and for a bad sample under strict.
// Where the loader's results print (ResultSink::declare_sections).
std::span<const SectionRule> loader_section_rules();

LoaderBenchOutcome run_loader_bench(const data::Dataset& dataset, const LoaderBenchOptions& options,
                                    ResultSink& sink);

// The data-wait share on a GPU (bench/gpu/loader_feed.cpp): the CPU-path input pipeline with
// `workers` feeds a stand-in GPU step of batch / gpu_images_per_s.
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

// The GPU decode path's input pipeline, measured (bench/gpu/loader_nvjpeg.cpp). Per-batch stage
// times: host read = CPU time the reader threads spent per batch (read + header + crop draw + copy
// into the pinned slot, summed over threads); decode = GPU time of the nvJPEG calls (events) and
// the time the calling thread was blocked in them; resize = the resize-crop-normalize kernel
// (events).
struct GpuDecodeMeasurement {
  std::string backend;       // "hardware", "gpu_hybrid", "default"
  std::string backend_note;  // why not the hardware engines, when not
  std::string library;       // "libnvjpeg.so.13 (13.0.1)"
  unsigned workers = 0;
  std::vector<double> batch_images_per_s;  // one per timed batch
  double wall_images_per_s = 0;            // images / wall time of the timed run
  std::size_t images = 0, batches = 0;
  double host_read_ms = 0;    // per batch, CPU ms summed over reader threads
  double decode_ms = 0;       // per batch, GPU (events)
  double decode_host_ms = 0;  // per batch, the consumer thread inside nvJPEG
  double resize_ms = 0;       // per batch, GPU (events)
  double consumer_wait_ms = 0;  // per batch, the consumer waiting for the readers
  std::optional<double> cpu_cores_used;  // process CPU time / wall time
  std::optional<double> cpu_busiest_core_pct;
  std::optional<double> cpu_mean_pct;
  std::size_t bad_samples = 0;       // rejected before decode (unreadable, bad header, too big)
  std::size_t decode_failures = 0;   // rejected by nvJPEG's decode (output left at the mean)
  std::size_t single_decodes = 0;    // images decoded one by one (not batchable, or batch failed)
  std::vector<std::string> bad_examples;
  double check_psnr_db = 0;          // validation before timing: GPU vs CPU on the first samples
  std::size_t check_images = 0;
  bool interrupted = false;
  // The CPU/GPU split: the share asked for, and the timed samples each path decoded.
  double gpu_share = 1;
  std::size_t gpu_decoded = 0, cpu_decoded = 0;
  double cpu_decode_ms = 0, cpu_augment_ms = 0;  // per CPU-decoded image, mean
  // The GPU path alone, then beside a busy GPU: feeding stand-in steps (one block spinning, the
  // SMs left free) of kBesideStepFactor x its own time per batch, and nvJPEG's call per batch
  // meanwhile. A GPU that hardly waits means the decode overlaps a step; one that waits about
  // 1 / (1 + kBesideStepFactor) of the time means the call waits for the device and the decode
  // and the step take turns (bench/NOTES.md b11, b12).
  std::optional<DataWaitMeasurement> beside_step;
  double beside_decode_host_ms = 0;
};
// The stand-in step beside the nvJPEG path, as a multiple of its own time per batch.
inline constexpr double kBesideStepFactor = 3.0;
// Below this share of waiting beside the stand-in step, the nvJPEG path's decode overlaps a step;
// one that takes turns with it waits ~25 % (1 / (1 + kBesideStepFactor)).
inline constexpr double kOverlapWaitPct = 10.0;
inline bool nvjpeg_overlaps_step(double beside_step_wait_pct) {
  return beside_step_wait_pct < kOverlapWaitPct;
}
// A CPU/GPU split run: the share nvJPEG decodes and the worker threads (each decodes its CPU
// samples and reads + parses its GPU ones).
struct DecodeSplit {
  double gpu_share = 1;
  unsigned workers = 1;
};
// Empty with why_not set when it cannot run: built without CUDA, no GPU, no libnvjpeg. With
// `split`, the CPU/GPU split instead of the GPU path alone.
std::optional<GpuDecodeMeasurement> measure_gpu_decode(const data::Dataset& dataset,
                                                       const LoaderBenchOptions& options,
                                                       ResultSink& sink, std::string& why_not,
                                                       std::optional<DecodeSplit> split = {});
// Its results (loader.gpu_decode.*), or a skipped loader.gpu_decode.images_per_s with why_not.
std::vector<Result> gpu_decode_results(const std::optional<GpuDecodeMeasurement>& m,
                                       const std::string& why_not);
// A split run's results (loader.split.*), or a skipped loader.split.images_per_s with why_not.
std::vector<Result> split_results(const std::optional<GpuDecodeMeasurement>& m,
                                  const std::string& why_not);

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
