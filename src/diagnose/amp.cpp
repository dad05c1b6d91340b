// diagnose/amp.cpp: the verdicts on `gpubase amp` (bench/amp.cpp measures, this file judges):
// a precision whose runs all diverged, a mixed precision that trains no faster than FP32, a
// study too noisy to see a 1-point change, an FP16 loss scale that collapsed or skips too many
// steps, the accuracy lost against FP32 (the checklist figure), and the words of the speed-only
// comparison. Thresholds: diagnose/thresholds.hpp amp_thresholds(), docs/thresholds.md "Mixed
// precision". A result that already carries a verdict is left alone, as everywhere in diagnose.
#include <string>
#include <string_view>
#include <vector>

#include "core/format.hpp"
#include "core/vocabulary.hpp"
#include "diagnose/rules.hpp"
#include "diagnose/thresholds.hpp"

namespace gb::diagnose {

namespace {

// fp16 or bf16, as the result's "precision" param spells it.
bool is_mixed_precision(std::string_view p) {
  const auto precision = parse_precision(p);
  return precision && is_mixed(*precision);
}

// "amp.<precision>.<figure>" (not the amp.speed.* comparison).
bool is_amp_figure(const Result& r, std::string_view figure) {
  const std::string_view key = r.key;
  return key.starts_with("amp.") && !key.starts_with("amp.speed.") &&
         key.ends_with(std::string(".") + std::string(figure));
}

std::string precision_of(const Result& r) { return r.text_param("precision").value_or(""); }

// Every run of a precision diverged: the study has no accuracy for it, and that is a failure.
void judge_all_diverged(Result& r) {
  if (r.status != Status::skipped || !is_amp_figure(r, "test_accuracy.pct")) return;
  const auto seeds = r.number_param("seeds"), diverged = r.number_param("diverged");
  if (!seeds || !diverged || *seeds < 1 || *diverged < *seeds) return;
  r.status = Status::fail;
  r.advice = precision_of(r) == "fp16"
                 ? "FP16 overflowed: use BF16, or check the loss-scaling order (scale the loss "
                   "before backward, unscale before clipping)"
                 : "the run diverged: lower the learning rate";
}

// A mixed precision under the useful speedup does not pay for its casts.
void judge_speedup(Result& r) {
  if (r.status != Status::info || !r.value || !is_amp_figure(r, "speedup")) return;
  const std::string p = precision_of(r);
  if (!is_mixed_precision(p) || *r.value >= amp_thresholds().min_useful_speedup) return;
  r.status = Status::warn;
  r.reason = p + " trains at " + fixed(*r.value, 2) +
             "x the FP32 rate: mixed precision does not pay here";
  r.advice = "a small model or batch is bound by kernel launches and memory traffic, not by "
             "math: reduced precision adds casts without making the math the limit. Use a "
             "larger batch, CUDA graphs or fused kernels, or stay in FP32/TF32";
}

// The FP32 spread over seeds must stay small enough for a 1-point change to stand out.
void judge_seed_spread(Result& r) {
  if (r.status != Status::info || !r.value || r.key != "amp.seed_spread.points") return;
  const double limit = amp_thresholds().max_seed_spread_points;
  r.reference("target", limit,
              "the FP32 seed-to-seed spread at which a 1-point accuracy change still stands "
              "out of the noise (docs/thresholds.md)");
  r.status = *r.value <= limit ? Status::pass : Status::warn;
  r.reason = "FP32 accuracy over " + fixed(r.number_param("seeds").value_or(0), 0) +
             " seeds: std " + fixed(*r.value, 2) + " points";
  if (r.status == Status::warn)
    r.advice = "too noisy to judge a 1-point change: train more epochs or more seeds";
}

// A loss scale below 1 means the gradients overflow FP16 even unscaled.
void judge_loss_scale(Result& r) {
  if (r.status != Status::info || r.key != "amp.fp16.loss_scale" || r.samples.empty()) return;
  bool collapsed = false;
  for (const double s : r.samples) collapsed = collapsed || s < amp_thresholds().min_loss_scale;
  if (!collapsed) return;
  r.status = Status::warn;
  r.reason = "the loss scale collapsed below 1: gradients overflow FP16 even unscaled";
  r.advice = "use BF16 (FP32's range), or find the overflowing activation (large logits, "
             "unnormalised inputs) and keep that op in FP32";
}

// Skipped FP16 steps are lost updates; more than a small share means the scale keeps
// overflowing.
void judge_skipped_steps(Result& r) {
  if (r.status != Status::info || r.key != "amp.fp16.skipped_steps") return;
  const auto share_pct = r.number_param("share");
  if (!share_pct || *share_pct / 100.0 <= amp_thresholds().max_skipped_step_share) return;
  r.status = Status::warn;
  r.reason = "more than " + fixed(100.0 * amp_thresholds().max_skipped_step_share, 0) +
             " % of FP16 steps were skipped";
  r.advice = "the scale keeps overflowing: lower the growth (a longer growth interval) or use "
             "BF16";
}

// "fp16 0.80x, bf16 0.95x": the mixed precisions of the study under the useful speedup.
std::string slow_mixed_precisions(const Run& run) {
  std::string out;
  for (const Result& r : run.results) {
    if (!r.value || !is_amp_figure(r, "speedup")) continue;
    const std::string p = precision_of(r);
    if (is_mixed_precision(p) && *r.value < amp_thresholds().min_useful_speedup)
      out += (out.empty() ? "" : ", ") + p + " " + fixed(*r.value, 2) + "x";
  }
  return out;
}

// The checklist figure: accuracy lost against FP32 by the worse mixed precision.
void judge_accuracy_loss(Result& r, const Run& run) {
  if (r.status != Status::info || !r.value || r.key != "amp.accuracy_loss.pct") return;
  const AmpThresholds& t = amp_thresholds();
  const std::string p = precision_of(r);
  const double points = *r.value;
  const double band = r.number_param("noise band").value_or(0);
  const std::string what =
      p + (points >= 0 ? " loses " + fixed(points, 2) : " gains " + fixed(-points, 2)) +
      " points of test accuracy against FP32 (+/- " + fixed(band, 2) + ", " +
      fixed(r.number_param("seeds").value_or(0), 0) + " seeds)";
  if (points < t.accuracy_warn_points) {
    r.status = Status::pass;
    r.reason = points <= band ? what + ": within the noise" : what;
  } else {
    r.status = points < t.accuracy_fail_points ? Status::warn : Status::fail;
    r.reason = what;
    r.advice = p == "fp16" ? "FP16 costs accuracy: check the loss scale history and skipped "
                             "steps; BF16 keeps FP32's range and needs no loss scaling"
                           : "BF16's 8-bit mantissa costs accuracy here: keep the loss, softmax "
                             "and norms in FP32, or train in TF32";
  }
  if (const std::string slow = slow_mixed_precisions(run); !slow.empty())
    r.param("speed", "no speedup: " + slow);
}

// The speed-only comparison in words: pays, helps a little, or does not pay (warn).
void judge_speed_comparison(Result& r) {
  if (r.status != Status::info || !r.value || !r.key.starts_with("amp.speed.") ||
      r.find_param("verdict"))
    return;
  const AmpThresholds& t = amp_thresholds();
  const double x = *r.value;
  if (x >= t.pays_speedup) {
    r.param("verdict", "pays");
  } else if (x < t.min_useful_speedup) {
    r.param("verdict", "does not pay");
    r.status = Status::warn;
    r.reason = precision_of(r) + " trains " + r.text_param("model").value_or("the model") +
               " at b" + fixed(r.number_param("batch").value_or(0), 0) + " only " + fixed(x, 2) +
               "x as fast as FP32";
    r.advice = "at this model and batch the step is bound by memory traffic and small kernels, "
               "not math (the step is already one CUDA graph): a larger batch or fused kernels; "
               "mixed precision alone will not help";
  } else {
    r.param("verdict", "helps a little");
  }
}

}  // namespace

void apply_amp_rules(Run& run) {
  for (Result& r : run.results) {
    if (!r.key.starts_with("amp.")) continue;
    judge_all_diverged(r);
    judge_speedup(r);
    judge_seed_spread(r);
    judge_loss_scale(r);
    judge_skipped_steps(r);
    judge_speed_comparison(r);
  }
  // After the speedups: the accuracy figure names the ones that did not pay.
  for (Result& r : run.results) judge_accuracy_loss(r, run);
}

}  // namespace gb::diagnose
