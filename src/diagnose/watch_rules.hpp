// diagnose/watch_rules.hpp: the rules diagnose_watch() runs on a monitored job, one finding per
// function so each can be read and tested alone. WatchInputs reads what they need from the run
// once; a figure the watch could not measure (skipped, or absent) stays empty, and a rule that
// needs it stays silent rather than guess. Which rules run together is watch.cpp's job.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "diagnose/thresholds.hpp"

namespace gb::diagnose {

struct WatchInputs {
  // GPU (NVML). gpu_none: the "gpu.available" fact said "none: reason". util_skipped: the
  // utilization result is there without a value (its reason).
  std::optional<std::string> gpu_none;
  std::optional<std::string> util_skipped;
  std::optional<double> util_pct, util_p10_pct, util_below_target_share_pct;
  std::optional<double> sm_active_pct, tensor_active_pct;
  std::optional<std::uint64_t> throttle_reasons;  // OR of the clock-event reasons seen
  std::optional<double> sm_clock_mhz, sm_clock_max_mhz, temp_c;
  std::optional<double> job_sm_pct;
  std::optional<double> other_processes;
  std::string other_pids;  // "5012,5013" when the summary named them
  // Host CPU.
  std::optional<double> cores;
  std::optional<double> mean_core_pct, busiest_core_pct, iowait_pct, steal_pct, run_queue;
  // The job's process tree.
  std::optional<double> job_cpu_pct;  // 100 = one core
  std::optional<double> job_processes, active_processes, saturated_processes, threads;
  std::optional<double> busiest_process_pct;
  std::string busiest_pid, busiest_comm;
  std::string busiest_role;  // "main" or "child" when the summary says; empty otherwise
  std::string root_pid;      // the watched command's own pid (fact "watch.pid")
  std::optional<double> involuntary_cs_per_s, involuntary_cs_per_busy;
  std::optional<double> job_rss_gib;
  // Memory and disk.
  std::optional<double> mem_available_pct, mem_available_gib;
  std::optional<double> disk_util_pct, disk_await_ms, disk_queue;
  std::string disk_await_direction;  // "read" or "write": what the disk mostly served
  std::string disk_device;
  // Inside the job (watch.cuda.*: the CUDA-activity library) and its threads' states.
  std::optional<double> cuda_busy_pct, cuda_idle_pct, data_wait_pct, idle_host_pct, idle_sync_pct;
  std::optional<double> kernels_per_s, kernel_median_us, tiny_kernels_pct, tiny_kernel_time_pct;
  std::optional<double> cuda_kernels;  // kernels the library saw in the judged window
  std::optional<double> h2d_pageable_gb, h2d_pageable_share_pct, h2d_pageable_gbps,
      h2d_pinned_gbps;
  std::optional<double> syncs_per_s, sync_mean_ms, sync_blocked_pct, idle_gap_step_ms, long_gaps_per_s;
  std::optional<double> d2h_copies_per_s;
  std::string d2h_mean_size;  // "4 bytes"
  std::optional<double> io_wait_process_pct;  // the job process most often in disk wait
  std::string io_wait_pid, io_wait_comm;
  std::optional<double> runnable_processes;
  std::optional<double> job_disk_read_mbps, disk_read_mbps;  // the job's reads, all disks' reads
  // How long the job was watched (samples x interval, else the run's duration).
  std::optional<double> watched_s;
  std::optional<double> samples;
};

// True when the run holds any watch.* result.
bool is_watch_run(const Run& run);
WatchInputs read_watch_inputs(const Run& run);

// own_loader.cpp: a training run gpubase fed itself. watched_in_process: the in-process sampler
// watched it (fact watch.target = in_process). own_loader_advice: a row's advice about gpubase's
// own input pipeline (row "gpu_util", "cpu_util" or "data_loading"). adapt_to_own_loader: the
// findings whose advice speaks of a separate job's DataLoader get gpubase's levers instead.
bool watched_in_process(const Run& run);
std::string own_loader_advice(const Run& run, std::string_view row_id);
void adapt_to_own_loader(const Run& run, std::vector<Finding>& findings);

// Evidence text: "38 %", "3.4 %", "0 %"; rates "1300", "40k"; whole counts "15".
std::string pct_text(double v);
std::string rate_text(double v);
std::string count_text(double v);

// What the single busy process is: from its role param, its comm (PyTorch names DataLoader
// workers "pt_data_worker" and the training process "pt_main_thread"), or being the watched
// command itself (its pid is "watch.pid"). A child with another name may be a loader or the
// trainer under a launcher script: unknown.
enum class ProcessKind { loader, main, unknown };
ProcessKind busiest_process_kind(const WatchInputs& in);

// The worker count to suggest: half the cores (at least 1), what `gpubase loader` would start
// its sweep from.
int suggested_workers(double cores);

// Below the GPU target: fail under gpu_starved_fail_pct, else warn; warn without a GPU figure.
Status starved_status(const WatchInputs& in, const WatchThresholds& t);

// --- GPU side (watch_gpu.cpp) ---
std::optional<Finding> no_gpu_rule(const WatchInputs& in);
std::optional<Finding> job_not_using_gpu_rule(const WatchInputs& in, const WatchThresholds& t);
std::optional<Finding> small_kernels_rule(const WatchInputs& in, const WatchThresholds& t);
std::optional<Finding> tensor_cores_unused_rule(const WatchInputs& in, const WatchThresholds& t);
std::optional<Finding> gpu_shared_rule(const WatchInputs& in);
std::optional<Finding> throttled_rule(const WatchInputs& in);
std::optional<Finding> gpu_bound_rule(const WatchInputs& in, const WatchThresholds& t);

// --- What starves the GPU (watch_starved.cpp); each fires only below the GPU target ---
// Loader processes fill the host's cores, or one / a few loader processes are saturated while
// cores sit idle.
std::optional<Finding> input_bound_cpu_rule(const WatchInputs& in, const WatchThresholds& t);
// One non-loader (or unidentified) process saturated while cores sit idle.
std::optional<Finding> one_process_rule(const WatchInputs& in, const WatchThresholds& t);
// iowait high and the busiest disk busy, or one job process mostly in disk wait while the job's
// own reads keep the disk busy (per process: one synchronous reader keeps the machine's iowait
// low); also fires without a GPU figure (the job still waits).
std::optional<Finding> storage_bound_rule(const WatchInputs& in, const WatchThresholds& t);
// The GPU waits although no core, process or disk is saturated.
std::optional<Finding> launch_bound_rule(const WatchInputs& in, const WatchThresholds& t);

// --- Inside the job: CUDA activity and thread states (watch_cuda.cpp) ---
// GPU idle waiting for the next batch (data wait share of wall time).
std::optional<Finding> input_wait_rule(const WatchInputs& in, const WatchThresholds& t);
// More loader processes than the cores can run while the GPU waits: at least workers_per_core
// per core, or more worker processes than cores with more job processes runnable on average
// than there are cores.
std::optional<Finding> workers_oversubscribed_rule(const WatchInputs& in, const WatchThresholds& t);
std::optional<Finding> pageable_copies_rule(const WatchInputs& in);
std::optional<Finding> host_sync_rule(const WatchInputs& in, const WatchThresholds& t);
std::optional<Finding> tiny_kernels_rule(const WatchInputs& in, const WatchThresholds& t);

// --- Host side (watch_host.cpp) ---
std::optional<Finding> too_many_workers_rule(const WatchInputs& in, const WatchThresholds& t);
std::optional<Finding> too_many_threads_rule(const WatchInputs& in, const WatchThresholds& t);
std::optional<Finding> memory_pressure_rule(const WatchInputs& in, const WatchThresholds& t);
std::optional<Finding> cpu_steal_rule(const WatchInputs& in, const WatchThresholds& t);
std::optional<Finding> short_run_rule(const WatchInputs& in, const WatchThresholds& t);

}  // namespace gb::diagnose
