// bench/amp.cpp: the amp study's CPU half: options, schedule, and the results from the records.
#include "bench/amp.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <numbers>
#include <set>
#include <span>

#include "core/error.hpp"
#include "core/format.hpp"
#include "core/stats.hpp"
#include "core/vocabulary.hpp"
#include "bench/train.hpp"

namespace gb::bench {

namespace {

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

bool is_amp(const std::string& p) {
  const auto precision = parse_precision(p);
  return precision && is_mixed(*precision);
}

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
    if (!parse_precision(p))
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
  if (!parse_model(o.model))
    throw Error(ErrorKind::usage,
                "--model: '" + o.model + "' is not one of small_resnet, resnet50, mobilenet_v2");
  // A dataset the user named is checked before any GPU work: a typo is a usage error (exit 2)
  // on every machine, not found only after the device is opened.
  std::error_code ec;
  if (!o.data.empty() && !std::filesystem::is_directory(o.data, ec))
    throw Error(ErrorKind::usage, "--data " + o.data +
                                      ": not a folder (give the folder holding the IDX files "
                                      "train-* and t10k-*)");
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

namespace {

// The study's records by precision, and by (precision, seed) for the paired comparison.
struct StudyIndex {
  std::map<std::string, std::vector<const AmpRunRecord*>> by_precision;
  std::map<std::pair<std::string, std::uint64_t>, const AmpRunRecord*> by_seed;

  explicit StudyIndex(const std::vector<AmpRunRecord>& records) {
    for (const AmpRunRecord& r : records) {
      by_precision[r.precision].push_back(&r);
      by_seed[{r.precision, r.seed}] = &r;
    }
  }
  const std::vector<const AmpRunRecord*>* runs(const std::string& p) const {
    const auto it = by_precision.find(p);
    return it == by_precision.end() ? nullptr : &it->second;
  }
};

// The finished (not diverged) runs of one precision, summarised.
struct FinishedRuns {
  std::vector<double> accuracy, loss, rate;
  std::size_t runs = 0, diverged = 0;
};

FinishedRuns finished_runs(const std::vector<const AmpRunRecord*>& runs) {
  FinishedRuns f;
  f.runs = runs.size();
  for (const AmpRunRecord* r : runs) {
    if (r->diverged) {
      ++f.diverged;
      continue;
    }
    f.accuracy.push_back(run_test_accuracy(*r));
    f.loss.push_back(run_final_loss(*r));
    f.rate.push_back(run_images_per_s(*r));
  }
  return f;
}

std::optional<double> median_rate(const StudyIndex& index, const std::string& p) {
  const auto* runs = index.runs(p);
  if (!runs) return std::nullopt;
  const FinishedRuns f = finished_runs(*runs);
  if (f.rate.empty()) return std::nullopt;
  return quantile(f.rate, 0.5);
}

// Accuracy, loss, throughput and speedup of one precision. Every run diverged: the accuracy
// figure without a value, with the counts diagnose judges.
void add_precision_results(const std::string& p, const FinishedRuns& f,
                           const std::optional<double>& fp32_rate, const AmpOptions& options,
                           ResultSink& sink) {
  const double seeds = static_cast<double>(f.runs);
  if (f.accuracy.empty()) {
    Result r = Result::skipped(key(p, "test_accuracy.pct"), p + ": test accuracy", "%",
                               "every " + p + " run diverged (non-finite loss)");
    r.param("precision", p).param("seeds", seeds, "", 0);
    r.param("diverged", static_cast<double>(f.diverged), "", 0);
    sink.add(std::move(r));
    return;
  }
  Result a = value_result(key(p, "test_accuracy.pct"), p + ": test accuracy", "%", f.accuracy);
  a.param("seeds", seeds, "", 0).param("std", stddev(f.accuracy), "points", 2);
  if (f.diverged) a.param("diverged", static_cast<double>(f.diverged), "", 0);
  sink.add(std::move(a));
  sink.add(value_result(key(p, "final_loss"), p + ": final training loss", "", f.loss, false));
  Result ips = Result::measured(key(p, "images_per_s"), p + ": training throughput",
                                "images/s", f.rate);
  ips.param("seeds", seeds, "", 0).param("model", options.model)
      .param("batch", options.batch, "", 0);
  sink.add(std::move(ips));
  if (p != "fp32" && fp32_rate && *fp32_rate > 0) {
    const double speedup = quantile(f.rate, 0.5) / *fp32_rate;
    Result s = Result::measured(key(p, "speedup"), p + ": speedup over FP32", "x", {speedup});
    s.param("precision", p);
    sink.add(std::move(s));
  }
}

// FP32 accuracy minus a mixed precision's, mean over the seeds both finished.
struct AccuracyLoss {
  std::string precision;
  double points = 0;
  std::optional<double> band;  // two standard errors of the paired differences (2+ seeds)
};

// The paired change against FP32 of one precision; its loss when the change was measured.
std::optional<AccuracyLoss> add_accuracy_change(const std::string& p, const StudyIndex& index,
                                                ResultSink& sink) {
  std::vector<double> diff;
  for (const AmpRunRecord* r : *index.runs(p)) {
    const auto f = index.by_seed.find({"fp32", r->seed});
    if (r->diverged || f == index.by_seed.end() || f->second->diverged) continue;
    diff.push_back(run_test_accuracy(*r) - run_test_accuracy(*f->second));
  }
  if (diff.empty()) return std::nullopt;
  AccuracyLoss loss{p, -mean(diff), std::nullopt};
  if (diff.size() > 1) loss.band = 2.0 * stddev(diff) / std::sqrt(static_cast<double>(diff.size()));
  Result c = value_result(key(p, "accuracy_change.points"),
                          p + ": test accuracy change vs FP32 (paired by seed)", "points", diff);
  if (loss.band)
    c.param("noise band", *loss.band, "points", 2);
  else
    c.param("noise band", "one seed: no noise estimate");
  sink.add(std::move(c));
  return loss;
}

// FP32 seed-to-seed spread: whether the study can see a 1-point loss at all.
void add_seed_spread(const StudyIndex& index, ResultSink& sink) {
  const auto* runs = index.runs("fp32");
  if (!runs) return;
  const FinishedRuns f = finished_runs(*runs);
  if (f.accuracy.size() < 2) return;
  Result s = Result::measured("amp.seed_spread.points",
                              "FP32 test accuracy, standard deviation over seeds", "points",
                              {stddev(f.accuracy)}, false);
  s.param("seeds", static_cast<double>(f.accuracy.size()), "", 0);
  sink.add(std::move(s));
}

// FP16 loss scaling: the scale at the end of each run and the steps skipped for inf/NaN.
void add_loss_scaling(const StudyIndex& index, ResultSink& sink) {
  const auto* runs = index.runs("fp16");
  if (!runs) return;
  std::vector<double> scale, skipped;
  std::string history;
  std::size_t steps = 0;
  for (const AmpRunRecord* r : *runs) {
    if (r->epochs.empty()) continue;
    scale.push_back(r->epochs.back().loss_scale);
    skipped.push_back(static_cast<double>(r->epochs.back().skipped_steps));
    steps += r->steps;
    if (history.empty()) {
      for (const AmpEpoch& e : r->epochs)
        history += (history.empty() ? "" : ", ") + fixed(e.loss_scale, 0);
      history = "seed " + std::to_string(r->seed) + ", by epoch: " + history;
    }
  }
  if (scale.empty()) return;
  Result s = Result::measured("amp.fp16.loss_scale", "FP16 loss scale at the end", "", scale);
  s.param("history", history);
  sink.add(std::move(s));
  double total_skipped = 0;
  for (double x : skipped) total_skipped += x;
  Result k = Result::measured("amp.fp16.skipped_steps", "FP16 steps skipped for inf/NaN gradients",
                              "steps", skipped, false);
  k.value = total_skipped;
  k.param("steps", static_cast<double>(steps), "", 0);
  if (steps) k.param("share", 100.0 * total_skipped / static_cast<double>(steps), "%", 3);
  sink.add(std::move(k));
}

// Share of FP32 gradient values FP16 cannot hold, as they are and after loss scaling.
void add_grad_underflow(const StudyIndex& index, ResultSink& sink) {
  const auto* runs = index.runs("fp32");
  if (!runs) return;
  std::vector<double> unscaled, scaled;
  for (const AmpRunRecord* r : *runs)
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

// The checklist figure: the accuracy lost by the worse of the mixed precisions.
void add_accuracy_loss(const AccuracyLoss& worst, const AmpOptions& options, ResultSink& sink) {
  Result r = Result::measured("amp.accuracy_loss.pct", "AMP accuracy loss vs FP32", "points",
                              {worst.points}, false);
  r.param("precision", worst.precision);
  r.param("noise band", worst.band.value_or(0), "points", 2);
  r.param("seeds", options.seeds, "", 0);
  sink.add(std::move(r));
}

}  // namespace

void add_amp_results(const std::vector<AmpRunRecord>& records, const AmpOptions& options,
                     ResultSink& sink) {
  const StudyIndex index(records);
  const std::optional<double> fp32_rate = median_rate(index, "fp32");
  std::optional<AccuracyLoss> worst;
  for (const std::string& p : options.precisions) {
    const auto* runs = index.runs(p);
    if (!runs) continue;
    const FinishedRuns f = finished_runs(*runs);
    add_precision_results(p, f, fp32_rate, options, sink);
    if (p == "fp32" || f.accuracy.empty()) continue;
    const std::optional<AccuracyLoss> loss = add_accuracy_change(p, index, sink);
    if (loss && is_amp(p) && (!worst || loss->points > worst->points)) worst = loss;
  }
  add_seed_spread(index, sink);
  add_loss_scaling(index, sink);
  add_grad_underflow(index, sink);
  if (worst) add_accuracy_loss(*worst, options, sink);
}

namespace {
// "b256" (a train key's batch part) -> 256.
std::optional<double> batch_of(const std::string& part) {
  int batch = 0;
  if (part.size() < 2 || part[0] != 'b') return std::nullopt;
  const auto [end, ec] = std::from_chars(part.data() + 1, part.data() + part.size(), batch);
  if (ec != std::errc{} || end != part.data() + part.size()) return std::nullopt;
  return batch;
}
}  // namespace

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
    for (const std::string& p : train_precisions()) {
      const auto it = per.find(p);
      if (p == "fp32" || it == per.end()) continue;
      const double x = it->second / fp32->second;
      Result r = Result::measured("amp.speed." + mb.first + "." + mb.second + "." + p + ".speedup",
                                  mb.first + " " + mb.second + ": " + p + " over FP32", "x", {x});
      r.param("model", mb.first).param("precision", p);
      if (const auto batch = batch_of(mb.second)) r.param("batch", *batch, "", 0);
      r.param("images/s", it->second, "images/s", 0);
      r.param("fp32 images/s", fp32->second, "images/s", 0);
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
  candidates.emplace_back("/usr/share/datasets/fashion-mnist");
  candidates.emplace_back(".deps/usr/share/datasets/fashion-mnist");
  for (const fs::path& dir : candidates) {
    std::error_code ec;
    if (fs::exists(dir / "train-images-idx3-ubyte.gz", ec) ||
        fs::exists(dir / "train-images-idx3-ubyte", ec))
      return dir.string();
  }
  return {};
}

std::span<const SectionRule> amp_section_rules() {
  static constexpr SectionRule kRules[] = {
      {"amp.", "amp", "Mixed precision: FP32 / TF32 / FP16 / BF16, same weights and data order",
       Layout::monitor},
      {"amp.speed.", "amp.speed", "Mixed precision, speed only (synthetic batch): where it pays",
       Layout::monitor},
  };
  return kRules;
}

namespace {
// Each batch size's train run states the same protocol facts: keep the first of each.
void drop_repeated_facts(ResultSink& sink) {
  std::set<std::string> seen;
  std::vector<Fact> kept;
  for (Fact& f : sink.facts())
    if (seen.insert(f.key).second) kept.push_back(std::move(f));
  sink.facts() = std::move(kept);
}
}  // namespace

AmpOutcome run_amp_speed(const AmpOptions& options, ResultSink& sink) {
  validate_amp_options(options);
  sink.declare_sections(amp_section_rules());
  sink.declare_sections(train_section_rules(false));
  // The speedups are made when the suite ends, from the configurations measured until then.
  sink.at_end([](ResultSink& s, bool) {
    drop_repeated_facts(s);
    const std::vector<Result> train_results = s.results();
    add_amp_speed_results(train_results, s);
  });
  AmpOutcome out;
  for (int batch : options.speed_batches) {
    TrainBenchOptions t;
    t.models = options.speed_models;
    t.precisions = options.precisions;
    t.batch = batch;
    t.steps = 30;
    t.warmup = 10;
    t.device = options.device;
    t.report_environment = batch == options.speed_batches.front();
    const TrainBenchOutcome o = run_train_bench(t, sink);
    out.gpu_found = o.gpu_found;
    out.no_gpu_reason = o.no_gpu_reason;
    if (!o.gpu_found) break;
  }
  return out;
}

#if !GPUBASE_WITH_NN
AmpOutcome run_amp(const AmpOptions& options, ResultSink& sink) {
  if (options.speed) return run_amp_speed(options, sink);
  validate_amp_options(options);
  sink.declare_sections(amp_section_rules());
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
