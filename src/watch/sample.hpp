// watch/sample.hpp: one row of the time series `gpubase watch` records: what the GPU, the
// host's CPUs, memory and disks, and the monitored job's process tree did over one sampling
// interval. Every figure is optional: what the machine does not report (no NVML, no GPM, perf
// counters not permitted) stays empty and is written as null/empty, never as a made-up 0.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "watch/cuda_sample.hpp"

namespace gb::watch {

struct GpuInterval {
  std::optional<double> util_pct;      // mean of the driver's utilization samples in the interval
  std::optional<double> util_now_pct;  // the device's current figure (what nvidia-smi shows)
  std::optional<double> mem_util_pct;  // memory-controller busy share
  std::optional<double> sm_active_pct;  // GPM (Hopper and newer)
  std::optional<double> sm_occupancy_pct;
  std::optional<double> tensor_active_pct;
  std::optional<double> dram_bw_pct;
  std::optional<double> power_w;
  std::optional<double> sm_clock_mhz;
  std::optional<double> mem_clock_mhz;
  std::optional<double> temp_c;
  std::optional<double> memory_temp_c;
  std::optional<double> memory_used_gib;
  std::optional<double> pcie_rx_gbps;  // host to GPU
  std::optional<double> pcie_tx_gbps;  // GPU to host
  std::optional<std::uint64_t> throttle_reasons;
  std::optional<int> pcie_gen;
  std::optional<int> pcie_width;
  std::optional<double> job_sm_pct;  // SM share of the job's own processes (per-process util)
  std::optional<int> other_processes;  // other pids seen using the GPU in the interval
  std::vector<std::uint32_t> other_pids;
};

struct CpuInterval {
  std::optional<double> mean_core_pct;  // machine average busy
  std::optional<double> busiest_core_pct;
  std::optional<int> busiest_core;
  std::optional<int> saturated_cores;  // cores >= 90 % busy
  std::optional<double> user_pct;
  std::optional<double> system_pct;
  std::optional<double> iowait_pct;
  std::optional<double> steal_pct;
  std::optional<double> ctx_switches_per_s;
  std::optional<int> run_queue;
  std::optional<int> blocked;
  std::vector<std::pair<int, double>> core_busy_pct;  // per online core, by index
};

struct ProcessInterval {
  int pid = 0;
  std::string comm;
  double cpu_pct = 0;  // 100 = one core
  int threads = 0;
  double voluntary_cs_per_s = 0;
  double involuntary_cs_per_s = 0;
  std::optional<double> rss_gib;
};

// One thread of the job over an interval.
struct ThreadInterval {
  int pid = 0;
  int tid = 0;
  std::string comm;          // the thread's name (/proc/<pid>/task/<tid>/comm)
  std::string process_comm;  // its process's
  double cpu_pct = 0;        // 100 = one core
};

struct JobInterval {
  bool alive = false;
  std::optional<double> cpu_pct;  // whole tree, 100 = one core
  int processes = 0;
  int active_processes = 0;     // >= 10 % of a core
  int saturated_processes = 0;  // >= 90 % of a core
  int threads = 0;
  std::optional<double> voluntary_cs_per_s;
  std::optional<double> involuntary_cs_per_s;
  std::optional<double> rss_gib;
  std::vector<ProcessInterval> processes_detail;  // busiest first
  // The thread with the most CPU time in the interval; empty when no thread of the job could be
  // read in both snapshots (threads that started in the interval have no baseline yet).
  std::optional<ThreadInterval> busiest_thread;
};

struct MemoryInterval {
  std::optional<double> total_gib;
  std::optional<double> available_gib;
  std::optional<double> page_cache_gib;
};

struct DeviceIo {
  std::string name;
  double util_pct = 0;
  std::optional<double> r_await_ms;
  std::optional<double> w_await_ms;
  std::optional<double> queue;
  double reads_per_s = 0;
  double writes_per_s = 0;
};

struct DiskInterval {
  std::optional<std::string> busiest;  // the device with the highest %util
  std::optional<double> util_pct;
  std::optional<double> r_await_ms;
  std::optional<double> queue;
  std::optional<double> read_mbps;   // all disks
  std::optional<double> write_mbps;  // all disks
  std::optional<double> reads_per_s;
  std::optional<double> writes_per_s;
  std::vector<DeviceIo> devices;  // every whole disk with rates in this interval
};

struct PerfInterval {
  std::optional<double> ipc;
  std::optional<double> task_clock_cores;  // CPUs utilized
  std::optional<double> context_switches_per_s;
  std::optional<double> migrations_per_s;
  std::optional<double> page_faults_per_s;
  std::optional<double> cache_misses_per_s;
  std::optional<double> instructions_per_s;
};

struct WatchSample {
  double t_s = 0;         // end of the interval, seconds since monitoring started
  double interval_s = 0;  // length of the interval
  double unix_time_s = 0;  // wall clock at the end of the interval (to line up with other tools)
  GpuInterval gpu;
  CpuInterval cpu;
  JobInterval job;
  MemoryInterval mem;
  DiskInterval disk;
  PerfInterval perf;
  CudaInterval cuda;          // watch/cuda_sample.hpp: the job's CUDA activity
  JobThreadsInterval threads;  // ... and its threads' states
  std::optional<double> sampler_cpu_pct;  // gpubase's own CPU time over the interval
  // CPU time the sampler spent reading each source for this sample (its own thread), ms.
  std::optional<double> sampler_host_ms;
  std::optional<double> sampler_gpu_ms;
  std::optional<double> sampler_perf_ms;
};

}  // namespace gb::watch
