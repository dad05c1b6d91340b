// diagnose/watch_cuda.cpp: watch rules on what the CUDA-activity library saw inside the job
// (watch.cuda.*) and on the job's thread states: the GPU idle waiting for the next batch,
// loader processes far beyond the cores, host copies from pageable memory, a host sync every
// step, and launch-bound tiny kernels. Each needs the figures it names; without the library
// (skipped) they stay silent and the outside-only rules speak.
//
// Napkin math for pageable copies: the driver stages a pageable H2D copy through a pinned
// bounce buffer, so it runs at roughly a third of a pinned copy's speed on PCIe Gen5 (the
// probe measures both: probe.pcie.*); the pageable speed quoted in a finding is the one the
// job's own copies reached.
#include <string>

#include "diagnose/text.hpp"
#include "diagnose/watch_rules.hpp"

namespace gb::diagnose {

namespace {

// The GPU below its target: the exact CUDA busy share when the library measured it, else NVML.
std::optional<double> gpu_busy(const WatchInputs& in) {
  return in.cuda_busy_pct ? in.cuda_busy_pct : in.util_pct;
}

bool gpu_waits(const WatchInputs& in, const WatchThresholds& t) {
  const auto busy = gpu_busy(in);
  return busy && *busy < t.gpu_busy_pct;
}

std::string ms_text(double ms) { return format_number(ms) + " ms"; }

}  // namespace

std::optional<Finding> input_wait_rule(const WatchInputs& in, const WatchThresholds& t) {
  const CudaWatchThresholds& c = cuda_watch_thresholds();
  if (!in.data_wait_pct || *in.data_wait_pct < c.data_wait_warn_pct) return std::nullopt;
  Finding f;
  f.id = "input_wait";
  f.status = *in.data_wait_pct >= c.data_wait_fail_pct ? Status::fail : Status::warn;
  f.title = "input-bound: the GPU waits for the next batch";
  f.evidence = "GPU idle " + pct_text(in.cuda_idle_pct.value_or(*in.data_wait_pct)) +
               " of the time, " + count_text(*in.data_wait_pct) +
               " points of it waiting for the next batch (the training thread blocked while "
               "the loader workers worked";
  f.evidence += in.io_wait_process_pct && *in.io_wait_process_pct >= c.process_io_wait_pct
                    ? ", or reading from disk itself)"
                    : ")";
  if (in.cores && in.job_processes && *in.job_processes - 1 >= c.workers_per_core * *in.cores)
    f.evidence += "; " + count_text(*in.job_processes - 1) + " loader processes on " +
                  count_text(*in.cores) + " cores";
  (void)t;
  f.advice =
      "the input pipeline is the bottleneck: make each sample cheaper (pre-resized or packed "
      "data, lighter augmentation, decode on the GPU), keep pin_memory=True, "
      "persistent_workers=True and prefetch_factor 2-4; `gpubase loader` measures how fast the "
      "pipeline can go on this host";
  return f;
}

std::optional<Finding> workers_oversubscribed_rule(const WatchInputs& in,
                                                   const WatchThresholds& t) {
  const CudaWatchThresholds& c = cuda_watch_thresholds();
  if (!gpu_waits(in, t) || !in.cores || !in.job_processes) return std::nullopt;
  const double workers = *in.job_processes - 1;
  // Per process, not machine-wide: far more workers than cores, or more workers than cores
  // with more of the job's processes runnable at once than there are cores to run them.
  const bool many = workers >= c.workers_per_core * *in.cores;
  const bool contending = workers > *in.cores && in.runnable_processes &&
                          *in.runnable_processes > *in.cores;
  if (!many && !contending) return std::nullopt;
  // With the library: only when the GPU really waits for data (else another rule explains it).
  if (in.data_wait_pct && *in.data_wait_pct < c.data_wait_warn_pct) return std::nullopt;
  Finding f;
  f.id = "workers_oversubscribed";
  f.status = starved_status(in, t);
  f.title = "input-bound: far more loader workers than cores";
  f.evidence = count_text(workers) + " loader processes on " + count_text(*in.cores) +
               " cores while the GPU is busy " + pct_text(*gpu_busy(in));
  if (in.runnable_processes)
    f.evidence += "; " + format_number(*in.runnable_processes) +
                  " job processes runnable on average" +
                  (contending ? " (more than the " + count_text(*in.cores) + " cores)" : "");
  if (in.mean_core_pct) f.evidence += ", all cores " + pct_text(*in.mean_core_pct) + " busy";
  if (in.busiest_core_pct) f.evidence += " (busiest " + pct_text(*in.busiest_core_pct) + ")";
  f.advice = "the workers contend for the cores and the main process collects batches from all "
             "of them: use about " +
             std::to_string(suggested_workers(*in.cores)) + " workers (half the " +
             count_text(*in.cores) +
             " cores), persistent_workers=True so a small dataset's epochs do not restart the "
             "pool, and measure with `gpubase loader`";
  return f;
}

std::optional<Finding> pageable_copies_rule(const WatchInputs& in) {
  const CudaWatchThresholds& c = cuda_watch_thresholds();
  if (!in.h2d_pageable_share_pct || !in.h2d_pageable_gb) return std::nullopt;
  if (*in.h2d_pageable_share_pct < c.pageable_share_pct || *in.h2d_pageable_gb < c.pageable_min_gb)
    return std::nullopt;
  Finding f;
  f.id = "pageable_copies";
  f.status = Status::warn;
  f.title = "host-to-GPU copies from pageable memory";
  f.evidence = pct_text(*in.h2d_pageable_share_pct) + " of the host-to-GPU bytes (" +
               format_number(*in.h2d_pageable_gb) + " GB) came from pageable memory";
  if (in.h2d_pageable_gbps) {
    f.evidence += ": those copies ran at " + format_number(*in.h2d_pageable_gbps) + " GB/s";
    if (in.h2d_pinned_gbps)
      f.evidence += " against " + format_number(*in.h2d_pinned_gbps) + " GB/s for pinned ones";
  }
  f.advice =
      "set pin_memory=True on the DataLoader and copy with .to(device, non_blocking=True); "
      "pinned copies skip the driver's staging buffer and overlap with compute";
  return f;
}

std::optional<Finding> host_sync_rule(const WatchInputs& in, const WatchThresholds& t) {
  const CudaWatchThresholds& c = cuda_watch_thresholds();
  if (!gpu_waits(in, t) || !in.syncs_per_s || *in.syncs_per_s < c.syncs_min_per_s)
    return std::nullopt;
  const double idle_after = in.idle_sync_pct.value_or(0) + in.idle_host_pct.value_or(0);
  if (idle_after < c.sync_idle_min_pct) return std::nullopt;
  // Syncs that cost the job something: the host reads values back (a GPU-to-host copy: .item(),
  // .cpu(), a printed tensor) or waits in them a tenth of the time. A framework's own syncs
  // read nothing and mostly return at once (bench/NOTES.md b5: 57 a second holding a host-bound
  // DataLoader job 6 % of the time): a host-bound job has them too.
  const bool reads_back = in.d2h_copies_per_s && *in.d2h_copies_per_s >= c.syncs_min_per_s;
  const bool waits = in.sync_blocked_pct && *in.sync_blocked_pct >= c.sync_blocked_min_pct;
  if (!reads_back && !waits) return std::nullopt;
  // The data wait is the bigger cause: input_wait's finding, not this one.
  if (in.data_wait_pct && *in.data_wait_pct > idle_after) return std::nullopt;
  Finding f;
  f.id = "host_sync";
  f.status = Status::warn;
  f.title = "host synchronizations drain the GPU";
  f.evidence = format_number(*in.syncs_per_s) + " host syncs per second";
  if (in.long_gaps_per_s && *in.long_gaps_per_s > 0) {
    const double per_gap = *in.syncs_per_s / *in.long_gaps_per_s;
    if (per_gap > 0.5 && per_gap < 2.0) f.evidence += " (about one per step)";
  }
  if (in.d2h_copies_per_s && *in.d2h_copies_per_s > 0 && !in.d2h_mean_size.empty())
    f.evidence += ", " + format_number(*in.d2h_copies_per_s) + " GPU-to-host copies/s of " +
                  in.d2h_mean_size + " on average";
  if (in.idle_gap_step_ms)
    f.evidence += "; after each the GPU idles about " + ms_text(*in.idle_gap_step_ms);
  f.evidence += "; GPU idle " + pct_text(idle_after) +
                " of the time while the host synced or relaunched work";
  if (reads_back)
    f.advice =
        "a .item(), .cpu(), print of a tensor or a Python condition on a GPU value each step "
        "makes the host wait and the GPU drain: keep losses on the GPU and read them every N "
        "steps, and avoid data-dependent control flow in the loop";
  else
    f.advice =
        "the host waits in synchronizations " + pct_text(*in.sync_blocked_pct) +
        " of the time without reading values back: explicit torch.cuda.synchronize() or "
        "event.synchronize() calls in the loop (remove them, or time with CUDA events read "
        "every N steps), or a library's own waits (one profiled step with torch.profiler "
        "shows where)";
  return f;
}

std::optional<Finding> tiny_kernels_rule(const WatchInputs& in, const WatchThresholds& t) {
  const CudaWatchThresholds& c = cuda_watch_thresholds();
  if (!gpu_waits(in, t) || !in.tiny_kernel_time_pct || !in.tiny_kernels_pct) return std::nullopt;
  if (*in.tiny_kernel_time_pct < c.tiny_time_pct || *in.tiny_kernels_pct < c.tiny_count_pct)
    return std::nullopt;
  Finding f;
  f.id = "tiny_kernels";
  f.status = Status::warn;
  f.title = "launch-bound: most GPU time in kernels under 10 µs";
  f.evidence = pct_text(*in.tiny_kernel_time_pct) + " of GPU kernel time in kernels under 10 µs (" +
               pct_text(*in.tiny_kernels_pct) + " of the kernels";
  if (in.kernels_per_s) f.evidence += ", " + rate_text(*in.kernels_per_s) + " kernels/s";
  if (in.kernel_median_us) f.evidence += ", median " + format_number(*in.kernel_median_us) + " µs";
  f.evidence += ")";
  if (in.idle_host_pct)
    f.evidence += "; GPU idle " + pct_text(*in.idle_host_pct) +
                  " of the time while the launching thread ran";
  f.advice =
      "each launch costs the host several µs, more than these kernels run: fuse them "
      "(torch.compile), capture the step in a CUDA graph, or make the work per kernel larger "
      "(bigger batch)";
  return f;
}

}  // namespace gb::diagnose
