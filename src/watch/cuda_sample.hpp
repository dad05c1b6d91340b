// watch/cuda_sample.hpp: the parts of a WatchSample that come from inside the job: its CUDA
// activity (the injection library's interval records, summed over the job's CUDA processes)
// and what its threads were doing, sampled many times a second from /proc/<pid>/task/<tid>.
// CUDA figures lag the other columns by about one interval: the job hands its records over
// once the interval is complete.
#pragma once
#include <optional>
#include <string>

namespace gb::watch {

struct CudaInterval {
  std::optional<double> busy_pct;  // the busiest device: union of kernel/copy/memset spans
  std::optional<double> kernels_per_s;
  std::optional<double> tiny_kernels_pct;  // share of kernels under 10 µs
  std::optional<double> gaps_per_s;
  std::optional<double> h2d_pageable_gbps, h2d_pinned_gbps;  // bytes moved per second
  std::optional<double> d2h_pageable_gbps, d2h_pinned_gbps;
  std::optional<double> syncs_per_s;
  std::optional<double> sync_blocked_pct;  // host time inside synchronizations
  // Seconds from the start of the job's first kernel to the end of this interval (empty until
  // a kernel was seen): where the steady window begins (watch/steady_window.hpp).
  std::optional<double> since_first_kernel_s;
};

// From the thread-state ticks of one interval.
struct JobThreadsInterval {
  std::optional<double> ticks;  // how many thread-state samples the interval holds
  std::optional<double> io_wait_pct;  // the job process most often in disk wait (D), its share
  int io_wait_pid = 0;
  std::string io_wait_comm;
  std::optional<double> runnable_processes;  // job processes running or runnable, mean
  std::optional<double> launcher_running_pct;  // the CUDA-launching threads on a CPU
};

}  // namespace gb::watch
