// watch/summary.hpp: turns the stream of WatchSamples into the watch.* results (keys in
// docs/results.md). Memory stays bounded however long the job runs: every figure is a running
// aggregate (time-weighted sums, extremes, a 0.1 %-bin histogram for GPU utilization
// percentiles), and the series kept for plots is downsampled — recent points at full
// resolution, older ones averaged in pairs whenever the buffer fills.
#pragma once
#include <cstddef>
#include <map>
#include <set>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/result.hpp"
#include "watch/sample.hpp"

namespace gb::watch {

// Time-weighted mean, min and max of one figure.
struct Aggregate {
  double weight = 0;  // seconds with a value
  double weighted_sum = 0;
  double min = 0, max = 0;
  std::size_t n = 0;

  void add(std::optional<double> v, double weight_s);
  std::optional<double> mean() const;
  std::optional<double> maximum() const { return n ? std::optional<double>(max) : std::nullopt; }
  std::optional<double> minimum() const { return n ? std::optional<double>(min) : std::nullopt; }
};

// Time-weighted histogram of a percentage (0-100, 0.1 % bins).
class PercentHistogram {
 public:
  void add(double pct, double weight_s);
  std::optional<double> quantile(double q) const;  // q in [0, 1]
  std::optional<double> share_below(double pct) const;  // in percent of the time
  double total_weight() const { return total_; }

 private:
  std::vector<double> bins_ = std::vector<double>(1001, 0.0);
  double total_ = 0;
};

// A series of (t, value) kept within max_points: when full, the older half is merged in pairs
// (time-weighted), so the recent past stays at full resolution.
class DownsampledSeries {
 public:
  explicit DownsampledSeries(std::size_t max_points = 2048);
  void add(double t_s, double dt_s, std::optional<double> value);
  std::vector<double> values() const;
  std::vector<double> times() const;
  std::size_t size() const { return points_.size(); }
  std::size_t max_points() const { return max_points_; }

 private:
  struct Point {
    double t, dt, value;
  };
  void compact();
  std::size_t max_points_;
  std::vector<Point> points_;
};

// Facts about the run the summary needs besides the samples.
struct SummaryContext {
  int online_cores = 0;
  std::string gpu_unavailable_reason;   // non-empty: no GPU figures (no NVML, no device)
  std::string gpm_unavailable_reason;   // non-empty: no GPM figures
  std::string attribution_unavailable_reason;
  std::string perf_unavailable_reason;  // non-empty: no perf_event figures at all
  std::map<std::string, std::string> perf_counter_reasons;  // per unsupported perf figure key
  std::string device_label;             // "0: NVIDIA H200" for params
};

// Every watch.* figure over a set of samples (memory bounded, see above).
class SampleAccumulator {
 public:
  explicit SampleAccumulator(std::size_t max_series_points = 2048);
  void add(const WatchSample& s);
  std::size_t samples() const { return samples_; }
  double duration_s() const { return duration_s_; }
  std::optional<double> gpu_util_mean() const;

  std::vector<Result> results(const SummaryContext& ctx) const;

 private:
  struct ProcessAcc {
    std::string comm;
    Aggregate cpu;
  };
  // A thread that was the job's busiest in some intervals.
  struct ThreadAcc {
    std::string comm, process_comm;
    std::size_t busiest = 0;  // intervals it was the busiest in
  };
  // add(), one part of the sample each.
  void add_gpu(const WatchSample& s);
  void add_cpu(const WatchSample& s);
  void add_job(const WatchSample& s);
  void add_memory_and_disk(const WatchSample& s);
  void add_perf(const WatchSample& s);
  void cap_processes();
  void cap_threads();
  // results(), one group of figures each, appended to out in the run's order.
  const Aggregate& agg(const std::string& key) const;
  void gpu_results(const SummaryContext& ctx, std::vector<Result>& out) const;
  void cpu_results(const SummaryContext& ctx, std::vector<Result>& out) const;
  void job_results(const SummaryContext& ctx, std::vector<Result>& out) const;
  Result busiest_thread_result() const;
  void memory_and_disk_results(const SummaryContext& ctx, std::vector<Result>& out) const;
  void perf_results(const SummaryContext& ctx, std::vector<Result>& out) const;
  std::size_t samples_ = 0;
  double duration_s_ = 0;
  std::map<std::string, Aggregate> agg_;  // by result key
  PercentHistogram gpu_util_hist_;
  DownsampledSeries gpu_util_series_, job_cpu_series_, busiest_core_series_;
  std::map<int, Aggregate> core_busy_;
  std::map<int, std::size_t> busiest_core_count_;
  std::map<int, ProcessAcc> processes_;
  std::map<std::pair<int, int>, ThreadAcc> busiest_threads_;  // by (pid, tid)
  std::map<std::string, Aggregate> disk_util_;  // by device, to name the busiest over the run
  std::optional<std::uint64_t> throttle_reasons_;
  std::set<std::uint32_t> other_pids_;
  std::optional<int> pcie_gen_min_, pcie_gen_max_, pcie_width_min_, pcie_width_max_;
};

// The summary of a watch run. The figures judge the job's steady state (watch/steady_window.hpp):
// from kWarmupS after its first GPU work -- the first kernel the CUDA-activity library saw, else
// the first interval in which NVML saw the GPU busy (>= kBusyUtilPct) -- to the last interval
// with GPU activity (>= kActiveUtilPct, or kernels), so the start-up (imports, dataset
// indexing, model build), the first steps' autotuning and the shutdown do not dilute a training
// job's figures, while a starved job, whose GPU only flickers, keeps all of its working time.
// Idle stretches inside the window count (an evaluation pass on the CPU is part of the job); an
// idle tail longer than kMaxIdleTailS (watch/steady_window.hpp) counts too (the job really went idle). A steady window
// shorter than kMinSteadyS falls back to the working window with the warm-up; a run whose GPU
// never got busy, or without a GPU, is summarised whole.
class WatchSummary {
 public:
  static constexpr double kBusyUtilPct = 5.0;
  static constexpr double kActiveUtilPct = 1.0;

  explicit WatchSummary(std::size_t max_series_points = 2048);
  void add(const WatchSample& s);
  // The measured work starts at t_s, already warmed up (gpubase's own timed training steps): the
  // figures judge the samples from there on, and nothing after it is left out as warm-up. The
  // first mark counts; samples added before it that end after t_s are not judged (a sample
  // must begin at or after t_s).
  void judge_from(double t_s);
  std::size_t samples() const { return all_.samples(); }
  double duration_s() const { return all_.duration_s(); }

  // The watch.* results, plus watch.window.s, watch.startup.s, watch.warmup.s and
  // watch.window.gpu_util_run.pct (the whole run's mean) describing the window.
  std::vector<Result> results(const SummaryContext& ctx) const;

 private:
  // Samples from a start on; idle samples wait in a tail until activity follows (or the tail
  // grows past kMaxIdleTailS), so an idle end of the run is left out.
  struct Window {
    explicit Window(std::size_t max_series_points) : acc(max_series_points) {}
    void add(const WatchSample& s, bool active);
    void flush_tail();
    SampleAccumulator acc;
    std::vector<WatchSample> tail;
    double tail_s = 0;  // idle seconds since the last active sample
    std::optional<double> begin_s;  // start of the first sample
    double end_s = 0;               // end of the last sample counted
  };
  std::optional<double> gpu_start_s() const;
  std::vector<Result> marked_results(const SummaryContext& ctx) const;
  std::vector<Result> window_results(std::vector<Result> figures, const std::string& scope,
                                     double window_s, double startup_s, double warmup_s,
                                     const SummaryContext& ctx) const;
  SampleAccumulator all_;
  Window window_;  // from the first GPU work
  Window steady_;  // from kWarmupS after it
  Window marked_;  // from judge_from()
  std::optional<double> cuda_start_s_, nvml_start_s_;
  std::optional<double> marked_start_s_;  // judge_from()
};

}  // namespace gb::watch
