// bench/train.cpp: see train.hpp. Validation, keys, the PyTorch figures, the summary of a
// measurement into Results and the orchestration; the measuring is bench/gpu/train_run.cpp.
#include "bench/train.hpp"
#include "core/format.hpp"

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

double gib(std::size_t bytes) {
  return static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0);
}

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

// What fed a loader-fed run: the decode mode, the split's share, nvJPEG's backend.
Result& feed_params(Result& r, const TrainMeasurement& m) {
  if (m.data_source.empty()) return r;
  r.param("data", m.data_source);
  if (!m.data_decode.empty()) r.param("decode", m.data_decode);
  if (m.data_gpu_share) {
    r.param("gpu_share_pct", 100 * *m.data_gpu_share, "%", 1);
    if (!m.data_gpu_share_source.empty()) r.param("gpu_share_source", m.data_gpu_share_source);
  }
  if (!m.data_nvjpeg_backend.empty()) {
    r.param("nvjpeg_backend", m.data_nvjpeg_backend);
    if (!m.data_nvjpeg_memory.empty()) r.param("nvjpeg_memory", m.data_nvjpeg_memory);
    r.param("decode_failures", static_cast<double>(m.data_decode_failures), "", 0);
    if (m.data_decode_host_ms) r.param("decode_host_ms_per_batch", *m.data_decode_host_ms, "ms", 2);
    if (m.data_decode_gpu_ms) r.param("decode_gpu_ms_per_batch", *m.data_decode_gpu_ms, "ms", 2);
  }
  if (m.model_alone_images_per_s)
    r.param("model_alone_images_per_s", *m.model_alone_images_per_s, "images/s", 0);
  if (!m.data_feed.empty()) r.param("feed", m.data_feed);
  return r;
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
                    std::to_string(m.step_ms.size()) +
                    " timed steps: a diverged or broken step "
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
  if (o.data.empty() && (o.data_decode != pipeline::DecodeMode::cpu || o.data_gpu_share != 0))
    throw Error(ErrorKind::usage,
                "--decode and --gpu-share choose how --data is decoded: give "
                "--data PATH (without it the input is a synthetic batch)");
  if (!(o.data_gpu_share >= 0 && o.data_gpu_share <= 1))
    throw Error(ErrorKind::usage,
                "--gpu-share: give the share of samples nvJPEG decodes, in "
                "(0, 1], or 0 for the balanced share");
  if (o.data_gpu_share != 0 && o.data_decode != pipeline::DecodeMode::both)
    throw Error(ErrorKind::usage, "--gpu-share sets the CPU/GPU split: it needs --decode both");
  if (!o.data.empty()) {
    for (const std::string& m : models)
      if (m == "small_resnet")
        throw Error(ErrorKind::usage,
                    "--data feeds JPEG images at 224x224 to resnet50 and "
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

std::string phases_text(const std::vector<TrainMeasurement::Phase>& phases) {
  std::string out;
  for (const TrainMeasurement::Phase& ph : phases) {
    std::string name = ph.name;
    std::replace(name.begin(), name.end(), '_', ' ');
    if (name == "warmup") name = "warm-up";
    out += (out.empty() ? "" : ", ") + name + " " + fixed(ph.seconds, 1) + " s";
  }
  return out;
}

namespace {

// <cfg>.images_per_s of a configuration that timed its steps.
Result images_result(const TrainMeasurement& m, double median_ms) {
  const TrainConfig& c = m.config;
  std::vector<double> rates;
  for (const double ms : m.step_ms) rates.push_back(ms > 0 ? c.batch * 1e3 / ms : 0);
  Result ips = Result::measured(train_key(c, "images_per_s"), "training " + config_label(c),
                                "images/s", std::move(rates));
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
  if (!m.data_source.empty()) {
    feed_params(ips, m);
    ips.param("bad_samples", static_cast<double>(m.bad_samples), "", 0);
  }
  for (const TrainMeasurement::Phase& ph : m.phases)
    ips.param("phase_" + ph.name + "_s", ph.seconds, "s", 1);
  if (m.loss_scale && m.skipped_steps > 0)
    ips.reason = std::to_string(m.skipped_steps) + " of the " + std::to_string(m.step_ms.size()) +
                 " timed steps skipped their update (FP16 gradients overflowed at loss scale " +
                 fixed(*m.loss_scale, 0) + "); a skipped update is a little cheaper";
  return ips;
}

Result memory_result(const TrainMeasurement& m) {
  const TrainConfig& c = m.config;
  Result mem = Result::measured(train_key(c, "memory_gib"), "device memory " + config_label(c),
                                "GiB", {gib(m.trainer_bytes)}, /*higher_is_better=*/false);
  config_params(mem, c);
  mem.param("source",
            "Trainer::device_bytes(): weights, gradients, optimizer state, "
            "activations and workspaces the engine allocated; device_memory_used_gib: "
            "cudaMemGetInfo before building the model and after the timed steps (also "
            "library workspaces and graph memory)");
  if (m.used_bytes) mem.param("device_memory_used_gib", gib(*m.used_bytes), "GiB", 2);
  if (m.total_bytes) mem.param("device_memory_total_gib", gib(*m.total_bytes), "GiB", 1);
  return mem;
}

// <cfg>.data_wait_pct of a run fed by the input pipeline. The verdict is diagnose's, with the
// checklist's data-loading limits.
Result data_wait_result(const TrainMeasurement& m, double wait, double median_ms) {
  const TrainConfig& c = m.config;
  Result w = Result::measured(train_key(c, "data_wait_pct"),
                              "GPU waiting for data " + config_label(c), "%", {wait},
                              /*higher_is_better=*/false);
  config_params(w, c);
  feed_params(w, m);
  double busy_ms = 0, wall_ms = 0;
  for (const double ms : m.gpu_step_ms) busy_ms += ms;
  for (const double ms : m.step_ms) wall_ms += ms;
  w.param("gpu_step_ms", quantile(m.gpu_step_ms, 0.5), "ms", 2)
      .param("step_ms", median_ms, "ms", 2)
      .param("gpu_step_ms_sum", busy_ms, "ms", 2)
      .param("step_ms_sum", wall_ms, "ms", 2)
      .param("method",
             "100 x (1 - gpu_step_ms_sum / step_ms_sum): the steps' GPU time (events right "
             "around each step) against the step intervals (events between consecutive steps, "
             "waits included); gpu_step_ms and step_ms are the medians of the two");
  return w;
}

}  // namespace

std::vector<Result> train_results(const TrainMeasurement& m) {
  const TrainConfig& c = m.config;
  if (!m.skipped_reason.empty()) {
    std::vector<Result> skipped = train_skipped_results({c}, m.skipped_reason);
    feed_params(skipped.front(), m);
    return skipped;
  }
  if (!m.error.empty()) return {failed_result(m, m.error)};
  if (m.final_loss && !std::isfinite(*m.final_loss))
    return {failed_result(m, non_finite_loss_reason(m, *m.final_loss))};
  if (m.interrupted && m.step_ms.empty())
    return train_skipped_results({c}, "interrupted (Ctrl-C) before a timed step completed");
  if (m.step_ms.empty() || !m.final_loss) return {failed_result(m, "no timed step completed")};

  const double median_ms = quantile(m.step_ms, 0.5);
  Result step = Result::measured(train_key(c, "step_ms"), "training step " + config_label(c), "ms",
                                 m.step_ms, /*higher_is_better=*/false);
  config_params(step, c);
  if (m.launch_thread_cpu_pct) step.param("launch_thread_cpu_pct", *m.launch_thread_cpu_pct, "%", 1);
  step.param("method",
             "CUDA events between consecutive steps on the trainer's stream; the host waits "
             "only for a step the in-flight limit back, so host gaps count");
  std::vector<Result> out{images_result(m, median_ms), std::move(step), memory_result(m)};
  if (const auto wait = train_data_wait_pct(m))
    out.push_back(data_wait_result(m, *wait, median_ms));
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
std::string train_data_text(const TrainBenchOptions& o) {
  if (o.data.empty())
    return "synthetic batch made once on the GPU (normal(0,1) images, random labels)";
  switch (o.data_decode) {
    case pipeline::DecodeMode::gpu:
      return o.data +
             " through the input pipeline, nvJPEG (reader threads, batched nvJPEG "
             "decode, one resize-crop-flip-normalize kernel on the GPU)";
    case pipeline::DecodeMode::both:
      return o.data +
             " through the input pipeline, the CPU/GPU split (a share of the samples "
             "decoded by nvJPEG, the rest by CPU workers, in the same batches)";
    case pipeline::DecodeMode::cpu:
      break;
  }
  return o.data +
         " through the input pipeline, CPU decode (JPEG decode + RandomResizedCrop "
         "224 + flip on CPU workers, pinned slots, H2D and normalization on the GPU)";
}

void add_train_facts(const TrainBenchOptions& o, ResultSink& sink) {
  sink.add_fact({"train.data", "training data", train_data_text(o)});
  sink.add_fact({"train.steps", "steps per configuration",
                 std::to_string(o.warmup) + " warm-up + " + std::to_string(o.steps) + " timed"});
  sink.add_fact({"train.graph", "CUDA graph",
                 o.cuda_graph ? "yes: the whole step captured in warm-up, then replayed" : "no"});
  sink.add_fact({"train.in_flight", "steps queued on the GPU",
                 o.max_in_flight > 0
                     ? "at most " + std::to_string(o.max_in_flight) +
                           " (the launching thread sleeps until the oldest ends)"
                     : "no limit"});
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
  return text;
}
#endif

}  // namespace

std::span<const SectionRule> train_section_rules(bool fed_by_loader) {
  static constexpr SectionRule kSynthetic[] = {{"train.", "train",
                                                "Training throughput (synthetic batch on the GPU)",
                                                Layout::configurations}};
  static constexpr SectionRule kFed[] = {
      {"train.", "train", "Training throughput (fed by the loader)", Layout::configurations}};
  if (fed_by_loader) return kFed;
  return kSynthetic;
}

TrainBenchOutcome run_train_bench(const TrainBenchOptions& options, ResultSink& sink) {
  sink.declare_sections(train_section_rules(!options.data.empty()));
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
