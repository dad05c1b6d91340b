// watch/gpu.hpp: the GPU side of one sampling interval through NVML: the mean of the driver's
// own utilization samples that fall inside the interval (finer than the single figure
// `nvidia-smi dmon` shows), GPM metrics between two takes, clocks, power, temperatures, memory,
// PCIe traffic, throttle reasons, and the job's share of the GPU from per-process utilization.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "sys/nvml.hpp"
#include "watch/sample.hpp"

namespace gb::watch {

class GpuReader {
 public:
  // Reads the device once so the first interval only sees what happens after monitoring began.
  explicit GpuReader(sys::NvmlDevice device);
  // With $GPUBASE_WATCH_PROFILE set, prints the CPU time each NVML query took on average.
  ~GpuReader();
  GpuReader(const GpuReader&) = delete;
  GpuReader& operator=(const GpuReader&) = delete;

  // now_s: seconds since monitoring began. PCIe traffic and per-process shares, the two
  // costliest queries (~1.7 ms of CPU each on an H200 host), are read at most once per
  // kSlowReadS: the per-process shares cover the whole time since the last read, and PCIe
  // traffic is a ~20 ms snapshot either way. The rest is read every call.
  GpuInterval read(const std::set<int>& job_pids, double now_s);
  static constexpr double kSlowReadS = 2.0;

  // Why GPM metrics are missing (empty when they are available).
  std::string gpm_unavailable_reason() const;
  // Why the job's GPU share cannot be attributed (empty when it can).
  const std::string& attribution_unavailable_reason() const { return attribution_reason_; }
  sys::NvmlDeviceInfo info() const { return device_.info(); }

 private:
  sys::NvmlDevice device_;
  sys::GpmSampler gpm_;
  std::uint64_t last_util_us_ = 0;
  std::uint64_t last_process_us_ = 0;
  std::optional<double> last_slow_read_s_;
  std::string attribution_reason_;
  struct Cost {
    double ms = 0;
    long calls = 0;
  };
  std::map<std::string, Cost> profile_;  // only filled with $GPUBASE_WATCH_PROFILE
  bool profiling_ = false;
  double profile_mark_ms_ = 0;  // the sampler thread's CPU time at the last charge()

  // read(), one group of figures each.
  void read_utilization(const sys::NvmlWatchSample& s, GpuInterval& g);
  void read_gpm(GpuInterval& g);
  void read_process_shares(const std::set<int>& job_pids, GpuInterval& g);
  // Profiling: the CPU time since the last charge() goes to `name`.
  void charge(const char* name);
};

// The samples of one interval: all but the newest, which the driver may still be filling in
// (it is taken in the next interval, when a newer one exists). Returns the samples to use and
// updates last_us to the newest one used.
std::vector<sys::UtilSample> settled_samples(std::vector<sys::UtilSample> fresh,
                                             std::uint64_t& last_us);

// Time-weighted mean: each sample stands for the time since the one before (the first for the
// time since previous_us, when known): the driver does not take its samples at a fixed rate.
std::optional<double> time_weighted_mean(const std::vector<sys::UtilSample>& samples,
                                         std::uint64_t previous_us);

// True when this process runs in a nested PID namespace (a container): NVML reports host pids,
// which then do not match the pids /proc shows here. Reads NSpid from <proc_root>/self/status.
bool in_nested_pid_namespace(const std::string& proc_root = "/proc");

}  // namespace gb::watch
