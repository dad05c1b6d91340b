// core/metrics.hpp: live figures for a monitoring system, as numbers: metric families (a name in
// base units, a help text, gauge or counter) each with its labelled samples. The sampler's side
// (watch/metrics) fills them; a printer (report/prometheus) writes them in Prometheus' text
// exposition format. A figure that was not measured has no sample, never a made-up 0.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace gb {

enum class MetricType { gauge, counter };

struct MetricSample {
  std::vector<std::pair<std::string, std::string>> labels;  // name, value
  double value = 0;
};

struct MetricFamily {
  std::string name;  // "gpubase_gpu_utilization_ratio": base units, _total for counters
  std::string help;  // one line
  MetricType type = MetricType::gauge;
  std::vector<MetricSample> samples;
};

}  // namespace gb
