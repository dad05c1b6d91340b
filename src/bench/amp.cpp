// bench/amp.cpp: the amp study's CPU half: options, schedule, and the results from the records.
#include "bench/amp.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <numbers>
#include <set>
#include <span>

#include "core/error.hpp"
#include "core/stats.hpp"
#include "bench/train.hpp"

namespace gb::bench {

namespace {

const std::vector<std::string>& known_precisions() {
  static const std::vector<std::string> p{"fp32", "tf32", "fp16", "bf16"};
  return p;
}

std::string fmt1(double v, const char* spec = "%.2f") {
  char buf[64];
  std::snprintf(buf, sizeof buf, spec, v);
  return buf;
}

double mean(std::span<const double> v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

double stddev(std::span<const double> v) {
  if (v.size() < 2) return 0;
  const double m = mean(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / static_cast<double>(v.size() - 1));
}

bool is_amp(const std::string& p) { return p == "fp16" || p == "bf16"; }

std::string key(const std::string& precision, const std::string& what) {
  return "amp." + precision + "." + what;
}

Result value_result(std::string k, std::string label, std::string unit, std::vector<double> samples,
                    bool higher_is_better = true) {
  Result r = Result::measured(std::move(k), std::move(label), std::move(unit), samples,
                              higher_is_better);
  r.value = mean(samples);  // a study's figure is the mean over seeds, not the median
  return r;
}

}  // namespace

void validate_amp_options(const AmpOptions& o) {
  if (o.precisions.empty()) throw Error(ErrorKind::usage, "--precision: give at least one");
  for (const std::string& p : o.precisions)
    if (std::find(known_precisions().begin(), known_precisions().end(), p) ==
        known_precisions().end())
      throw Error(ErrorKind::usage,
                  "--precision: '" + p + "' is not one of fp32, tf32, fp16, bf16");
  if (o.seeds < 1 || o.seeds > 100) throw Error(ErrorKind::usage, "--seeds: 1 .. 100");
  if (o.epochs < 1 || o.epochs > 1000) throw Error(ErrorKind::usage, "--epochs: 1 .. 1000");
  if (o.batch < 1 || o.batch > 65536) throw Error(ErrorKind::usage, "--batch: 1 .. 65536");
  if (!(o.learning_rate > 0) || !std::isfinite(o.learning_rate))
    throw Error(ErrorKind::usage, "--lr: a positive number");
  for (int b : o.speed_batches)
    if (b < 1 || b > 65536) throw Error(ErrorKind::usage, "--speed-batch: 1 .. 65536");
  if (o.speed && o.speed_batches.empty()) throw Error(ErrorKind::usage, "--speed-batch: give one");
  if (o.model != "small_resnet" && o.model != "resnet50" && o.model != "mobilenet_v2")
    throw Error(ErrorKind::usage,
                "--model: '" + o.model + "' is not one of small_resnet, resnet50, mobilenet_v2");
}

double amp_learning_rate(double peak, std::size_t step, std::size_t warmup_steps,
                         std::size_t total_steps) {
  if (total_steps == 0) return 0;
  if (step < warmup_steps)
    return peak * static_cast<double>(step + 1) / static_cast<double>(warmup_steps);
  const std::size_t rest = total_steps - std::min(warmup_steps, total_steps);
  if (rest <= 1) return peak;
  const double t = static_cast<double>(step - warmup_steps) / static_cast<double>(rest - 1);
  return peak * 0.5 * (1.0 + std::cos(std::numbers::pi * std::min(t, 1.0)));
}

double run_test_accuracy(const AmpRunRecord& r) {
  return r.epochs.empty() ? 0 : r.epochs.back().test_accuracy_pct;
}

double run_final_loss(const AmpRunRecord& r) {
  return r.epochs.empty() ? 0 : r.epochs.back().train_loss;
}

double run_images_per_s(const AmpRunRecord& r) {
  std::vector<double> rates;
  for (std::size_t i = r.epochs.size() > 1 ? 1 : 0; i < r.epochs.size(); ++i)
    rates.push_back(r.epochs[i].images_per_s);
  return rates.empty() ? 0 : quantile(rates, 0.5);
}

void add_amp_results(const std::vector<AmpRunRecord>& records, const AmpOptions& options,
                     ResultSink& sink) {
  // Records by precision, and by (precision, seed) for the paired comparison with FP32.
  std::map<std::string, std::vector<const AmpRunRecord*>> by_precision;
  std::map<std::pair<std::string, std::uint64_t>, const AmpRunRecord*> by_seed;
  for (const AmpRunRecord& r : records) {
    by_precision[r.precision].push_back(&r);
    by_seed[{r.precision, r.seed}] = &r;
  }
  auto median_rate = [&](const std::string& p) -> std::optional<double> {
    auto it = by_precision.find(p);
    if (it == by_precision.end()) return std::nullopt;
    std::vector<double> v;
    for (const AmpRunRecord* r : it->second)
      if (!r->diverged) v.push_back(run_images_per_s(*r));
    if (v.empty()) return std::nullopt;
    return quantile(v, 0.5);
  };
  const auto fp32_rate = median_rate("fp32");

  struct Loss {
    std::string precision;
    double points = 0;  // FP32 accuracy minus this precision's, mean over seeds
    double band = 0;    // two standard errors of the paired differences
  };
  std::optional<Loss> worst;
  std::vector<std::string> no_speedup;

  for (const std::string& p : options.precisions) {
    auto it = by_precision.find(p);
    if (it == by_precision.end()) continue;
    std::vector<double> acc, loss, rate;
    std::size_t diverged = 0;
    for (const AmpRunRecord* r : it->second) {
      if (r->diverged) {
        ++diverged;
        continue;
      }
      acc.push_back(run_test_accuracy(*r));
      loss.push_back(run_final_loss(*r));
      rate.push_back(run_images_per_s(*r));
    }
    const std::string seeds = std::to_string(it->second.size());
    if (acc.empty()) {
      Result r = Result::skipped(key(p, "test_accuracy.pct"), p + ": test accuracy", "%",
                                 "every " + p + " run diverged (non-finite loss)");
      r.status = Status::fail;
      r.advice = p == "fp16" ? "FP16 overflowed: use BF16, or check the loss-scaling order "
                               "(scale the loss before backward, unscale before clipping)"
                             : "the run diverged: lower the learning rate";
      sink.add(std::move(r));
      continue;
    }

    Result a = value_result(key(p, "test_accuracy.pct"), p + ": test accuracy", "%", acc);
    a.param("seeds", seeds).param("std", fmt1(stddev(acc)) + " points");
    if (diverged) a.param("diverged", std::to_string(diverged) + " of " + seeds + " runs");
    sink.add(std::move(a));
    Result l = value_result(key(p, "final_loss"), p + ": final training loss", "", loss, false);
    sink.add(std::move(l));
    Result ips = Result::measured(key(p, "images_per_s"), p + ": training throughput",
                                  "images/s", rate);
    ips.param("seeds", seeds).param("model", options.model)
        .param("batch", std::to_string(options.batch));
    sink.add(std::move(ips));
    if (p != "fp32" && fp32_rate && *fp32_rate > 0) {
      const double speedup = quantile(rate, 0.5) / *fp32_rate;
      Result s = Result::measured(key(p, "speedup"), p + ": speedup over FP32", "x", {speedup});
      if (is_amp(p) && speedup < kAmpMinUsefulSpeedup) {
        no_speedup.push_back(p + " " + fmt1(speedup) + "x");
        s.status = Status::warn;
        s.reason = p + " trains at " + fmt1(speedup) + "x the FP32 rate: mixed precision does "
                   "not pay here";
        s.advice = "a small model or batch is bound by kernel launches and memory traffic, not "
                   "by math: reduced precision adds casts without making the math the limit. "
                   "Use a larger batch, CUDA graphs or fused kernels, or stay in FP32/TF32";
      }
      sink.add(std::move(s));
    }

    if (p != "fp32") {
      std::vector<double> diff;
      for (const AmpRunRecord* r : it->second) {
        auto f = by_seed.find({"fp32", r->seed});
        if (r->diverged || f == by_seed.end() || f->second->diverged) continue;
        diff.push_back(run_test_accuracy(*r) - run_test_accuracy(*f->second));
      }
      if (!diff.empty()) {
        const double m = mean(diff);
        const double band =
            diff.size() > 1 ? 2.0 * stddev(diff) / std::sqrt(static_cast<double>(diff.size())) : 0;
        Result c = value_result(key(p, "accuracy_change.points"),
                                p + ": test accuracy change vs FP32 (paired by seed)", "points",
                                diff);
        c.param("noise band", diff.size() > 1 ? "+/- " + fmt1(band) + " points (2 standard errors)"
                                              : "one seed: no noise estimate");
        sink.add(std::move(c));
        if (is_amp(p) && (!worst || -m > worst->points)) worst = Loss{p, -m, band};
      }
    }
  }

  // FP32 seed-to-seed spread: whether the study can see a 1-point loss at all.
  if (auto it = by_precision.find("fp32"); it != by_precision.end()) {
    std::vector<double> acc;
    for (const AmpRunRecord* r : it->second)
      if (!r->diverged) acc.push_back(run_test_accuracy(*r));
    if (acc.size() >= 2) {
      Result s = Result::measured("amp.seed_spread.points",
                                  "FP32 test accuracy, standard deviation over seeds", "points",
                                  {stddev(acc)}, false);
      s.reference("target", kAmpMaxSeedSpreadPoints, "issue: resolve a 1-point loss");
      s.status = stddev(acc) <= kAmpMaxSeedSpreadPoints ? Status::pass : Status::warn;
      s.reason = "FP32 accuracy over " + std::to_string(acc.size()) + " seeds: std " +
                 fmt1(stddev(acc)) + " points";
      if (s.status == Status::warn)
        s.advice = "too noisy to judge a 1-point change: train more epochs or more seeds";
      sink.add(std::move(s));
    }
  }

  // FP16 loss scaling: the scale, skipped steps and gradient underflow.
  if (auto it = by_precision.find("fp16"); it != by_precision.end()) {
    std::vector<double> scale, skipped;
    std::string history;
    std::size_t steps = 0;
    for (const AmpRunRecord* r : it->second) {
      if (r->epochs.empty()) continue;
      scale.push_back(r->epochs.back().loss_scale);
      skipped.push_back(static_cast<double>(r->epochs.back().skipped_steps));
      steps += r->steps;
      if (history.empty()) {
        for (const AmpEpoch& e : r->epochs)
          history += (history.empty() ? "" : ", ") + fmt1(e.loss_scale, "%.0f");
        history = "seed " + std::to_string(r->seed) + ", by epoch: " + history;
      }
    }
    if (!scale.empty()) {
      Result s = Result::measured("amp.fp16.loss_scale", "FP16 loss scale at the end", "",
                                  scale);
      s.param("history", history);
      if (*std::min_element(scale.begin(), scale.end()) < 1) {
        s.status = Status::warn;
        s.reason = "the loss scale collapsed below 1: gradients overflow FP16 even unscaled";
        s.advice = "use BF16 (FP32's range), or find the overflowing activation (large logits, "
                   "unnormalised inputs) and keep that op in FP32";
      }
      sink.add(std::move(s));
      double total_skipped = 0;
      for (double x : skipped) total_skipped += x;
      Result k = Result::measured("amp.fp16.skipped_steps",
                                  "FP16 steps skipped for inf/NaN gradients", "steps", skipped,
                                  false);
      k.value = total_skipped;
      k.param("share", steps ? fmt1(100.0 * total_skipped / static_cast<double>(steps), "%.3f") +
                                   " % of " + std::to_string(steps) + " steps"
                             : "no steps");
      if (steps && total_skipped / static_cast<double>(steps) > 0.01) {
        k.status = Status::warn;
        k.reason = "more than 1 % of FP16 steps were skipped";
        k.advice = "the scale keeps overflowing: lower the growth (a longer growth interval) or "
                   "use BF16";
      }
      sink.add(std::move(k));
    }
  }
  if (auto it = by_precision.find("fp32"); it != by_precision.end()) {
    std::vector<double> unscaled, scaled;
    for (const AmpRunRecord* r : it->second)
      for (const AmpEpoch& e : r->epochs) {
        if (e.underflow_unscaled_pct) unscaled.push_back(*e.underflow_unscaled_pct);
        if (e.underflow_scaled_pct) scaled.push_back(*e.underflow_scaled_pct);
      }
    if (!unscaled.empty()) {
      Result u = value_result("amp.fp16.grad_underflow.unscaled.pct",
                              "gradient values below FP16's smallest subnormal, unscaled", "%",
                              unscaled, false);
      u.param("measured on", "the FP32 runs' gradients, last step of each epoch");
      sink.add(std::move(u));
    }
    if (!scaled.empty()) {
      Result s = value_result("amp.fp16.grad_underflow.scaled.pct",
                              "gradient values below FP16's smallest subnormal, after loss scaling",
                              "%", scaled, false);
      s.param("measured on", "the FP32 runs' gradients times the FP16 run's scale");
      sink.add(std::move(s));
    }
  }

  // The checklist row: the accuracy lost by the worse of the mixed precisions.
  if (worst) {
    Result r = Result::measured("amp.accuracy_loss.pct", "AMP accuracy loss vs FP32", "points",
                                {worst->points}, false);
    r.param("precision", worst->precision);
    r.param("noise band", "+/- " + fmt1(worst->band) + " points");
    const std::string what = worst->precision +
                             (worst->points >= 0 ? " loses " + fmt1(worst->points)
                                                 : " gains " + fmt1(-worst->points)) +
                             " points of test accuracy against FP32 (+/- " + fmt1(worst->band) +
                             ", " + std::to_string(options.seeds) + " seeds)";
    if (worst->points < 1.0) {
      r.status = Status::pass;
      r.reason = worst->points <= worst->band ? what + ": within the noise" : what;
    } else {
      r.status = worst->points < 2.0 ? Status::warn : Status::fail;
      r.reason = what;
      r.advice = worst->precision == "fp16"
                     ? "FP16 costs accuracy: check the loss scale history and skipped steps; "
                       "BF16 keeps FP32's range and needs no loss scaling"
                     : "BF16's 8-bit mantissa costs accuracy here: keep the loss, softmax and "
                       "norms in FP32, or train in TF32";
    }
    if (!no_speedup.empty())
      r.param("speed", "no speedup: " + [&] {
        std::string s;
        for (const std::string& n : no_speedup) s += (s.empty() ? "" : ", ") + n;
        return s;
      }());
    sink.add(std::move(r));
  }
}

void add_amp_speed_results(const std::vector<Result>& train_results, ResultSink& sink) {
  // key "train.<model>.<precision>.b<batch>.images_per_s" -> (model, batch) -> precision -> rate
  std::map<std::pair<std::string, std::string>, std::map<std::string, double>> rates;
  std::vector<std::pair<std::string, std::string>> order;
  for (const Result& r : train_results) {
    if (!r.value || r.status == Status::fail || r.status == Status::skipped) continue;
    const std::string& k = r.key;
    const std::string suffix = ".images_per_s";
    if (k.rfind("train.", 0) != 0 || k.size() <= suffix.size() ||
        k.compare(k.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    const std::string mid = k.substr(6, k.size() - 6 - suffix.size());  // model.precision.bN
    const auto a = mid.find('.'), b = mid.rfind('.');
    if (a == std::string::npos || b == a) continue;
    const std::pair<std::string, std::string> mb{mid.substr(0, a), mid.substr(b + 1)};
    if (!rates.count(mb)) order.push_back(mb);
    rates[mb][mid.substr(a + 1, b - a - 1)] = *r.value;
  }
  for (const auto& mb : order) {
    const auto& per = rates[mb];
    const auto fp32 = per.find("fp32");
    if (fp32 == per.end() || fp32->second <= 0) continue;
    for (const std::string& p : known_precisions()) {
      const auto it = per.find(p);
      if (p == "fp32" || it == per.end()) continue;
      const double x = it->second / fp32->second;
      Result r = Result::measured("amp.speed." + mb.first + "." + mb.second + "." + p + ".speedup",
                                  mb.first + " " + mb.second + ": " + p + " over FP32", "x", {x});
      r.param("images/s", fmt1(it->second, "%.0f") + " vs " + fmt1(fp32->second, "%.0f"));
      if (x >= 1.5) {
        r.param("verdict", "pays");
      } else if (x < kAmpMinUsefulSpeedup) {
        r.param("verdict", "does not pay");
        r.status = Status::warn;
        r.reason = p + " trains " + mb.first + " at " + mb.second + " only " + fmt1(x) +
                   "x as fast as FP32";
        r.advice = "at this model and batch the step is bound by memory traffic and small "
                   "kernels, not math (the step is already one CUDA graph): a larger batch or "
                   "fused kernels; mixed precision alone will not help";
      } else {
        r.param("verdict", "helps a little");
      }
      sink.add(std::move(r));
    }
  }
}

void add_amp_skipped(const AmpOptions& /*options*/, const std::string& reason,
                     ResultSink& sink) {
  // One line, not one per precision: the study as a whole did not run.
  sink.add(Result::skipped("amp.accuracy_loss.pct", "AMP accuracy loss vs FP32", "points", reason));
}

std::string default_fashion_mnist_dir() {
  namespace fs = std::filesystem;
  std::vector<fs::path> candidates;
  if (const char* env = std::getenv("GPUBASE_FASHION_MNIST"); env && *env)
    candidates.emplace_back(env);
  candidates.emplace_back("../shared/data/fashion-mnist");
  candidates.emplace_back("data/fashion-mnist");
  for (const fs::path& dir : candidates) {
    std::error_code ec;
    if (fs::exists(dir / "train-images-idx3-ubyte.gz", ec) ||
        fs::exists(dir / "train-images-idx3-ubyte", ec))
      return dir.string();
  }
  return {};
}

AmpOutcome run_amp_speed(const AmpOptions& options, ResultSink& sink) {
  validate_amp_options(options);
  AmpOutcome out;
  ResultSink train_sink([&](const std::string& line) { sink.progress(line); });
  for (int batch : options.speed_batches) {
    TrainBenchOptions t;
    t.models = options.speed_models;
    t.precisions = options.precisions;
    t.batch = batch;
    t.steps = 30;
    t.warmup = 10;
    t.device = options.device;
    t.report_environment = batch == options.speed_batches.front();
    const TrainBenchOutcome o = run_train_bench(t, train_sink);
    out.gpu_found = o.gpu_found;
    out.no_gpu_reason = o.no_gpu_reason;
    if (o.interrupted) {
      out.interrupted = true;
      break;
    }
    if (!o.gpu_found) break;
  }
  // Each batch size's run states the same protocol facts: keep the first of each.
  std::set<std::string> seen;
  for (Fact& f : train_sink.facts())
    if (seen.insert(f.key).second) sink.add_fact(std::move(f));
  const std::vector<Result> train_results = train_sink.results();
  for (const Result& r : train_results) sink.add(r);
  add_amp_speed_results(train_results, sink);
  return out;
}

#if !GPUBASE_WITH_NN
AmpOutcome run_amp(const AmpOptions& options, ResultSink& sink) {
  if (options.speed) return run_amp_speed(options, sink);
  validate_amp_options(options);
  AmpOutcome out;
  std::string no_gpu;
  const bool has_gpu = open_device(options.device, no_gpu).has_value();  // validates -d too
  out.gpu_found = false;
  out.no_gpu_reason =
      has_gpu ? "this build has no GPU training engine (built without CUDA/cuDNN)" : no_gpu;
  add_amp_skipped(options, out.no_gpu_reason, sink);
  return out;
}
#endif

}  // namespace gb::bench
