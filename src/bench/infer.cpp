// bench/infer.cpp: the CPU half of the inference suite (see infer.hpp).
#include "bench/infer.hpp"

#include <algorithm>

#include "bench/train.hpp"
#include "core/cancel.hpp"
#include "core/format.hpp"
#include "core/stats.hpp"

namespace gb::bench {

std::string infer_key(const std::string& model, const std::string& precision, int batch) {
  return "infer." + model + "." + precision + ".b" + std::to_string(batch) + ".images_per_s";
}

std::span<const SectionRule> infer_section_rules() {
  static constexpr SectionRule kRules[] = {
      {"infer.", "infer", "Inference throughput (forward only, CUDA graph, synthetic batch)",
       Layout::benchmark}};
  return kRules;
}

Result infer_result(const InferMeasurement& m) {
  const std::string key = infer_key(m.model, m.precision, m.batch);
  const std::string label = train_model_title(m.model) + " inference " +
                            train_precision_title(m.precision) + " b" + std::to_string(m.batch);
  std::vector<double> rates;
  for (const double ms : m.pass_ms)
    if (ms > 0) rates.push_back(m.batch * 1e3 / ms);
  if (!m.error.empty() || rates.empty()) {
    Result r = Result::skipped(key, label, "images/s",
                               m.error.empty() ? "no pass was timed" : m.error);
    if (!m.error.empty()) r.status = Status::fail;
    return r;
  }
  Result r = Result::measured(key, label, "images/s", rates);
  r.param("model", m.model);
  r.param("precision", m.precision);
  r.param("batch", static_cast<double>(m.batch), "", 0);
  r.param("passes", static_cast<double>(m.pass_ms.size()), "", 0);
  r.param("pass_ms_median", quantile(m.pass_ms, 0.5), "ms", 3);
  r.param("graph", "yes");
  return r;
}

InferBenchOutcome run_infer_bench(const InferBenchOptions& options, ResultSink& sink) {
  sink.declare_sections(infer_section_rules());
  InferBenchOutcome outcome;
  std::string reason;
  std::optional<DeviceContext> device = open_device(options.device, reason);
  auto skip_all = [&](const std::string& why) {
    for (const std::string& p : options.precisions) {
      sink.add(Result::skipped(infer_key(options.model, p, options.batch),
                               train_model_title(options.model) + " inference " +
                                   train_precision_title(p) + " b" +
                                   std::to_string(options.batch),
                               "images/s", why));
    }
  };
  if (!device) {
    outcome.no_gpu_reason = reason;
    skip_all(reason);
    return outcome;
  }
  outcome.gpu_found = true;
#if !defined(GPUBASE_WITH_CUDA) || !defined(GPUBASE_WITH_NN)
  skip_all(train_engine_missing_reason());
#else
  for (const std::string& p : options.precisions) {
    throw_if_cancelled();
    sink.progress("inference: " + options.model + " " + p + " batch " +
                  std::to_string(options.batch));
    const InferMeasurement m = measure_infer(p, options);
    Result r = infer_result(m);
    if (r.value) sink.progress("  " + grouped(*r.value) + " images/s");
    sink.add(std::move(r));
    if (m.interrupted) throw_if_cancelled();
  }
#endif
  return outcome;
}

}  // namespace gb::bench
