// bench/baseline.hpp: `gpubase baseline` as a list of stages run in order -- the card (probe),
// the input pipeline (loader worker sweep), a training run fed by the loader under the
// in-process watch sampler, the mixed-precision study -- each reporting into the one
// ResultSink, so the checklist reads every row from one run.
//
// What the runner guarantees, whatever the stages are (the CPU tests use stand-ins):
//   - stages run in the order given, one at a time;
//   - a stage that fails (throws gb::Error or std::exception) or skips itself does not stop the
//     ones after it: the failure is a `baseline.stage.<id>.s` result with status fail and the
//     message, a skip one with status skipped and the reason;
//   - Ctrl-C (core/cancel) between or inside stages ends the run: Cancelled goes up to the
//     suite runner like in every suite, and at the sink's end every stage is reported --
//     the ones that ran with their time, the one interrupted and those never started as
//     skipped -- next to every result the stages reported before;
//   - usage errors (a bad --data path) are not stage failures: they go up at once.
// A fact two stages report (host facts) is kept once, as the first reported it.
// Each stage's wall time is a result (baseline.stage.<id>.s, with the expected time as a param),
// so where the time goes is in the saved run.
#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "bench/suite.hpp"
#include "bench/train.hpp"

namespace gb::bench {

// How a stage ended when it returned (a throw is a failure; Cancelled is Ctrl-C).
struct StageEnd {
  std::string skipped_reason;  // non-empty: the stage could not run here, and why
  bool gpu_found = true;       // false: no GPU (the run exits 3), no_gpu_reason says why
  std::string no_gpu_reason;

  static StageEnd skipped(std::string reason) { return StageEnd{std::move(reason)}; }
};

struct BaselineStage {
  std::string id;     // "card", "loader", "train", "amp": the result key's part
  std::string title;  // "card: probe" -- progress lines and the stage table
  double expected_s = 0;  // what a progress line announces
  std::function<StageEnd(ResultSink&)> run;
};

enum class StageState { not_run, running, ran, skipped, failed };

struct StageRecord {
  std::string id, title;
  double expected_s = 0;
  double seconds = 0;  // wall time, for a stage that started
  StageState state = StageState::not_run;
  std::string reason;  // skipped / failed: why
};

struct BaselineHooks {
  // Before stage `index` (0-based) of `count` starts, and after it ended (not after Ctrl-C).
  std::function<void(std::size_t index, std::size_t count, const BaselineStage&)> on_start;
  std::function<void(const StageRecord&)> on_end;
  // The wall time the caller spent before the stages (the synthetic set made or checked). Given,
  // the stage table also says where the rest of the run's time went: baseline.stage.setup.s
  // (this) and baseline.stage.summaries.s (after the last stage, the stages' end summaries: the
  // AMP study's results, the diagnosis), each with the state "outside the stages".
  std::optional<double> setup_s;
};

struct BaselineOutcome {
  std::vector<StageRecord> stages;
  bool gpu_found = true;
  std::string no_gpu_reason;  // the first stage's that found none
};

// Runs the stages (see above). Returns normally only when every stage got its turn; Ctrl-C
// throws Cancelled out of it after the sink was told how to report the stages (at_end).
BaselineOutcome run_baseline(std::span<const BaselineStage> stages, ResultSink& sink,
                             const BaselineHooks& hooks = {});

// The stage table's results: baseline.stage.<id>.s per stage (value: wall seconds; params
// expected_s and state; fail / skipped with the reason), in stage order.
std::vector<Result> stage_results(std::span<const StageRecord> records);

// Where the stage table prints (ResultSink::declare_sections).
std::span<const SectionRule> baseline_section_rules();

std::string_view to_string(StageState s);

// What feeds the training run. The loader stage measured the CPU path's knee (its workers and
// rate) and, where nvJPEG runs, the nvJPEG path alone and the CPU/GPU split, each with the time
// nvJPEG's call takes per image (its host stage), and the nvJPEG path beside a busy GPU (stand-in
// steps that leave the SMs free: does the decode overlap a step, or take turns with it); the
// training stage times the model alone first. With the model's rate known, each candidate gets
// the rate it is expected to feed under training:
//   - the CPU path at the knee: the lower of its loader-stage rate and the model's (the workers
//     decode beside the GPU; measured: 1.00x the model on an H100 and on an H200 whenever the
//     knee was faster than the model);
//   - the nvJPEG path and the split, where the decode overlapped the busy GPU: the lower of the
//     loader-stage rate and the model's (a decode thread of the pipeline's own runs nvJPEG up to
//     two batches ahead of the step);
//   - where it took turns with it (or was not measured): the lower of the loader-stage rate and
//     1 / (1 / model + host stage per image). nvJPEG's batched call can return only once the GPU
//     has finished the work queued before it, the training step included (measured with
//     nvJPEG's buffers freed back to the driver: the call took the whole 52.7-ms step under
//     training against 11.0 ms with the GPU idle, an H100), so the decode of a batch and the
//     step take turns.
// The knee feeds when it keeps up (at least kFeedHeadroom times the model's rate) and its
// workers, at the model's rate, would keep at most kKneeCpuBudgetPct of the cores busy (the
// checklist's CPU row judges the busiest core against 80 %). Where it would keep more busy, or
// does not keep up, and the nvJPEG decode overlapped the busy GPU: the split if it keeps up (the
// CPU and the JPEG engines share the work), else the nvJPEG path alone if it does. Else the knee
// if it keeps up, else the candidate with the highest expected rate. bench/NOTES.md b8, b10, b11
// and b12 have the figures.
inline constexpr double kFeedHeadroom = 1.0;
// The average share of the cores the knee's workers may keep busy at the model's rate. Measured
// on an H100 (16 cores, knee at 16 workers, ResNet-50 BF16 at ~6,030 images/s): an estimate of
// 66 % gave a busiest core of 69.9 % and 71.8 % (b12), one of 68 % a busiest core of 93.1 % (b11);
// on an H200 (model ~7,050) the knee's estimate is ~88 % (b8: busiest core 99.4 %).
inline constexpr double kKneeCpuBudgetPct = 70.0;

struct FeedInputs {
  bool starve = false;                      // --starve: one CPU worker, whatever was measured
  std::optional<unsigned> knee_workers;     // loader.cpu.knee.workers
  std::optional<double> knee_images_per_s;  // the CPU path at the knee
  std::optional<double> gpu_images_per_s;    // loader.gpu_decode.images_per_s (nvJPEG ran)
  std::optional<double> gpu_host_us_per_image;    // nvJPEG's call per image (host stage)
  std::optional<double> split_images_per_s;  // loader.split.images_per_s (nvJPEG ran)
  std::optional<double> split_host_us_per_image;  // the same for the split
  std::optional<double> split_gpu_share;     // its share to nvJPEG, 0..1 (kept for training)
  // loader.gpu_decode.beside_step.data_wait.pct: the GPU's wait beside stand-in steps; below
  // kOverlapWaitPct (bench/loader.hpp) the decode overlaps a step. Empty: not measured.
  std::optional<double> gpu_wait_beside_step_pct;
  std::optional<unsigned> usable_cores;  // host.usable_cores (the knee's CPU share)
  std::string nvjpeg_missing;               // why there is no nvJPEG figure, when known
};

// The choice for a model that runs `model_images_per_s` alone (empty: not measured, as without a
// GPU; then the fastest the loader stage measured). `why` says which and why, with the figures.
TrainFeedChoice choose_training_feed(const FeedInputs& in,
                                     std::optional<double> model_images_per_s);

}  // namespace gb::bench
