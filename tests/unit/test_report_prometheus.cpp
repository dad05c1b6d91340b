// tests/unit/test_report_prometheus.cpp: the Prometheus text exposition format (report/
// prometheus) and the watch sample's metric families (watch/metrics): names, escaping, NaN and
// infinities, HELP/TYPE lines, units.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "core/error.hpp"
#include "report/prometheus.hpp"
#include "watch/metrics.hpp"

using gb::MetricFamily;
using gb::MetricType;
using gb::report::format_prometheus;

namespace {

std::string value_line(const std::string& text, const std::string& prefix) {
  const auto at = text.find("\n" + prefix);
  if (at == std::string::npos) return "";
  return text.substr(at + 1, text.find('\n', at + 1) - at - 1);
}

}  // namespace

TEST(PrometheusFormat, WritesHelpTypeAndOneLinePerSample) {
  const MetricFamily f{"gpubase_cpu_core_busy_ratio", "Busy share of each core, 0..1.",
                       MetricType::gauge, {{{{"core", "0"}}, 0.25}, {{{"core", "1"}}, 1}}};
  EXPECT_EQ(format_prometheus({&f, 1}),
            "# HELP gpubase_cpu_core_busy_ratio Busy share of each core, 0..1.\n"
            "# TYPE gpubase_cpu_core_busy_ratio gauge\n"
            "gpubase_cpu_core_busy_ratio{core=\"0\"} 0.25\n"
            "gpubase_cpu_core_busy_ratio{core=\"1\"} 1\n");
}

TEST(PrometheusFormat, CountersAreTypedCounter) {
  const MetricFamily f{"gpubase_watch_samples_total", "Samples.", MetricType::counter, {{{}, 12}}};
  const std::string text = format_prometheus({&f, 1});
  EXPECT_NE(text.find("# TYPE gpubase_watch_samples_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("\ngpubase_watch_samples_total 12\n"), std::string::npos);
}

TEST(PrometheusFormat, EscapesBackslashQuoteAndNewlineInLabelValues) {
  EXPECT_EQ(gb::report::prometheus_escape_label("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  const MetricFamily f{"m", "h", MetricType::gauge, {{{{"path", "C:\\x \"y\"\nz"}}, 1}}};
  EXPECT_EQ(value_line(format_prometheus({&f, 1}), "m{"), "m{path=\"C:\\\\x \\\"y\\\"\\nz\"} 1");
}

TEST(PrometheusFormat, EscapesBackslashAndNewlineInHelpButNotQuotes) {
  EXPECT_EQ(gb::report::prometheus_escape_help("a \"q\" \\ b\nc"), "a \"q\" \\\\ b\\nc");
}

TEST(PrometheusFormat, WritesNanAndInfinitiesAsTheFormatSpellsThem) {
  EXPECT_EQ(gb::report::prometheus_number(std::numeric_limits<double>::quiet_NaN()), "NaN");
  EXPECT_EQ(gb::report::prometheus_number(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(gb::report::prometheus_number(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(gb::report::prometheus_number(-0.0), "0");
}

TEST(PrometheusFormat, NumbersReadBackExactly) {
  for (const double v : {0.1, 1.0 / 3, 6.02e23, -1.5e-300, 123456789012345.0, 1e21}) {
    const std::string text = gb::report::prometheus_number(v);
    EXPECT_EQ(std::stod(text), v) << text;
  }
  EXPECT_EQ(gb::report::prometheus_number(0.87), "0.87");
  EXPECT_EQ(gb::report::prometheus_number(1.5e9), "1500000000");
}

TEST(PrometheusFormat, ChecksMetricAndLabelNames) {
  EXPECT_TRUE(gb::report::valid_metric_name("gpubase_gpu_utilization_ratio"));
  EXPECT_TRUE(gb::report::valid_metric_name("job:rate5m"));
  EXPECT_FALSE(gb::report::valid_metric_name("2xx"));
  EXPECT_FALSE(gb::report::valid_metric_name("gpu-util"));
  EXPECT_FALSE(gb::report::valid_metric_name(""));
  EXPECT_TRUE(gb::report::valid_label_name("uuid"));
  EXPECT_FALSE(gb::report::valid_label_name("__name__"));
  EXPECT_FALSE(gb::report::valid_label_name("a:b"));
  const MetricFamily bad_name{"gpu util", "h", MetricType::gauge, {{{}, 1}}};
  EXPECT_THROW(format_prometheus({&bad_name, 1}), gb::Error);
  const MetricFamily bad_label{"m", "h", MetricType::gauge, {{{{"__x", "1"}}, 1}}};
  EXPECT_THROW(format_prometheus({&bad_label, 1}), gb::Error);
  const MetricFamily twice[] = {{"m", "h", MetricType::gauge, {{{}, 1}}},
                                {"m", "h", MetricType::gauge, {{{}, 2}}}};
  EXPECT_THROW(format_prometheus(twice), gb::Error) << "one family per name";
}

TEST(PrometheusFormat, LeavesOutAFamilyWithoutSamples) {
  const MetricFamily f[] = {{"measured", "h", MetricType::gauge, {{{}, 1}}},
                            {"not_measured", "h", MetricType::gauge, {}}};
  const std::string text = format_prometheus(f);
  EXPECT_EQ(text.find("not_measured"), std::string::npos) << "missing is not 0";
}

// ---- the watch sample as metrics ----

namespace {

gb::watch::WatchSample sample(double t_s) {
  gb::watch::WatchSample s;
  s.t_s = t_s;
  s.interval_s = 1;
  s.gpu.util_pct = 87;
  s.gpu.memory_used_gib = 2;
  s.gpu.sm_clock_mhz = 1980;
  s.cpu.core_busy_pct = {{0, 50}, {3, 100}};
  s.cpu.iowait_pct = 4;
  s.job.alive = true;
  s.job.cpu_pct = 150;
  s.job.processes = 3;
  return s;
}

}  // namespace

TEST(WatchMetrics, SharesBecomeRatiosAndSizesBytes) {
  gb::watch::WatchMetrics m({{"gpu", "0"}, {"uuid", "GPU-1234"}});
  m.add(sample(1));
  const std::string text = format_prometheus(m.families());
  EXPECT_EQ(value_line(text, "gpubase_gpu_utilization_ratio"),
            "gpubase_gpu_utilization_ratio{gpu=\"0\",uuid=\"GPU-1234\"} 0.87");
  EXPECT_EQ(value_line(text, "gpubase_cpu_core_busy_ratio{core=\"3\"}"),
            "gpubase_cpu_core_busy_ratio{core=\"3\"} 1");
  EXPECT_EQ(value_line(text, "gpubase_cpu_iowait_ratio"), "gpubase_cpu_iowait_ratio 0.04");
  EXPECT_EQ(value_line(text, "gpubase_gpu_memory_used_bytes"),
            "gpubase_gpu_memory_used_bytes{gpu=\"0\",uuid=\"GPU-1234\"} 2147483648");
  EXPECT_EQ(value_line(text, "gpubase_gpu_sm_clock_hertz"),
            "gpubase_gpu_sm_clock_hertz{gpu=\"0\",uuid=\"GPU-1234\"} 1980000000");
  EXPECT_EQ(value_line(text, "gpubase_job_processes"), "gpubase_job_processes 3");
}

TEST(WatchMetrics, CountersAddUpEveryInterval) {
  gb::watch::WatchMetrics m;
  m.add(sample(1));
  m.add(sample(2));
  const std::string text = format_prometheus(m.families());
  EXPECT_EQ(value_line(text, "gpubase_watch_samples_total"), "gpubase_watch_samples_total 2");
  EXPECT_EQ(value_line(text, "gpubase_job_cpu_seconds_total"), "gpubase_job_cpu_seconds_total 3")
      << "1.5 cores for two 1-s intervals";
}

TEST(WatchMetrics, WhatWasNotMeasuredHasNoSample) {
  gb::watch::WatchMetrics m;
  m.add(sample(1));
  const std::string text = format_prometheus(m.families());
  EXPECT_EQ(text.find("gpubase_gpu_tensor_active_ratio"), std::string::npos) << "no GPM";
  EXPECT_EQ(text.find("gpubase_cuda_"), std::string::npos) << "no CUDA activity";
  EXPECT_EQ(text.find("gpubase_gpu_power_watts"), std::string::npos);
}

TEST(WatchMetrics, BeforeTheFirstSampleOnlyTheCountersShow) {
  const gb::watch::WatchMetrics m;
  const std::string text = format_prometheus(m.families());
  EXPECT_NE(text.find("gpubase_watch_samples_total 0\n"), std::string::npos);
  EXPECT_EQ(text.find("gpubase_gpu_"), std::string::npos);
}

TEST(WatchMetrics, CudaActivityAddsItsFiguresAndCounters) {
  gb::watch::WatchMetrics m;
  gb::watch::WatchSample s = sample(1);
  s.cuda.busy_pct = 40;
  s.cuda.kernels_per_s = 1000;
  s.cuda.h2d_pinned_gbps = 2.5;
  m.add(s);
  const std::string text = format_prometheus(m.families());
  EXPECT_EQ(value_line(text, "gpubase_cuda_busy_ratio"), "gpubase_cuda_busy_ratio 0.4");
  EXPECT_EQ(value_line(text, "gpubase_cuda_kernels_total"), "gpubase_cuda_kernels_total 1000");
  EXPECT_EQ(value_line(text, "gpubase_cuda_copy_bytes_per_second{direction=\"h2d\",memory=\"pinned\"}"),
            "gpubase_cuda_copy_bytes_per_second{direction=\"h2d\",memory=\"pinned\"} 2500000000");
}
