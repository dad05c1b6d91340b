// report/prometheus.hpp: metric families (core/metrics.hpp) in Prometheus' text exposition
// format, version 0.0.4 (what /metrics serves and node_exporter's textfile collector reads):
//
//   # HELP gpubase_gpu_utilization_ratio Share of time the GPU ran a kernel (NVML), 0..1.
//   # TYPE gpubase_gpu_utilization_ratio gauge
//   gpubase_gpu_utilization_ratio{gpu="0",uuid="GPU-..."} 0.87
//
// Label values and help texts are escaped as the format asks (\\, \" and \n in label values;
// \\ and \n in help); NaN and infinities are written NaN, +Inf, -Inf; other numbers in the
// shortest text that reads back as the same double. No timestamps (the textfile collector
// refuses them). A family without samples is left out.
#pragma once
#include <span>
#include <string>
#include <string_view>

#include "core/metrics.hpp"

namespace gb::report {

// The Content-Type /metrics answers with.
inline constexpr std::string_view kPrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";

// Throws gb::Error (runtime) for a metric or label name the format does not allow, or one
// family name given twice: a mistake in the caller, found by the tests.
std::string format_prometheus(std::span<const MetricFamily> families);

// The pieces, for tests: a label value escaped, a number written.
std::string prometheus_escape_label(std::string_view value);
std::string prometheus_escape_help(std::string_view text);
std::string prometheus_number(double value);
bool valid_metric_name(std::string_view name);
bool valid_label_name(std::string_view name);

}  // namespace gb::report
