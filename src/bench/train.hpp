// bench/train.hpp: the `gpubase train` suite -- training throughput of the engine in src/nn
// (ResNet-50 v1.5, MobileNetV2, a small ResNet for 28x28 inputs) per precision, on a synthetic
// batch that lives on the GPU, so the figure is the GPU's training speed and nothing else.
//
// Per configuration (model, precision, batch): build the Trainer, make the synthetic batch, run
// `warmup` steps (with --graph the step is captured during them), then `steps` timed steps with
// one CUDA event between consecutive steps and no host synchronisation until the end. Step time
// = the time between two events, so a host that cannot enqueue fast enough shows up as slower
// steps, not as a hidden gap. images/s = batch / median step time.
//
// Napkin math (H200, batch 256): ResNet-50 is ~4.1 GFLOP forward per 224x224 image, ~3x that
// for a training step: 256 x 12.3 GFLOP = 3.15 TFLOP per step. At PyTorch's 5,823 img/s (FP16
// AMP) a step takes 44 ms, ~280 TFLOP/s, a third of the card's dense FP16 rate; FP32 (1,065
// img/s) is 240 ms a step. 20 warm-up + 50 timed steps of the four precisions: ~35 s plus one
// algorithm search per model and precision.
//
// This file is the CPU half: options, validation, result keys, the skipped results, the
// summary of a measurement into Results. The GPU half (bench/gpu/train_run.cpp) needs CUDA and
// the engine; without them every configuration is reported skipped with the reason.
// Keys: docs/results.md "train.*"; usage: docs/train.md.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bench/suite.hpp"
#include "core/result.hpp"
#include "pipeline/options.hpp"

namespace gb::bench {

// The spellings of core/vocabulary.hpp's models and precisions, in report order.
const std::vector<std::string>& train_models();      // resnet50, mobilenet_v2, small_resnet
const std::vector<std::string>& train_precisions();  // fp32, tf32, fp16, bf16

// With --graph the first warm-up step(s) capture the step; at least this many warm-up steps so
// the capture and the first replays are never timed.
inline constexpr int kTrainMinGraphWarmup = 3;

// What TrainBenchOptions::pick_feed decides.
struct TrainFeedChoice {
  pipeline::DecodeMode decode = pipeline::DecodeMode::cpu;
  unsigned workers = 0;  // 0: the pipeline's default for the decode mode
  double gpu_share = 0;  // both: the share to nvJPEG; 0: balanced from both paths measured alone
  std::string why;       // said in the run: "the CPU/GPU split: ..."
};
inline constexpr int kTrainModelAloneSteps = 10;

struct TrainBenchOptions {
  std::vector<std::string> models;      // empty: resnet50
  std::vector<std::string> precisions;  // empty: all four
  int batch = 256;
  int steps = 50;   // timed
  int warmup = 20;  // untimed, first
  // > 0: the timed steps also end once this many seconds (host clock) have passed, so a run
  // fed by a slow loader takes as long as a fast one (`gpubase baseline`'s minute of training).
  double max_timed_s = 0;
  // The step captured once in the warm-up and replayed: no per-call host cost (cuDNN's legacy
  // API spends 0.1-1.5 ms of host time per convolution call, more than some kernels take).
  bool cuda_graph = true;
  // Steps queued on the GPU at most: before a step is launched the host waits, asleep, for the
  // step this many before it to end. 0: no limit (the host runs ahead until the driver's queue
  // is full and then waits in the driver, which spins on a core by default).
  int max_in_flight = 2;
  std::uint64_t seed = 0;  // weight initialisation; the synthetic batch uses seed + 1
  int device = 0;
  bool report_environment = true;  // host and GPU facts (baseline has them from the probe)
  // Real input instead of the synthetic batch: a JPEG dataset (ImageFolder, WebDataset shards,
  // .gbpack) through the loader (decode + RandomResizedCrop + flip on `data_workers` CPU
  // threads, pinned slots, H2D on its own stream, normalization on the GPU), and the share of
  // step time the GPU waited for it. resnet50 and mobilenet_v2 only (3x224x224 inputs).
  // How the input pipeline (src/pipeline) decodes it: cpu (the workers decode, the GPU copies
  // and normalizes), gpu (nvJPEG decodes whole batches, one kernel crops, resizes and
  // normalizes) or both (the CPU/GPU split); for both, the share of samples nvJPEG decodes in
  // (0, 1], 0: the balanced share from both paths measured alone for a few batches first.
  std::string data;
  pipeline::DecodeMode data_decode = pipeline::DecodeMode::cpu;
  double data_gpu_share = 0;
  unsigned data_workers = 0;  // 0: the pipeline's default for the decode mode
  std::size_t data_prefetch = 4;
  // Fed runs: when set, the model is first timed alone on the feed's own input buffers (random
  // images and labels; kTrainModelAloneSteps steps after the warm-up steps that capture its
  // graph, so the capture is not repeated), and this picks the input pipeline's decode mode and
  // workers from that rate before the pipeline starts (`gpubase baseline`: a loader that barely
  // outruns the model leaves the GPU waiting). Its `why` lands in TrainMeasurement::data_feed.
  std::function<TrainFeedChoice(double model_images_per_s)> pick_feed;
  // Called as each configuration's timed steps begin, after its build, warm-up and feed start
  // (`gpubase baseline`: the in-process watch judges the timed steps alone).
  std::function<void()> on_timed_start;
};

// Where training results print: one configuration per row (ResultSink::declare_sections).
std::span<const SectionRule> train_section_rules(bool fed_by_loader);

// One measured configuration.
struct TrainConfig {
  std::string model;
  std::string precision;
  int batch = 256;
  bool cuda_graph = true;
};

// Every (model, precision) asked for, models outer, each in the order of train_models() /
// train_precisions() with duplicates removed. Throws gb::Error (usage) for an unknown name
// (listing the valid ones) and for batch, steps or warm-up out of range.
std::vector<TrainConfig> train_configs(const TrainBenchOptions& options);

// "train.resnet50.bf16.b256.<figure>"; figure is images_per_s, step_ms or memory_gib.
std::string train_key(const TrainConfig& c, std::string_view figure);
// "ResNet-50", "MobileNetV2", "small ResNet (28x28)"; "BF16"; for labels and tables.
std::string train_model_title(std::string_view model);
std::string train_precision_title(std::string_view precision);

// What one configuration measured (bench/gpu/train_run.cpp fills it; tests build it by hand).
struct TrainMeasurement {
  TrainConfig config;
  int warmup = 0;
  int steps_asked = 0;
  std::vector<double> step_ms;      // one per timed step that ran
  std::optional<float> first_loss;  // after the first warm-up step
  std::optional<float> final_loss;  // after the last timed step
  std::size_t parameter_count = 0;
  std::size_t trainer_bytes = 0;           // Trainer::device_bytes(): what the engine allocated
  std::optional<std::size_t> used_bytes;   // cudaMemGetInfo: device memory gone while it ran
  std::optional<std::size_t> total_bytes;  // cudaMemGetInfo: the device's memory
  std::string input_layout;                // "NHWC bf16"
  // FP16: loss-scaler state over the timed steps.
  std::optional<float> loss_scale;
  std::size_t skipped_steps = 0;
  std::optional<Telemetry> telemetry;  // NVML over the timed steps
  // CPU time of the thread that launched the timed steps, % of one core over their wall time
  // (its own clock: taking batches, starting their copies, launching, waiting).
  std::optional<double> launch_thread_cpu_pct;
  std::string error;         // the engine's message (out of memory, ...): a failed configuration
  bool interrupted = false;  // Ctrl-C during the timed steps: step_ms holds those that ran
  // Fed by the loader (TrainBenchOptions::data): the GPU time of each timed step alone (events
  // right around it; step_ms also holds any wait for data), and what fed it.
  std::vector<double> gpu_step_ms;
  std::string data_source;      // "ImageFolder /data/train (1,281,167 samples), CPU decode, ..."
  std::size_t bad_samples = 0;  // substituted by the loader during the run
  std::string data_decode;      // "cpu", "gpu", "both"; empty: the synthetic batch
  std::optional<double> data_gpu_share;  // both: the share of samples sent to nvJPEG
  std::string data_gpu_share_source;     // "asked", or the two rates it was balanced from
  std::string data_nvjpeg_backend;       // gpu, both: "hardware", ...
  std::string data_nvjpeg_memory;        // gpu, both: "pooled (flags no_pipeline)", "driver ..."
  std::size_t data_decode_failures = 0;  // gpu, both: rejected by nvJPEG (left at the mean)
  // gpu, both, over the timed steps' batches: the pipeline's decode thread inside nvJPEG's
  // host stage and nvJPEG's GPU span (events on its stream), per batch: the loader stage
  // measures the same with the GPU otherwise idle, so the two side by side show what training
  // does to the decode.
  std::optional<double> data_decode_host_ms, data_decode_gpu_ms;
  // pick_feed: the model alone on the feed's buffers (batch / median step), and the choice.
  std::optional<double> model_alone_images_per_s;
  std::string data_feed;
  // The input pipeline could not run here (no libnvjpeg for gpu or both): the configuration
  // is skipped with this reason.
  std::string skipped_reason;
  // Where the configuration's wall time went, in order: "build" (the engine and, with --data,
  // the input pipeline), "model_alone" (pick_feed), "feed_start", "warmup" (the CUDA graph is
  // captured here), "timed". Only the phases that ran.
  struct Phase {
    std::string name;
    double seconds = 0;
  };
  std::vector<Phase> phases;
};

// "build 6.1 s, warm-up 12.0 s, timed 8.0 s": the phases as a progress line shows them.
std::string phases_text(const std::vector<TrainMeasurement::Phase>& phases);

// Share of the timed wall time (GPU timeline) the GPU spent waiting for data: 1 - sum of the
// steps' own GPU time / sum of the step intervals, in %; empty without gpu_step_ms.
std::optional<double> train_data_wait_pct(const TrainMeasurement& m);

// The results of one configuration:
//   <cfg>.images_per_s  batch / step time per step, value = batch / median step (main figure;
//                       params model, precision, batch, graph, steps, warm-up, loss, memory,
//                       phase_<name>_s per phase...;
//                       the telemetry; the PyTorch figure as a "pytorch" reference on an H200)
//   <cfg>.step_ms       step times (lower is better)
//   <cfg>.memory_gib    device memory the trainer allocated (lower is better)
//   <cfg>.data_wait_pct with --data: the share of step time spent waiting for the loader
//                       (params data, decode, gpu_share_pct for the split)
// A failed configuration (engine error, non-finite loss, no step timed) is one images_per_s
// result with status fail and the reason; one whose input pipeline cannot run here
// (skipped_reason) is one skipped images_per_s result with the reason.
std::vector<Result> train_results(const TrainMeasurement& m);

// One skipped images_per_s result per configuration, all for `reason`.
std::vector<Result> train_skipped_results(const std::vector<TrainConfig>& configs,
                                          const std::string& reason);
// After Ctrl-C: a skipped result for each configuration with no images_per_s in `reported`
// (the one in progress and those that never started).
std::vector<Result> train_unmeasured_results(const std::vector<TrainConfig>& configs,
                                             const std::vector<Result>& reported);

struct TrainBenchOutcome {
  bool gpu_found = false;
  std::string no_gpu_reason;  // set when gpu_found is false
  std::size_t configurations = 0;
  std::size_t failed = 0;
};

// Entry point: validates the options (usage errors before anything runs), reports host facts,
// then each configuration's results as soon as it is done. Ctrl-C (core/cancel): during the
// timed steps it ends them early and the configuration reports the steps that ran; then (or in
// the warm-up, or between configurations) Cancelled is thrown, and at the sink's end every
// configuration not measured is reported skipped. No GPU, no CUDA or no engine in
// this build: skipped results with the reason (gpu_found false for the first two). An engine
// error in one configuration (out of memory at that batch) fails that configuration only.
TrainBenchOutcome run_train_bench(const TrainBenchOptions& options, ResultSink& sink);

// The reason every train result is skipped in this build, or empty when the engine is built
// in (CUDA and src/nn).
std::string train_engine_missing_reason();

#if defined(GPUBASE_WITH_CUDA) && defined(GPUBASE_WITH_NN)
// bench/gpu/train_run.cpp: measures one configuration on the suite's device (current while
// `device` lives). Never throws for an engine error: it lands in TrainMeasurement::error.
TrainMeasurement measure_train(const TrainConfig& config, const TrainBenchOptions& options,
                               const DeviceContext& device, ResultSink& sink);
#endif

}  // namespace gb::bench
