// watch/gpu.cpp: GPU figures of an interval from NVML.
#include "watch/gpu.hpp"

#include <cstdio>
#include <cstdlib>
#include <map>

#include "sys/cpu_time.hpp"
#include "sys/text_parse.hpp"

namespace gb::watch {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::uint64_t latest_timestamp(const std::vector<sys::UtilSample>& samples, std::uint64_t since) {
  for (const sys::UtilSample& s : samples) since = std::max(since, s.timestamp_us);
  return since;
}

// The device state the one watch_sample call read: power, clocks, temperatures, memory, PCIe.
void copy_state(const sys::NvmlWatchSample& s, GpuInterval& g) {
  g.power_w = s.power_w;
  g.sm_clock_mhz = s.sm_clock_mhz;
  g.mem_clock_mhz = s.mem_clock_mhz;
  g.temp_c = s.temp_c;
  g.memory_temp_c = s.memory_temp_c;
  if (s.memory_used_bytes) g.memory_used_gib = static_cast<double>(*s.memory_used_bytes) / kGiB;
  if (s.pcie_throughput) {
    g.pcie_rx_gbps = static_cast<double>(s.pcie_throughput->rx_bytes_per_s) / 1e9;
    g.pcie_tx_gbps = static_cast<double>(s.pcie_throughput->tx_bytes_per_s) / 1e9;
  }
  g.throttle_reasons = s.throttle_reasons;
  g.pcie_gen = s.pcie_gen;
  g.pcie_width = s.pcie_width;
}

}  // namespace

std::vector<sys::UtilSample> settled_samples(std::vector<sys::UtilSample> fresh,
                                             std::uint64_t& last_us) {
  // fresh is in timestamp order (NvmlDevice::utilization_samples sorts it).
  if (!fresh.empty()) fresh.pop_back();
  for (const sys::UtilSample& s : fresh) last_us = std::max(last_us, s.timestamp_us);
  return fresh;
}

std::optional<double> time_weighted_mean(const std::vector<sys::UtilSample>& samples,
                                         std::uint64_t previous_us) {
  if (samples.empty()) return std::nullopt;
  double weighted = 0, total = 0;
  std::uint64_t prev = previous_us;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const std::uint64_t t = samples[i].timestamp_us;
    double w = 0;
    if (prev > 0 && t > prev) w = static_cast<double>(t - prev);
    if (w <= 0 && i + 1 < samples.size() && samples[i + 1].timestamp_us > t)
      w = static_cast<double>(samples[i + 1].timestamp_us - t);  // no earlier timestamp
    if (w <= 0) w = 1;
    weighted += samples[i].value_pct * w;
    total += w;
    prev = t;
  }
  return weighted / total;
}

bool in_nested_pid_namespace(const std::string& proc_root) {
  const auto status = sys::text::read_text_file(proc_root + "/self/status");
  if (!status) return false;
  bool nested = false;
  sys::text::for_each_line(*status, [&](std::string_view line) {
    if (line.substr(0, 6) == "NSpid:") nested = sys::text::split_fields(line.substr(6)).size() > 1;
  });
  return nested;
}

GpuReader::~GpuReader() {
  if (!profiling_) return;
  std::fprintf(stderr, "gpubase: NVML cost per sample (CPU time of the sampler thread):\n");
  for (const auto& [name, c] : profile_)
    std::fprintf(stderr, "  %-28s %8.3f ms x %ld\n", name.c_str(), c.calls ? c.ms / c.calls : 0.0,
                 c.calls);
}

GpuReader::GpuReader(sys::NvmlDevice device)
    : device_(std::move(device)), gpm_(device_.gpm_sampler()) {
  profiling_ = std::getenv("GPUBASE_WATCH_PROFILE") != nullptr;
  last_util_us_ = latest_timestamp(
      device_.utilization_samples(sys::NvmlSampleKind::gpu_utilization), 0);
  for (const sys::ProcessUtil& p : device_.process_utilization())
    last_process_us_ = std::max(last_process_us_, p.timestamp_us);
  if (gpm_.available()) gpm_.take();
  if (in_nested_pid_namespace())
    attribution_reason_ =
        "gpubase runs in a container's PID namespace: NVML reports host pids, which do not "
        "match the job's pids here";
}

std::string GpuReader::gpm_unavailable_reason() const { return gpm_.unavailable_reason(); }

void GpuReader::charge(const char* name) {
  if (!profiling_) return;
  const double now = sys::thread_cpu_ms();
  Cost& c = profile_[name];
  c.ms += now - profile_mark_ms_;
  ++c.calls;
  profile_mark_ms_ = now;
}

GpuInterval GpuReader::read(const std::set<int>& job_pids, double now_s) {
  GpuInterval g;
  if (profiling_) profile_mark_ms_ = sys::thread_cpu_ms();
  const bool slow = !last_slow_read_s_ || now_s - *last_slow_read_s_ >= kSlowReadS;
  if (slow) last_slow_read_s_ = now_s;
  const sys::NvmlWatchSample s = device_.watch_sample(slow);
  charge(slow ? "state + PCIe traffic" : "state");

  read_utilization(s, g);
  charge("utilization samples");
  read_gpm(g);
  charge("GPM");
  copy_state(s, g);
  if (slow) read_process_shares(job_pids, g);
  return g;
}

// Utilization: the settled driver samples since the last read, time-weighted.
void GpuReader::read_utilization(const sys::NvmlWatchSample& s, GpuInterval& g) {
  const std::uint64_t previous_us = last_util_us_;
  const auto util = settled_samples(
      device_.utilization_samples(sys::NvmlSampleKind::gpu_utilization, last_util_us_),
      last_util_us_);
  // No settled driver sample inside a short interval: the device's current figure.
  g.util_now_pct = s.gpu_util_pct;
  const auto weighted = time_weighted_mean(util, previous_us);
  g.util_pct = weighted ? weighted : s.gpu_util_pct;
  // Memory-controller utilization: the device's current figure (as nvidia-smi dmon's "mem");
  // its sample buffer would cost another NVML call per sample.
  g.mem_util_pct = s.mem_util_pct;
}

// GPM metrics over the time since the last take.
void GpuReader::read_gpm(GpuInterval& g) {
  if (!gpm_.available() || !gpm_.take()) return;
  if (const auto m = gpm_.metrics()) {
    g.sm_active_pct = m->sm_active_pct;
    g.sm_occupancy_pct = m->sm_occupancy_pct;
    g.tensor_active_pct = m->tensor_active_pct;
    g.dram_bw_pct = m->dram_bw_pct;
  }
}

// Per-process shares: NVML lists one entry per process and driver sample; average each
// process over its entries, then add up the job's processes.
void GpuReader::read_process_shares(const std::set<int>& job_pids, GpuInterval& g) {
  const auto procs = device_.process_utilization(last_process_us_);
  charge("process utilization");
  std::map<std::uint32_t, std::pair<double, int>> per_pid;  // pid -> (sum of sm %, entries)
  for (const sys::ProcessUtil& p : procs) {
    last_process_us_ = std::max(last_process_us_, p.timestamp_us);
    auto& [sum, n] = per_pid[p.pid];
    sum += p.sm_pct;
    ++n;
  }
  if (!attribution_reason_.empty()) return;
  double job = 0;
  int others = 0;
  for (const auto& [pid, acc] : per_pid) {
    if (job_pids.count(static_cast<int>(pid))) {
      job += acc.first / acc.second;
    } else {
      ++others;
      g.other_pids.push_back(pid);
    }
  }
  // An empty list while the GPU was busy means per-process accounting is not reported
  // (older GPUs, some vGPU setups): leave the share unknown rather than claim 0.
  const bool busy = g.util_pct && *g.util_pct > 5.0;
  if (!per_pid.empty() || !busy) {
    g.job_sm_pct = job;
    g.other_processes = others;
  }
}

}  // namespace gb::watch
