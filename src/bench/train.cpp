// bench/train.cpp: see train.hpp. Validation, keys, the PyTorch figures, the summary of a
// measurement into Results and the orchestration; the measuring is bench/gpu/train_run.cpp.
#include "core/format.hpp"
#include "bench/train.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "core/cancel.hpp"
#include "core/error.hpp"
#include "core/stats.hpp"
#include "core/vocabulary.hpp"
#include "sys/cpu_info.hpp"

namespace gb::bench {

namespace {

constexpr int kMaxBatch = 65536;
constexpr int kMaxSteps = 100000;

// "25,557,032"
std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

double gib(std::size_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0); }

// " BF16" -> "bf16": names are matched without case and surrounding blanks.
std::string normalized(std::string name) {
  const auto blank = [](unsigned char ch) { return std::isspace(ch) != 0; };
  while (!name.empty() && blank(static_cast<unsigned char>(name.back()))) name.pop_back();
  std::size_t lead = 0;
  while (lead < name.size() && blank(static_cast<unsigned char>(name[lead]))) ++lead;
  name.erase(0, lead);
  for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return name;
}

// The names asked for, in canonical order, each once; throws for a name not in `valid`.
std::vector<std::string> select(std::vector<std::string> asked,
                                const std::vector<std::string>& valid, const char* what,
                                const char* option) {
  for (std::string& a : asked) a = normalized(std::move(a));
  for (const std::string& a : asked)
    if (std::find(valid.begin(), valid.end(), a) == valid.end())
      throw Error(ErrorKind::usage, std::string("unknown ") + what + " '" + a + "' (" + option +
                                        ": " + join(valid) + ")");
  std::vector<std::string> out;
  for (const std::string& v : valid)
    if (std::find(asked.begin(), asked.end(), v) != asked.end()) out.push_back(v);
  return out;
}

std::string config_label(const TrainConfig& c) {
  return train_model_title(c.model) + " " + train_precision_title(c.precision) + ", batch " +
         std::to_string(c.batch) + (c.cuda_graph ? ", CUDA graph" : "");
}

Result& config_params(Result& r, const TrainConfig& c) {
  return r.param("model", c.model)
      .param("precision", c.precision)
      .param("batch", c.batch, "", 0)
      .param("graph", c.cuda_graph ? "yes" : "no");
}

Result failed_result(const TrainMeasurement& m, const std::string& reason) {
  Result r = Result::skipped(train_key(m.config, "images_per_s"),
                             "training " + config_label(m.config), "images/s", "");
  r.status = Status::fail;
  r.reason = reason;
  config_params(r, m.config);
  r.samples.clear();
  for (const double ms : m.step_ms)
    if (ms > 0) r.samples.push_back(m.config.batch * 1e3 / ms);
  r.telemetry = m.telemetry;
  return r;
}

// Out of memory and other engine errors name their own remedy; a non-finite loss gets one here.
std::string non_finite_loss_reason(const TrainMeasurement& m, float loss) {
  std::string why = "the loss is " + std::string(std::isnan(loss) ? "NaN" : "infinite") +
                    " after " + std::to_string(m.warmup) + " warm-up and " +
                    std::to_string(m.step_ms.size()) + " timed steps: a diverged or broken step "
                    "is not a training speed";
  if (m.first_loss) why += " (first loss " + fixed(*m.first_loss, 3) + ")";
  return why;
}

}  // namespace

const std::vector<std::string>& train_models() {
  static const std::vector<std::string> models = [] {
    std::vector<std::string> out;
    for (const Model m : all_models()) out.emplace_back(to_string(m));
    return out;
  }();
  return models;
}

const std::vector<std::string>& train_precisions() {
  static const std::vector<std::string> precisions = [] {
    std::vector<std::string> out;
    for (const Precision p : all_precisions()) out.emplace_back(to_string(p));
    return out;
  }();
  return precisions;
}

std::vector<TrainConfig> train_configs(const TrainBenchOptions& o) {
  const std::vector<std::string> models =
      select(o.models.empty() ? std::vector<std::string>{"resnet50"} : o.models, train_models(),
             "model", "--model");
  const std::vector<std::string> precisions =
      select(o.precisions.empty() ? train_precisions() : o.precisions, train_precisions(),
             "precision", "--precision");
  if (!o.data.empty()) {
    for (const std::string& m : models)
      if (m == "small_resnet")
        throw Error(ErrorKind::usage, "--data feeds JPEG images at 224x224 to resnet50 and "
                                      "mobilenet_v2; small_resnet trains on Fashion-MNIST in "
                                      "`gpubase amp`");
    if (o.data_prefetch < 2 || o.data_prefetch > 64)
      throw Error(ErrorKind::usage, "--prefetch: give 2 .. 64 batches");
    std::error_code ec;
    if (!std::filesystem::exists(o.data, ec))
      throw Error(ErrorKind::usage, "--data " + o.data + ": no such file or directory");
  }
  if (o.batch < 1 || o.batch > kMaxBatch)
    throw Error(ErrorKind::usage, "--batch " + std::to_string(o.batch) + ": give 1 .. " +
                                      std::to_string(kMaxBatch) + " images per step");
  if (o.steps < 1 || o.steps > kMaxSteps)
    throw Error(ErrorKind::usage, "--steps " + std::to_string(o.steps) + ": give 1 .. " +
                                      std::to_string(kMaxSteps) + " timed steps");
  if (o.warmup < 0 || o.warmup > kMaxSteps)
    throw Error(ErrorKind::usage, "--warmup " + std::to_string(o.warmup) + ": give 0 .. " +
                                      std::to_string(kMaxSteps) + " warm-up steps");
  if (o.cuda_graph && o.warmup < kTrainMinGraphWarmup)
    throw Error(ErrorKind::usage, "--graph captures the step during the warm-up: give --warmup " +
                                      std::to_string(kTrainMinGraphWarmup) +
                                      " or more so the capture is never timed, or --no-graph");
  std::vector<TrainConfig> configs;
  for (const std::string& m : models)
    for (const std::string& p : precisions) configs.push_back({m, p, o.batch, o.cuda_graph});
  return configs;
}

std::string train_key(const TrainConfig& c, std::string_view figure) {
  return "train." + c.model + "." + c.precision + ".b" + std::to_string(c.batch) + "." +
         std::string(figure);
}

std::string train_model_title(std::string_view model) {
  if (model == "resnet50") return "ResNet-50";
  if (model == "mobilenet_v2") return "MobileNetV2";
  if (model == "small_resnet") return "small ResNet (28x28)";
  return std::string(model);
}

std::string train_precision_title(std::string_view precision) {
  std::string out(precision);
  for (char& ch : out) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return out;
}

namespace {

struct TorchRow {
  const char* model;
  const char* precision;
  int batch;
  double images_per_s;
  const char* note;
};

// DESIGN.md "Figures to beat", measured on one H200 with PyTorch 2.11, CUDA 13.0, cuDNN 9.19.
constexpr TorchRow kTorchEager[] = {
    {"resnet50", "fp32", 256, 1065, ""},
    {"resnet50", "tf32", 256, 2221, ""},
    {"resnet50", "fp16", 256, 5823, ", AMP, channels_last"},
    {"resnet50", "bf16", 256, 4727, ", AMP, channels_last"},
    {"mobilenet_v2", "fp32", 256, 2202, ""},
    {"mobilenet_v2", "fp16", 256, 8985, ", AMP, channels_last"},
    {"mobilenet_v2", "fp32", 64, 2052, ""},
    {"mobilenet_v2", "fp16", 64, 2687, ", AMP"},
    {"small_resnet", "fp32", 256, 84000, ", Fashion-MNIST"},
    {"small_resnet", "bf16", 256, 67000, ", autocast, Fashion-MNIST"},
    {"small_resnet", "fp16", 256, 65500, ", autocast, Fashion-MNIST; 62-69k measured, midpoint"},
};
constexpr TorchRow kTorchCompile[] = {
    {"resnet50", "fp16", 256, 6826, ", AMP, channels_last"},
    {"resnet50", "bf16", 256, 6815, ", AMP, channels_last"},
};

template <std::size_t N>
std::optional<TorchFigure> find_torch(const TorchRow (&rows)[N], const std::string& device,
                                      const TrainConfig& c, const char* how) {
  if (device.find("H200") == std::string::npos) return std::nullopt;
  for (const TorchRow& row : rows)
    if (c.model == row.model && c.precision == row.precision && c.batch == row.batch)
      return TorchFigure{row.images_per_s,
                         std::string("PyTorch 2.11 ") + how + " on an H200, torchvision " +
                             train_model_title(c.model) + " batch " + std::to_string(row.batch) +
                             row.note + " (DESIGN.md; bench/train_vs_torch.py measures it "
                                        "in the same run)"};
  return std::nullopt;
}

}  // namespace

std::optional<TorchFigure> torch_eager_figure(const std::string& device_name,
                                              const TrainConfig& c) {
  return find_torch(kTorchEager, device_name, c, "eager");
}

std::optional<TorchFigure> torch_compile_figure(const std::string& device_name,
                                                const TrainConfig& c) {
  return find_torch(kTorchCompile, device_name, c, "torch.compile");
}

std::optional<double> train_data_wait_pct(const TrainMeasurement& m) {
  if (m.gpu_step_ms.empty() || m.gpu_step_ms.size() != m.step_ms.size()) return std::nullopt;
  double busy = 0, wall = 0;
  for (std::size_t i = 0; i < m.step_ms.size(); ++i) {
    busy += m.gpu_step_ms[i];
    wall += m.step_ms[i];
  }
  if (!(wall > 0)) return std::nullopt;
  return std::clamp(100.0 * (1.0 - busy / wall), 0.0, 100.0);
}

std::vector<Result> train_results(const TrainMeasurement& m) {
  const TrainConfig& c = m.config;
  if (!m.error.empty()) return {failed_result(m, m.error)};
  if (m.final_loss && !std::isfinite(*m.final_loss))
    return {failed_result(m, non_finite_loss_reason(m, *m.final_loss))};
  if (m.interrupted && m.step_ms.empty())
    return train_skipped_results({c}, "interrupted (Ctrl-C) before a timed step completed");
  if (m.step_ms.empty() || !m.final_loss) return {failed_result(m, "no timed step completed")};

  const std::string label = config_label(c);
  std::vector<double> rates;
  for (const double ms : m.step_ms) rates.push_back(ms > 0 ? c.batch * 1e3 / ms : 0);
  const double median_ms = quantile(m.step_ms, 0.5);
  Result ips = Result::measured(train_key(c, "images_per_s"), "training " + label, "images/s",
                                std::move(rates));
  // images/s from the median step, so images/s and step_ms agree exactly.
  if (median_ms > 0) ips.value = c.batch * 1e3 / median_ms;
  config_params(ips, c);
  ips.param("steps", static_cast<double>(m.step_ms.size()), "", 0);
  if (m.interrupted) ips.param("steps_asked", m.steps_asked, "", 0);
  ips.param("warmup_steps", m.warmup, "", 0)
      .param("step_ms_median", median_ms, "ms", 2)
      .param("step_ms_min", *std::min_element(m.step_ms.begin(), m.step_ms.end()), "ms", 2)
      .param("step_ms_max", *std::max_element(m.step_ms.begin(), m.step_ms.end()), "ms", 2)
      .param("final_loss", *m.final_loss, "", 4);
  if (m.first_loss) ips.param("first_loss", *m.first_loss, "", 4);
  if (m.parameter_count) ips.param("parameters", static_cast<double>(m.parameter_count), "", 0);
  if (!m.input_layout.empty()) ips.param("input", m.input_layout);
  ips.param("trainer_memory_gib", gib(m.trainer_bytes), "GiB", 2);
  if (m.used_bytes) ips.param("device_memory_used_gib", gib(*m.used_bytes), "GiB", 2);
  if (m.loss_scale) {
    ips.param("loss_scale", *m.loss_scale, "", 0);
    ips.param("skipped_steps", static_cast<double>(m.skipped_steps), "", 0);
  }
  ips.telemetry = m.telemetry;
  const bool fed = !m.data_source.empty();
  if (fed) {
    ips.param("data", m.data_source);
    ips.param("bad_samples", static_cast<double>(m.bad_samples), "", 0);
  } else {
    // PyTorch's figures are on a synthetic batch too: no ratio for a loader-fed run.
    if (const auto t = torch_eager_figure(m.device_name, c))
      ips.reference("pytorch", t->images_per_s, t->source);
    if (const auto t = torch_compile_figure(m.device_name, c))
      ips.reference("torch_compile", t->images_per_s, t->source);
  }
  if (m.loss_scale && m.skipped_steps > 0)
    ips.reason = std::to_string(m.skipped_steps) + " of the " + std::to_string(m.step_ms.size()) +
                 " timed steps skipped their update (FP16 gradients overflowed at loss scale " +
                 fixed(*m.loss_scale, 0) + "); a skipped update is a little cheaper";

  Result step = Result::measured(train_key(c, "step_ms"), "training step " + label, "ms",
                                 m.step_ms, /*higher_is_better=*/false);
  config_params(step, c);
  step.param("method", "CUDA events between consecutive steps on the trainer's stream, no host "
                       "synchronisation until the last");

  Result mem = Result::measured(train_key(c, "memory_gib"), "device memory " + label, "GiB",
                                {gib(m.trainer_bytes)}, /*higher_is_better=*/false);
  config_params(mem, c);
  mem.param("source", "Trainer::device_bytes(): weights, gradients, optimizer state, "
                      "activations and workspaces the engine allocated; device_memory_used_gib: "
                      "cudaMemGetInfo before building the model and after the timed steps (also "
                      "library workspaces and graph memory)");
  if (m.used_bytes) mem.param("device_memory_used_gib", gib(*m.used_bytes), "GiB", 2);
  if (m.total_bytes) mem.param("device_memory_total_gib", gib(*m.total_bytes), "GiB", 1);
  std::vector<Result> out{std::move(ips), std::move(step), std::move(mem)};
  if (const auto wait = train_data_wait_pct(m)) {
    Result w = Result::measured(train_key(c, "data_wait_pct"),
                                "GPU waiting for data " + label, "%", {*wait},
                                /*higher_is_better=*/false);
    config_params(w, c);
    const double gpu_ms = quantile(m.gpu_step_ms, 0.5);
    w.param("data", m.data_source)
        .param("gpu_step_ms", gpu_ms, "ms", 2)
        .param("step_ms", median_ms, "ms", 2)
        .param("method", "1 - sum of the steps' GPU time (events right around each step) / sum "
                         "of the step intervals (events between consecutive steps, waits "
                         "included); gpu_step_ms and step_ms are the medians of the two");
    if (*wait >= 10) {
      w.status = Status::warn;
      w.reason = "the GPU waited for data " + fixed(*wait, 1) + " % of the time (target < 10 %)";
      w.advice = "the loader cannot keep up with this model: more workers (--workers), the "
                 "nvJPEG path or the CPU/GPU split (`gpubase loader --decode both`), a packed "
                 "dataset on faster storage";
    }
    out.push_back(std::move(w));
  }
  return out;
}

std::vector<Result> train_skipped_results(const std::vector<TrainConfig>& configs,
                                          const std::string& reason) {
  std::vector<Result> out;
  for (const TrainConfig& c : configs) {
    Result r = Result::skipped(train_key(c, "images_per_s"), "training " + config_label(c),
                               "images/s", reason);
    config_params(r, c);
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<Result> train_unmeasured_results(const std::vector<TrainConfig>& configs,
                                             const std::vector<Result>& reported) {
  std::vector<TrainConfig> rest;
  for (const TrainConfig& c : configs) {
    const std::string key = train_key(c, "images_per_s");
    if (std::none_of(reported.begin(), reported.end(),
                     [&](const Result& r) { return r.key == key; }))
      rest.push_back(c);
  }
  return train_skipped_results(rest, "interrupted (Ctrl-C) before it completed");
}

std::string train_engine_missing_reason() {
#if !defined(GPUBASE_WITH_CUDA)
  return "this gpubase was built without CUDA (GPUBASE_WITH_CUDA=OFF)";
#elif !defined(GPUBASE_WITH_NN)
  return "this gpubase was built without the training engine (src/nn has no sources in this "
         "build)";
#else
  return "";
#endif
}

namespace {

#ifdef GPUBASE_WITH_NN
void add_train_facts(const TrainBenchOptions& o, ResultSink& sink) {
  sink.add_fact({"train.data", "training data",
                 o.data.empty()
                     ? "synthetic batch made once on the GPU (normal(0,1) images, random labels)"
                     : o.data + " through the loader (JPEG decode + RandomResizedCrop 224 + flip "
                                "on CPU workers, pinned slots, H2D and normalization on the "
                                "GPU)"});
  sink.add_fact({"train.steps", "steps per configuration",
                 std::to_string(o.warmup) + " warm-up + " + std::to_string(o.steps) + " timed"});
  sink.add_fact({"train.graph", "CUDA graph",
                 o.cuda_graph ? "yes: the whole step captured in warm-up, then replayed" : "no"});
  sink.add_fact({"train.optimizer", "optimizer",
                 "SGD, momentum 0.9, weight decay 1e-4, FP32 master weights"});
  sink.add_fact({"train.seed", "weight seed", std::to_string(o.seed)});
}

std::string progress_text(const TrainMeasurement& m, const std::vector<Result>& results) {
  const std::string what = "train: " + m.config.model + " " + m.config.precision + " b" +
                           std::to_string(m.config.batch) + ": ";
  const Result& r = results.front();
  if (r.status == Status::fail) return what + "FAILED: " + r.reason;
  if (r.status == Status::skipped) return what + "skipped: " + r.reason;
  std::string text = what + grouped(r.value.value_or(0)) + " images/s";
  if (results.size() > 2 && results[1].value && results[2].value)
    text += " (" + fixed(*results[1].value, 1) + " ms/step, " + fixed(*results[2].value, 1) +
            " GiB, loss " + fixed(m.final_loss.value_or(0), 3) + ")";
  if (const Reference* t = r.find_reference("pytorch"); t && t->ratio > 0)
    text += ", " + fixed(t->ratio, 2) + "x PyTorch's " + grouped(t->value);
  return text;
}
#endif

}  // namespace

TrainBenchOutcome run_train_bench(const TrainBenchOptions& options, ResultSink& sink) {
  const std::vector<TrainConfig> configs = train_configs(options);
  TrainBenchOutcome outcome;
  outcome.configurations = configs.size();
  if (options.report_environment)
    for (Fact& f : sys::host_facts(sys::read_host_info())) sink.add_fact(std::move(f));
  std::string reason;
  std::optional<DeviceContext> device = open_device(options.device, reason);
  if (!device) {
    outcome.no_gpu_reason = reason;
    for (Result& r : train_skipped_results(configs, reason)) sink.add(std::move(r));
    return outcome;
  }
  outcome.gpu_found = true;
#if !defined(GPUBASE_WITH_CUDA) || !defined(GPUBASE_WITH_NN)
  for (Result& r : train_skipped_results(configs, train_engine_missing_reason()))
    sink.add(std::move(r));
#else
  if (options.report_environment) add_device_facts(*device, sink);
  add_train_facts(options, sink);

  sink.at_end([configs](ResultSink& s, bool interrupted) {
    if (!interrupted) return;
    for (Result& r : train_unmeasured_results(configs, s.results())) s.add(std::move(r));
  });
  for (const TrainConfig& c : configs) {
    throw_if_cancelled();
    sink.progress("train: " + c.model + " " + c.precision + " batch " + std::to_string(c.batch) +
                  ": building the model, " + std::to_string(options.warmup) + " warm-up + " +
                  std::to_string(options.steps) + " timed steps");
    const TrainMeasurement m = measure_train(c, options, *device, sink);
    std::vector<Result> results = train_results(m);
    sink.progress(progress_text(m, results));
    if (results.front().status == Status::fail) ++outcome.failed;
    for (Result& r : results) sink.add(std::move(r));
  }
  throw_if_cancelled();  // Ctrl-C in the last configuration's timed steps
#endif
  return outcome;
}

}  // namespace gb::bench
