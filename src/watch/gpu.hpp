// watch/gpu.hpp: the GPU side of one sampling interval through NVML: the mean of the driver's
// own utilization samples that fall inside the interval (finer than the single figure
// `nvidia-smi dmon` shows), GPM metrics between two takes, clocks, power, temperatures, memory,
// PCIe traffic, throttle reasons, and the job's share of the GPU from per-process utilization.
#pragma once
#include <cstdint>
#include <set>
#include <string>

#include "sys/nvml.hpp"
#include "watch/sample.hpp"

namespace gb::watch {

class GpuReader {
 public:
  // Reads the device once so the first interval only sees what happens after monitoring began.
  explicit GpuReader(sys::NvmlDevice device);

  GpuInterval read(const std::set<int>& job_pids);

  // Why GPM metrics are missing (empty when they are available).
  std::string gpm_unavailable_reason() const;
  // Why the job's GPU share cannot be attributed (empty when it can).
  const std::string& attribution_unavailable_reason() const { return attribution_reason_; }
  sys::NvmlDeviceInfo info() const { return device_.info(); }

 private:
  sys::NvmlDevice device_;
  sys::GpmSampler gpm_;
  std::uint64_t last_util_us_ = 0;
  std::uint64_t last_mem_util_us_ = 0;
  std::uint64_t last_process_us_ = 0;
  std::string attribution_reason_;
};

// Mean of the samples, or empty when there are none.
std::optional<double> mean_of(const std::vector<sys::UtilSample>& samples);

// True when this process runs in a nested PID namespace (a container): NVML reports host pids,
// which then do not match the pids /proc shows here. Reads NSpid from <proc_root>/self/status.
bool in_nested_pid_namespace(const std::string& proc_root = "/proc");

}  // namespace gb::watch
