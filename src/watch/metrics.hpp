// watch/metrics.hpp: the watch sampler's latest interval as metric families (core/metrics.hpp)
// for Prometheus (`--prometheus`, `--prometheus-textfile`; docs/watch.md "Prometheus"). Names
// follow Prometheus' conventions: gpubase_ prefix, base units (shares as 0..1 _ratio, bytes,
// seconds, hertz, watts, celsius), _total for counters. Gauges are the last interval's figures;
// the counters add up every interval since monitoring began. A figure the interval did not
// measure has no sample.
//
//   WatchMetrics m(gpu_metric_labels(0));
//   m.add(sample);                    // each interval
//   std::vector<MetricFamily> f = m.families();
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/metrics.hpp"
#include "watch/sample.hpp"

namespace gb::watch {

// The labels every GPU figure carries: gpu="0", uuid="GPU-..." (what NVML says; the uuid left
// out where it cannot be read).
using MetricLabels = std::vector<std::pair<std::string, std::string>>;
MetricLabels gpu_metric_labels(int device);

class WatchMetrics {
 public:
  explicit WatchMetrics(MetricLabels gpu_labels = {});
  void add(const WatchSample& sample);
  // Also before the first sample: then only the counters (at 0) and what is set below.
  std::vector<MetricFamily> families() const;

 private:
  MetricLabels gpu_labels_;
  std::optional<WatchSample> last_;
  std::uint64_t samples_ = 0;
  double job_cpu_seconds_ = 0;
  double cuda_kernels_ = 0;
  double cuda_h2d_bytes_ = 0, cuda_d2h_bytes_ = 0;
  bool cuda_seen_ = false;
};

}  // namespace gb::watch
