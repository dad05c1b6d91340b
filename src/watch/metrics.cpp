// watch/metrics.cpp: see metrics.hpp. Units: the sample keeps percent, GiB, GB/s (1e9 bytes),
// MB/s (1e6 bytes) and MHz; Prometheus wants shares 0..1, bytes, bytes/s and hertz.
#include "watch/metrics.hpp"

#include "sys/nvml.hpp"

namespace gb::watch {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

class Families {
 public:
  MetricFamily& family(const std::string& name, const std::string& help,
                       MetricType type = MetricType::gauge) {
    for (MetricFamily& f : out_)
      if (f.name == name) return f;
    out_.push_back({name, help, type, {}});
    return out_.back();
  }
  void set(const std::string& name, const std::string& help, const std::optional<double>& v,
           double scale = 1, const MetricLabels& labels = {}) {
    MetricFamily& f = family(name, help);
    if (v) f.samples.push_back({labels, *v * scale});
  }
  void counter(const std::string& name, const std::string& help, double v,
               const MetricLabels& labels = {}) {
    family(name, help, MetricType::counter).samples.push_back({labels, v});
  }
  std::vector<MetricFamily> take() { return std::move(out_); }

 private:
  std::vector<MetricFamily> out_;
};

std::optional<double> from_int(const std::optional<int>& v) {
  return v ? std::optional<double>(*v) : std::nullopt;
}

}  // namespace

MetricLabels gpu_metric_labels(int device) {
  MetricLabels labels{{"gpu", std::to_string(device)}};
  const sys::Nvml nvml = sys::Nvml::load();
  if (!nvml.available()) return labels;
  if (const auto dev = nvml.device(device))
    if (const auto uuid = dev->info().uuid) labels.emplace_back("uuid", *uuid);
  return labels;
}

WatchMetrics::WatchMetrics(MetricLabels gpu_labels) : gpu_labels_(std::move(gpu_labels)) {
  if (gpu_labels_.empty()) gpu_labels_ = {{"gpu", "0"}};
}

void WatchMetrics::add(const WatchSample& s) {
  ++samples_;
  if (s.job.cpu_pct) job_cpu_seconds_ += *s.job.cpu_pct / 100.0 * s.interval_s;
  if (s.cuda.kernels_per_s) {
    cuda_seen_ = true;
    cuda_kernels_ += *s.cuda.kernels_per_s * s.interval_s;
  }
  for (const auto* v : {&s.cuda.h2d_pageable_gbps, &s.cuda.h2d_pinned_gbps})
    if (*v) cuda_h2d_bytes_ += **v * 1e9 * s.interval_s;
  for (const auto* v : {&s.cuda.d2h_pageable_gbps, &s.cuda.d2h_pinned_gbps})
    if (*v) cuda_d2h_bytes_ += **v * 1e9 * s.interval_s;
  last_ = s;
}

std::vector<MetricFamily> WatchMetrics::families() const {
  Families f;
  f.counter("gpubase_watch_samples_total", "Sampling intervals completed since monitoring began.",
            static_cast<double>(samples_));
  f.counter("gpubase_job_cpu_seconds_total",
            "CPU time the watched job's processes used since monitoring began, seconds.",
            job_cpu_seconds_);
  if (cuda_seen_) {
    f.counter("gpubase_cuda_kernels_total", "CUDA kernels the job completed (CUPTI).", cuda_kernels_);
    f.counter("gpubase_cuda_copied_bytes_total", "Bytes the job copied between host and GPU (CUPTI).",
              cuda_h2d_bytes_, {{"direction", "h2d"}});
    f.counter("gpubase_cuda_copied_bytes_total", "", cuda_d2h_bytes_, {{"direction", "d2h"}});
  }
  if (!last_) return f.take();
  const WatchSample& s = *last_;
  const MetricLabels& g = gpu_labels_;
  f.set("gpubase_watch_elapsed_seconds", "Seconds since monitoring began, at the last sample.", s.t_s);
  f.set("gpubase_watch_interval_seconds", "Length of the last sampling interval, seconds.",
        s.interval_s);
  f.set("gpubase_watch_sampler_cpu_ratio", "CPU time gpubase itself used over the last interval, "
        "as a share of one core.", s.sampler_cpu_pct, 0.01);

  // GPU (NVML, and GPM on Hopper and newer)
  f.set("gpubase_gpu_utilization_ratio",
        "Share of the last interval a kernel ran on the GPU (NVML utilization samples), 0..1.",
        s.gpu.util_pct, 0.01, g);
  f.set("gpubase_gpu_memory_utilization_ratio",
        "Share of the last interval the GPU memory controller was busy (NVML), 0..1.",
        s.gpu.mem_util_pct, 0.01, g);
  f.set("gpubase_gpu_sm_active_ratio", "SM active share (GPM), 0..1.", s.gpu.sm_active_pct, 0.01, g);
  f.set("gpubase_gpu_sm_occupancy_ratio", "SM occupancy (GPM), 0..1.", s.gpu.sm_occupancy_pct, 0.01, g);
  f.set("gpubase_gpu_tensor_active_ratio", "Tensor core active share (GPM), 0..1.",
        s.gpu.tensor_active_pct, 0.01, g);
  f.set("gpubase_gpu_dram_bandwidth_ratio", "DRAM bandwidth used, share of the peak (GPM), 0..1.",
        s.gpu.dram_bw_pct, 0.01, g);
  f.set("gpubase_gpu_power_watts", "GPU power draw, watts.", s.gpu.power_w, 1, g);
  f.set("gpubase_gpu_sm_clock_hertz", "SM clock, hertz.", s.gpu.sm_clock_mhz, 1e6, g);
  f.set("gpubase_gpu_memory_clock_hertz", "Memory clock, hertz.", s.gpu.mem_clock_mhz, 1e6, g);
  f.set("gpubase_gpu_temperature_celsius", "GPU temperature, degrees Celsius.", s.gpu.temp_c, 1, g);
  f.set("gpubase_gpu_memory_temperature_celsius", "GPU memory temperature, degrees Celsius.",
        s.gpu.memory_temp_c, 1, g);
  f.set("gpubase_gpu_memory_used_bytes", "GPU memory in use, bytes.", s.gpu.memory_used_gib, kGiB, g);
  f.set("gpubase_gpu_pcie_receive_bytes_per_second", "PCIe traffic host to GPU, bytes per second.",
        s.gpu.pcie_rx_gbps, 1e9, g);
  f.set("gpubase_gpu_pcie_transmit_bytes_per_second", "PCIe traffic GPU to host, bytes per second.",
        s.gpu.pcie_tx_gbps, 1e9, g);
  f.set("gpubase_gpu_job_sm_ratio", "SM share of the watched job's own processes (NVML), 0..1.",
        s.gpu.job_sm_pct, 0.01, g);
  f.set("gpubase_gpu_other_processes", "Other processes seen using the GPU in the last interval.",
        from_int(s.gpu.other_processes), 1, g);

  // Host CPU (/proc/stat)
  for (const auto& [core, busy] : s.cpu.core_busy_pct)
    f.set("gpubase_cpu_core_busy_ratio", "Busy share of each CPU core over the last interval, 0..1.",
          busy, 0.01, {{"core", std::to_string(core)}});
  f.set("gpubase_cpu_busy_ratio", "Busy share of the machine's CPU cores, mean, 0..1.",
        s.cpu.mean_core_pct, 0.01);
  f.set("gpubase_cpu_busiest_core_ratio", "Busy share of the busiest CPU core, 0..1.",
        s.cpu.busiest_core_pct, 0.01);
  f.set("gpubase_cpu_saturated_cores", "CPU cores at least 90 % busy.", from_int(s.cpu.saturated_cores));
  f.set("gpubase_cpu_user_ratio", "Share of CPU time in user mode, 0..1.", s.cpu.user_pct, 0.01);
  f.set("gpubase_cpu_system_ratio", "Share of CPU time in the kernel, 0..1.", s.cpu.system_pct, 0.01);
  f.set("gpubase_cpu_iowait_ratio", "Share of CPU time idle waiting for disk I/O, 0..1.",
        s.cpu.iowait_pct, 0.01);
  f.set("gpubase_cpu_steal_ratio", "Share of CPU time taken by the hypervisor, 0..1.",
        s.cpu.steal_pct, 0.01);
  f.set("gpubase_cpu_context_switches_per_second", "Context switches on the machine per second.",
        s.cpu.ctx_switches_per_s);
  f.set("gpubase_cpu_runnable_processes", "Processes running or waiting for a CPU (/proc/stat).",
        from_int(s.cpu.run_queue));
  f.set("gpubase_cpu_blocked_processes", "Processes blocked on I/O (/proc/stat).",
        from_int(s.cpu.blocked));

  // Host memory (/proc/meminfo)
  f.set("gpubase_memory_total_bytes", "Host memory, bytes.", s.mem.total_gib, kGiB);
  f.set("gpubase_memory_available_bytes", "Host memory available, bytes.", s.mem.available_gib, kGiB);
  f.set("gpubase_memory_page_cache_bytes", "Host page cache, bytes.", s.mem.page_cache_gib, kGiB);

  // The job's process tree
  f.set("gpubase_job_running", "1 while the watched job runs, 0 once it ended.",
        s.job.alive ? 1.0 : 0.0);
  if (s.job.alive) {
    f.set("gpubase_job_processes", "Processes in the watched job's tree.", s.job.processes);
    f.set("gpubase_job_active_processes", "Job processes using at least 10 % of a core.",
          s.job.active_processes);
    f.set("gpubase_job_saturated_processes", "Job processes using at least 90 % of a core.",
          s.job.saturated_processes);
    f.set("gpubase_job_threads", "Threads in the watched job's processes.", s.job.threads);
    f.set("gpubase_job_cpu_cores", "CPU the watched job used over the last interval, in cores.",
          s.job.cpu_pct, 0.01);
    f.set("gpubase_job_resident_memory_bytes", "Resident memory of the job's processes, bytes.",
          s.job.rss_gib, kGiB);
    f.set("gpubase_job_involuntary_context_switches_per_second",
          "Involuntary context switches of the job's threads per second.", s.job.involuntary_cs_per_s);
  }
  f.set("gpubase_job_io_wait_ratio",
        "Share of the interval the job's most waiting process was in disk wait (D), 0..1.",
        s.threads.io_wait_pct, 0.01);

  // Disks (/proc/diskstats)
  for (const DeviceIo& d : s.disk.devices)
    f.set("gpubase_disk_utilization_ratio", "Share of the interval each disk was busy (iostat %util), 0..1.",
          d.util_pct, 0.01, {{"device", d.name}});
  f.set("gpubase_disk_read_bytes_per_second", "Bytes read from all disks per second.",
        s.disk.read_mbps, 1e6);
  f.set("gpubase_disk_written_bytes_per_second", "Bytes written to all disks per second.",
        s.disk.write_mbps, 1e6);

  // Inside the job: CUDA activity (CUPTI), where the injection library runs
  f.set("gpubase_cuda_busy_ratio", "Share of the interval the job kept the GPU busy (kernels, "
        "copies, memsets; CUPTI), 0..1.", s.cuda.busy_pct, 0.01);
  f.set("gpubase_cuda_kernels_per_second", "CUDA kernels the job completed per second.",
        s.cuda.kernels_per_s);
  f.set("gpubase_cuda_tiny_kernels_ratio", "Share of the job's kernels under 10 microseconds, 0..1.",
        s.cuda.tiny_kernels_pct, 0.01);
  f.set("gpubase_cuda_idle_gaps_per_second", "Idle gaps between the job's GPU work per second.",
        s.cuda.gaps_per_s);
  const std::pair<const std::optional<double>*, MetricLabels> copies[] = {
      {&s.cuda.h2d_pageable_gbps, {{"direction", "h2d"}, {"memory", "pageable"}}},
      {&s.cuda.h2d_pinned_gbps, {{"direction", "h2d"}, {"memory", "pinned"}}},
      {&s.cuda.d2h_pageable_gbps, {{"direction", "d2h"}, {"memory", "pageable"}}},
      {&s.cuda.d2h_pinned_gbps, {{"direction", "d2h"}, {"memory", "pinned"}}},
  };
  for (const auto& [v, labels] : copies)
    f.set("gpubase_cuda_copy_bytes_per_second", "Bytes the job copied between host and GPU per "
          "second, by direction and host memory kind.", *v, 1e9, labels);
  f.set("gpubase_cuda_synchronizations_per_second", "Host synchronizations with the GPU per second.",
        s.cuda.syncs_per_s);
  f.set("gpubase_cuda_sync_blocked_ratio", "Share of host time blocked in synchronizations, 0..1.",
        s.cuda.sync_blocked_pct, 0.01);
  f.set("gpubase_cuda_launcher_running_ratio",
        "Share of the interval the job's CUDA-launching threads were on a CPU, 0..1.",
        s.threads.launcher_running_pct, 0.01);
  return f.take();
}

}  // namespace gb::watch
