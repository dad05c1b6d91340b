// bench/amp.hpp: the `gpubase amp` study -- does mixed precision pay, and what does it cost in
// accuracy? One model (default: the small ResNet) is trained on a real dataset (default:
// Fashion-MNIST, IDX) in FP32, TF32, FP16 with dynamic loss scaling and BF16, from the same
// initial weights and the same data order, over several seeds, with a warm-up + cosine learning
// rate schedule so that seed-to-seed noise is small enough to see a 1-point loss.
//
// Per precision: throughput and speedup over FP32, final training loss, test accuracy, the
// accuracy change against FP32 paired by seed with its noise band, the FP16 loss-scale history,
// skipped steps, and the share of gradient values that underflow to zero in FP16 (measured on the
// FP32 run's gradients: below 2^-24 unscaled, and after multiplying by the FP16 run's scale).
// The figures feed the checklist row "AMP accuracy loss < 1 %" (amp.accuracy_loss.pct); the
// verdicts on them are diagnose's (diagnose/amp.cpp, docs/thresholds.md "Mixed precision").
//
// The CPU half here plans the study, the learning-rate schedule and turns the per-run records
// into results (pure, tested on the CPU); the GPU half (bench/gpu/amp_run.cpp) trains.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "bench/suite.hpp"

namespace gb::bench {

struct AmpOptions {
  std::string data;  // an IDX folder (train-*/t10k-* files); empty: Fashion-MNIST, default place
  std::string model = "small_resnet";
  std::vector<std::string> precisions{"fp32", "tf32", "fp16", "bf16"};
  int seeds = 3;
  int epochs = 8;
  int batch = 256;
  float learning_rate = 0.2f;  // peak: linear warm-up over the first epoch, then cosine to 0
  float momentum = 0.9f;
  float weight_decay = 5e-4f;
  int device = 0;
  // --speed: instead of the accuracy study, training throughput of the standard models per
  // precision at each batch (synthetic data, the train suite), and the speedup over FP32.
  bool speed = false;
  std::vector<std::string> speed_models{"resnet50", "mobilenet_v2"};
  std::vector<int> speed_batches{64, 256};
};

// Validates options (usage errors name the option and the valid values).
void validate_amp_options(const AmpOptions& options);

// The learning rate of step `step` (0-based) of a run of `total_steps` with `warmup_steps`:
// linear from peak/warmup_steps up to peak, then half-cosine down to 0 at the last step.
double amp_learning_rate(double peak, std::size_t step, std::size_t warmup_steps,
                         std::size_t total_steps);

struct AmpEpoch {
  int epoch = 0;                  // 1-based
  double train_loss = 0;          // mean of the losses read during the epoch
  double test_accuracy_pct = 0;
  double seconds = 0;             // training time of the epoch (evaluation excluded)
  double images_per_s = 0;
  double loss_scale = 1;          // FP16: the scale at the end of the epoch
  std::size_t skipped_steps = 0;  // FP16: cumulative
  // FP32 runs: share of non-zero gradient values (of the epoch's last step) below FP16's
  // smallest subnormal 2^-24, as they are and multiplied by the FP16 run's scale of that epoch.
  std::optional<double> underflow_unscaled_pct;
  std::optional<double> underflow_scaled_pct;
};

struct AmpRunRecord {
  std::string precision;
  std::uint64_t seed = 0;
  std::vector<AmpEpoch> epochs;
  std::size_t steps = 0;
  bool diverged = false;  // a non-finite loss: the run stopped
};

// The summary of one run: its last epoch's accuracy and loss, its median throughput (the first
// epoch left out when there are more: it includes cuDNN's algorithm search and warm-up).
double run_test_accuracy(const AmpRunRecord& r);
double run_final_loss(const AmpRunRecord& r);
double run_images_per_s(const AmpRunRecord& r);

// Turns the records of a study into amp.* results (keys: docs/results.md "amp.*"):
// amp.<p>.images_per_s, amp.<p>.speedup, amp.<p>.test_accuracy.pct, amp.<p>.accuracy_change.points,
// amp.<p>.final_loss, amp.fp16.loss_scale, amp.fp16.skipped_steps, amp.fp16.grad_underflow.*,
// amp.seed_spread.points, and amp.accuracy_loss.pct (the checklist row). Measured values and the
// typed params the rules read (precision, seeds, diverged runs, steps, skipped share, noise band);
// no verdicts: every status stays info (or skipped for a precision whose runs all diverged).
void add_amp_results(const std::vector<AmpRunRecord>& records, const AmpOptions& options,
                     ResultSink& sink);

// From train.<model>.<precision>.b<batch>.images_per_s results: amp.speed.<model>.b<batch>.<p>
// .speedup for every precision other than fp32 measured beside FP32 at that model and batch,
// with params model, batch, precision and both rates (diagnose words the verdict).
void add_amp_speed_results(const std::vector<Result>& train_results, ResultSink& sink);

// The study did not run (no GPU, no engine): the checklist figure, skipped with `reason`.
void add_amp_skipped(const AmpOptions& options, const std::string& reason, ResultSink& sink);

struct AmpOutcome {
  bool gpu_found = true;
  std::string no_gpu_reason;  // set when gpu_found is false (or the build has no engine)
};

// Runs the study on the GPU (bench/gpu/amp_run.cpp); its results are made from the finished runs
// when the sink ends (ResultSink::at_end), so Ctrl-C (Cancelled, core/cancel) keeps them.
// Reports skipped results when the build has no GPU engine or the machine no GPU. Progress: one
// line per epoch. With options.speed, runs the speed comparison instead (run_amp_speed).
AmpOutcome run_amp(const AmpOptions& options, ResultSink& sink);
// Where the study's results print (ResultSink::declare_sections).
std::span<const SectionRule> amp_section_rules();
AmpOutcome run_amp_speed(const AmpOptions& options, ResultSink& sink);

// Where Fashion-MNIST is looked for when --data is not given: $GPUBASE_FASHION_MNIST, then
// /usr/share/datasets/fashion-mnist (Debian's dataset-fashion-mnist), then the copy
// scripts/make-deps.sh unpacks into .deps/ under the working directory. Empty when none holds
// the training images.
std::string default_fashion_mnist_dir();

}  // namespace gb::bench
