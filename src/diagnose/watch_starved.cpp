// diagnose/watch_starved.cpp: why a GPU below its 95 % target waits. The host either has no CPU
// left for the input pipeline (every core busy), has one or a few processes pegged while cores
// sit idle (too few loader workers, or the training loop itself), waits on a busy disk, or
// shows no bottleneck at all (host syncs and launch gaps: only a profile tells which). Each
// rule reads only measured figures; watch.cpp decides which run together.
//
// Napkin math for the worker count: one DataLoader worker decodes and augments 205-270
// ImageNet JPEGs/s (docs/pytorch-figures.md); an H200 trains ResNet-50 at ~5800 img/s in
// AMP, so it needs ~20+ busy cores. Half the cores is where `gpubase loader`'s sweep starts,
// not its answer.
#include <algorithm>
#include <cmath>
#include <string>

#include "diagnose/text.hpp"
#include "diagnose/watch_rules.hpp"

namespace gb::diagnose {

namespace {

bool starved(const WatchInputs& in, const WatchThresholds& t) {
  return in.util_pct && *in.util_pct < t.gpu_busy_pct;
}

// The job's processes hold most of the host's cores.
bool host_saturated(const WatchInputs& in, const WatchThresholds& t) {
  return in.cores && in.job_cpu_pct &&
         *in.job_cpu_pct / 100.0 >= t.host_saturated_share * *in.cores;
}

// Cores left idle by the whole machine (not only the job).
std::optional<double> idle_cores(const WatchInputs& in) {
  if (!in.cores || !in.mean_core_pct) return std::nullopt;
  return *in.cores * (1.0 - *in.mean_core_pct / 100.0);
}

std::string cores_text(double cores) {
  const std::string n = count_text(cores);
  return n + (n == "1" ? " core" : " cores");
}

// "one process (pt_data_worker, pid 123)"
std::string process_name(const WatchInputs& in, const std::string& what) {
  std::vector<std::string> parts;
  if (!in.busiest_comm.empty()) parts.push_back(in.busiest_comm);
  if (!in.busiest_pid.empty()) parts.push_back("pid " + in.busiest_pid);
  return parts.empty() ? what : what + " (" + join(parts, ", ") + ")";
}

// "raise DataLoader num_workers from 1 to about 8 (half the 16 cores)"
std::string more_workers_advice(const WatchInputs& in) {
  const int suggested = suggested_workers(*in.cores);
  std::string s = "raise DataLoader num_workers";
  if (in.job_processes && *in.job_processes >= 2) s += " from " + count_text(*in.job_processes - 1);
  s += " to about " + std::to_string(suggested) + " (half the " + cores_text(*in.cores) + ")";
  return s +
         ", keep pin_memory=True and prefetch_factor 2-4, then measure (`gpubase loader` "
         "sweeps worker counts)";
}

// Pegged loader processes while cores are idle, and yet the job already has enough workers:
// the work does not spread over them.
bool enough_workers(const WatchInputs& in) {
  return in.job_processes && *in.job_processes - 1 >= suggested_workers(*in.cores);
}

std::string imbalance_advice(const WatchInputs& in, long busy) {
  return "the job already has " + count_text(*in.job_processes - 1) + " workers, yet only " +
         std::to_string(busy) + (busy == 1 ? " is" : " are") +
         " busy: shard an IterableDataset by get_worker_info(), and move any serial step (a "
         "shared reader, a lock) out of the workers";
}

// Saturated job processes on average, rounded; 1 when the summary did not count them.
long pegged_processes(const WatchInputs& in) {
  return in.saturated_processes ? std::lround(*in.saturated_processes) : 1;
}

}  // namespace

std::optional<Finding> input_bound_cpu_rule(const WatchInputs& in, const WatchThresholds& t) {
  if (!starved(in, t)) return std::nullopt;
  Finding f;
  f.id = "input_bound_cpu";
  f.status = starved_status(in, t);
  const std::string gpu = "GPU busy " + pct_text(*in.util_pct) + " while ";

  if (host_saturated(in, t)) {
    f.title = "input-bound on CPU";
    std::string procs = "the job's processes";
    if (in.active_processes) procs = count_text(*in.active_processes) + " job processes";
    f.evidence = gpu + procs + " hold " + count_text(*in.job_cpu_pct / 100.0) + " of " +
                 cores_text(*in.cores);
    if (in.mean_core_pct) f.evidence += " at " + pct_text(*in.mean_core_pct);
    f.advice =
        "the input pipeline needs more CPU than this host has, so more workers will not "
        "help: make each sample cheaper (pre-resized or packed data, lighter "
        "augmentation), decode on the GPU (nvJPEG, DALI), or use more cores per GPU";
    return f;
  }

  // Pegged processes while cores sit idle: too few workers (or one doing all the work). A
  // loader worker counts from loader_busy_pct: what it does not spend computing it spends
  // handing batches over (pickling, shared memory), so it never shows a full core.
  const bool loader = busiest_process_kind(in) == ProcessKind::loader;
  if (!in.busiest_process_pct ||
      *in.busiest_process_pct < (loader ? t.loader_busy_pct : t.saturated_pct))
    return std::nullopt;
  const auto idle = idle_cores(in);
  if (!idle || *idle < t.idle_cores_min) return std::nullopt;
  const long pegged = pegged_processes(in);
  const std::string idle_text = count_text(*idle) + " of " + cores_text(*in.cores) + " are idle";
  if (pegged >= 2) {
    f.title = "input-bound: too few loader workers";
    f.evidence = gpu + std::to_string(pegged) + " job processes each hold a core at " +
                 pct_text(t.saturated_pct) + " or more and " + idle_text;
  } else {
    if (!loader) return std::nullopt;
    f.title = "input-bound on one loader process";
    f.evidence = gpu + process_name(in, "one process") + " holds a core at " +
                 pct_text(*in.busiest_process_pct) + " and " + idle_text;
  }
  f.advice =
      enough_workers(in) ? imbalance_advice(in, std::max(pegged, 1L)) : more_workers_advice(in);
  return f;
}

std::optional<Finding> one_process_rule(const WatchInputs& in, const WatchThresholds& t) {
  if (!starved(in, t) || host_saturated(in, t)) return std::nullopt;
  if (!in.busiest_process_pct || *in.busiest_process_pct < t.saturated_pct) return std::nullopt;
  if (pegged_processes(in) >= 2) return std::nullopt;  // input_bound_cpu's case
  const auto idle = idle_cores(in);
  if (!idle || *idle < t.idle_cores_min) return std::nullopt;
  const ProcessKind kind = busiest_process_kind(in);
  if (kind == ProcessKind::loader) return std::nullopt;

  Finding f;
  f.status = starved_status(in, t);
  const std::string tail = " holds a core at " + pct_text(*in.busiest_process_pct) + " and " +
                           count_text(*idle) + " of " + cores_text(*in.cores) + " are idle";
  const int workers = suggested_workers(*in.cores);
  if (kind == ProcessKind::main) {
    f.id = "main_process_bound";
    f.title = "the training process is CPU-bound";
    f.evidence = "GPU busy " + pct_text(*in.util_pct) + " while " +
                 process_name(in, "the training process") + tail;
    if (in.job_processes && *in.job_processes < 1.5)
      f.advice =
          "the job has no loader workers, so decoding runs in the training loop: set "
          "DataLoader num_workers to about " +
          std::to_string(workers) + " (half the " + cores_text(*in.cores) +
          ") with pin_memory=True";
    else
      f.advice =
          "the training loop's own CPU work is the limit (Python, kernel launches, host "
          "syncs): larger batches, torch.compile or CUDA graphs, no .item()/.cpu() per "
          "step, no decode or augmentation in the main process";
    return f;
  }
  f.id = "one_process_bound";
  f.title = "bound by one CPU process";
  f.evidence =
      "GPU busy " + pct_text(*in.util_pct) + " while " + process_name(in, "one process") + tail;
  const std::string py_spy =
      in.busiest_pid.empty() ? "py-spy top" : "py-spy top --pid " + in.busiest_pid;
  f.advice = "if it is a loader worker, raise num_workers to about " + std::to_string(workers) +
             " (half the " + cores_text(*in.cores) +
             "); if it is the training loop, cut per-step host work (larger batch, torch.compile "
             "or CUDA graphs, fewer host syncs); " +
             py_spy + " shows which";
  return f;
}

std::optional<Finding> storage_bound_rule(const WatchInputs& in, const WatchThresholds& t) {
  if (in.util_pct && !starved(in, t)) return std::nullopt;
  if (!in.disk_util_pct) return std::nullopt;
  const bool machine =
      in.iowait_pct && *in.iowait_pct >= t.iowait_pct && *in.disk_util_pct >= t.disk_busy_pct;
  // One process reading synchronously keeps 1 of N cores in iowait: the machine's iowait stays
  // low, but that process spends most of its time in disk wait (D).
  const CudaWatchThresholds& c = cuda_watch_thresholds();
  // The job's share of what the disks read, when both were measured: the disk is busy for the
  // job, not for a neighbour (then the job's disk wait is someone else's doing).
  std::optional<double> job_share;
  if (in.job_disk_read_mbps && in.disk_read_mbps && *in.disk_read_mbps > 0)
    job_share = std::min(100.0, 100.0 * *in.job_disk_read_mbps / *in.disk_read_mbps);
  // One synchronous reader keeps a disk busy about as long as it waits on it: on a fast disk a
  // process in disk wait a third of the time leaves the disk a third busy, and those waits are
  // real reads (a process in D on a disk far less busy waits on something else).
  const bool process =
      in.io_wait_process_pct && *in.io_wait_process_pct >= c.process_io_wait_pct &&
      *in.disk_util_pct >=
          std::min(c.process_io_disk_pct, c.process_io_disk_ratio * *in.io_wait_process_pct) &&
      (!job_share || *job_share >= c.process_io_disk_share_pct);
  if (!machine && !process) return std::nullopt;
  Finding f;
  f.id = "storage_bound";
  f.status = starved_status(in, t);
  f.title = "storage-bound";
  const std::string disk = in.disk_device.empty() ? "the busiest disk" : in.disk_device;
  f.evidence = in.util_pct ? "GPU busy " + pct_text(*in.util_pct) + " while " : "";
  if (process) {
    std::vector<std::string> who;
    if (!in.io_wait_comm.empty()) who.push_back(in.io_wait_comm);
    if (!in.io_wait_pid.empty()) who.push_back("pid " + in.io_wait_pid);
    f.evidence += "job process " + (who.empty() ? std::string() : "(" + join(who, ", ") + ") ") +
                  "is in disk wait " + pct_text(*in.io_wait_process_pct) + " of the time and " +
                  disk + " is " + pct_text(*in.disk_util_pct) + " busy";
    if (job_share)
      f.evidence += ", about " + pct_text(*in.disk_util_pct * *job_share / 100.0) +
                    " of it for the job's own reads (" + format_number(*in.job_disk_read_mbps) +
                    " MB/s, " + pct_text(*job_share) + " of the bytes read)";
    if (in.iowait_pct && !machine)
      f.evidence += " (machine iowait only " + pct_text(*in.iowait_pct) +
                    ": one process waits, the other cores do not)";
  } else {
    f.evidence += (in.util_pct ? "iowait is " : "iowait ") + pct_text(*in.iowait_pct) + " with " +
                  disk + " at " + pct_text(*in.disk_util_pct) + " util";
  }
  std::vector<std::string> details;
  if (in.disk_await_ms)
    details.push_back((in.disk_await_direction.empty() ? "read" : in.disk_await_direction) +
                      " await " + format_number(*in.disk_await_ms) + " ms");
  if (in.disk_queue) details.push_back("queue " + format_number(*in.disk_queue));
  if (!details.empty()) f.evidence += " (" + join(details, ", ") + ")";
  f.advice = "reads from " + disk +
             " hold the input back: pack small files into shards "
             "(WebDataset tar, `gpubase dataset`), keep the dataset in RAM (page cache) or on "
             "local NVMe, read sequentially, and prefetch more batches";
  return f;
}

std::optional<Finding> launch_bound_rule(const WatchInputs& in, const WatchThresholds& t) {
  if (!starved(in, t) || host_saturated(in, t)) return std::nullopt;
  // The CUDA-activity library saw the GPU wait for data: input_wait names it.
  if (in.data_wait_pct && *in.data_wait_pct >= cuda_watch_thresholds().data_wait_warn_pct)
    return std::nullopt;
  if (!in.busiest_core_pct || !in.iowait_pct) return std::nullopt;
  if (*in.busiest_core_pct >= t.saturated_pct || *in.iowait_pct >= t.iowait_pct)
    return std::nullopt;
  if (in.busiest_process_pct && *in.busiest_process_pct >= t.saturated_pct) return std::nullopt;
  if (in.busiest_process_pct && *in.busiest_process_pct >= t.loader_busy_pct &&
      busiest_process_kind(in) == ProcessKind::loader)
    return std::nullopt;  // input_bound_cpu's case
  Finding f;
  f.id = "launch_bound";
  f.status = starved_status(in, t);
  f.title = "GPU waits, host idle: syncs or launch gaps";
  f.evidence = "GPU busy " + pct_text(*in.util_pct) +
               " while no host resource is saturated: busiest core " +
               pct_text(*in.busiest_core_pct);
  if (in.busiest_process_pct)
    f.evidence += ", busiest process " + pct_text(*in.busiest_process_pct) + " of a core";
  f.evidence += ", iowait " + pct_text(*in.iowait_pct);
  f.advice =
      "the GPU idles between kernels without a host bottleneck: profile a few steps (nsys, "
      "torch.profiler) for host syncs (.item(), .cpu(), printing tensors), small batches "
      "and many tiny kernels; CUDA graphs or torch.compile close launch gaps";
  return f;
}

}  // namespace gb::diagnose
