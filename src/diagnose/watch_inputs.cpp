// diagnose/watch_inputs.cpp: reads the watch summary (docs/results.md, watch.*) into
// WatchInputs, plus the small text and classification helpers the watch rules share.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "diagnose/rules.hpp"
#include "diagnose/text.hpp"
#include "diagnose/watch_rules.hpp"

namespace gb::diagnose {

namespace {

std::optional<double> value_of(const Run& run, std::string_view key) {
  const Result* r = run.find(key);
  if (!r || !r->value || !std::isfinite(*r->value)) return std::nullopt;
  return r->value;
}

std::string param_of(const Run& run, std::string_view key, std::string_view name) {
  const Result* r = run.find(key);
  if (!r) return "";
  return r->text_param(name).value_or("");
}

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

}  // namespace

bool is_watch_run(const Run& run) {
  return std::any_of(run.results.begin(), run.results.end(),
                     [](const Result& r) { return starts_with(r.key, "watch."); });
}

WatchInputs read_watch_inputs(const Run& run) {
  WatchInputs in;
  if (run.gpu.unavailable)
    in.gpu_none = run.gpu.unavailable->empty() ? std::string("no GPU found") : *run.gpu.unavailable;
  if (const Result* util = run.find("watch.gpu.util.pct")) {
    if (!util->value)
      in.util_skipped = util->reason.empty() ? std::string("not measured") : util->reason;
    if (util->telemetry) {
      in.throttle_reasons = util->telemetry->throttle_reasons;
      in.temp_c = util->telemetry->temp_c_max;
      in.sm_clock_mhz = util->telemetry->sm_clock_mhz_mean;
    }
  }
  in.util_pct = value_of(run, "watch.gpu.util.pct");
  in.util_p10_pct = value_of(run, "watch.gpu.util.p10.pct");
  in.util_below_target_share_pct = value_of(run, "watch.gpu.util.below95.share.pct");
  in.sm_active_pct = value_of(run, "watch.gpu.sm_active.pct");
  in.tensor_active_pct = value_of(run, "watch.gpu.tensor_active.pct");
  if (const auto clock = value_of(run, "watch.gpu.sm_clock.mhz")) in.sm_clock_mhz = clock;
  if (const auto temp = value_of(run, "watch.gpu.temp.c")) in.temp_c = temp;
  in.sm_clock_max_mhz = read_run_facts(run).sm_clock_max_mhz;
  in.job_sm_pct = value_of(run, "watch.gpu.job.sm.pct");
  in.other_processes = value_of(run, "watch.gpu.other_processes");
  in.other_pids = param_of(run, "watch.gpu.other_processes", "pids");

  in.cores = value_of(run, "watch.host.cores");
  for (const char* fact_key : {"host.usable_cores", "host.logical_cores", "host.cpu.cores"}) {
    if (in.cores) break;
    in.cores = run.fact_number(fact_key);
  }
  if (in.cores && *in.cores < 1) in.cores.reset();
  in.mean_core_pct = value_of(run, "watch.cpu.mean_core.pct");
  in.busiest_core_pct = value_of(run, "watch.cpu.busiest_core.pct");
  in.iowait_pct = value_of(run, "watch.cpu.iowait.pct");
  in.steal_pct = value_of(run, "watch.cpu.steal.pct");
  in.run_queue = value_of(run, "watch.cpu.run_queue");

  in.job_cpu_pct = value_of(run, "watch.job.cpu.pct");
  in.job_processes = value_of(run, "watch.job.processes");
  in.active_processes = value_of(run, "watch.job.active_processes");
  in.saturated_processes = value_of(run, "watch.job.saturated_processes");
  in.threads = value_of(run, "watch.job.threads");
  in.busiest_process_pct = value_of(run, "watch.job.busiest_process.cpu.pct");
  in.busiest_pid = param_of(run, "watch.job.busiest_process.cpu.pct", "pid");
  in.busiest_comm = param_of(run, "watch.job.busiest_process.cpu.pct", "comm");
  in.busiest_role = param_of(run, "watch.job.busiest_process.cpu.pct", "role");
  in.root_pid = run.fact("watch.pid").value_or("");
  in.involuntary_cs_per_s = value_of(run, "watch.job.involuntary_cs.per_s");
  in.involuntary_cs_per_busy = value_of(run, "watch.job.involuntary_cs_per_process.per_s");
  in.job_rss_gib = value_of(run, "watch.job.rss.gib");

  in.mem_available_pct = value_of(run, "watch.mem.available.pct");
  in.mem_available_gib = value_of(run, "watch.mem.available.gib");
  in.disk_util_pct = value_of(run, "watch.disk.util.pct");
  in.disk_await_ms = value_of(run, "watch.disk.await.ms");
  in.disk_await_direction = param_of(run, "watch.disk.await.ms", "direction");
  in.disk_queue = value_of(run, "watch.disk.queue");
  in.disk_device = param_of(run, "watch.disk.util.pct", "device");

  in.cuda_busy_pct = value_of(run, "watch.cuda.busy.pct");
  in.cuda_idle_pct = value_of(run, "watch.cuda.idle.pct");
  in.data_wait_pct = value_of(run, "watch.cuda.data_wait.pct");
  in.idle_host_pct = value_of(run, "watch.cuda.idle.host.pct");
  in.idle_sync_pct = value_of(run, "watch.cuda.idle.sync.pct");
  in.kernels_per_s = value_of(run, "watch.cuda.kernels.per_s");
  in.cuda_kernels = value_of(run, "watch.cuda.kernels.count");
  in.kernel_median_us = value_of(run, "watch.cuda.kernel.median.us");
  in.tiny_kernels_pct = value_of(run, "watch.cuda.tiny_kernels.pct");
  in.tiny_kernel_time_pct = value_of(run, "watch.cuda.tiny_kernel_time.pct");
  in.h2d_pageable_gb = value_of(run, "watch.cuda.h2d.pageable.gb");
  in.h2d_pageable_share_pct = value_of(run, "watch.cuda.h2d.pageable.share.pct");
  in.h2d_pageable_gbps = value_of(run, "watch.cuda.h2d.pageable.gbps");
  in.h2d_pinned_gbps = value_of(run, "watch.cuda.h2d.pinned.gbps");
  in.syncs_per_s = value_of(run, "watch.cuda.syncs.per_s");
  in.sync_mean_ms = value_of(run, "watch.cuda.sync.mean.ms");
  in.sync_blocked_pct = value_of(run, "watch.cuda.sync.blocked.pct");
  in.idle_gap_step_ms = value_of(run, "watch.cuda.idle_gap.step.ms");
  if (const std::string g = param_of(run, "watch.cuda.idle_gap.step.ms", "long gaps per second");
      !g.empty())
    in.long_gaps_per_s = std::strtod(g.c_str(), nullptr);
  in.d2h_copies_per_s = value_of(run, "watch.cuda.d2h.copies.per_s");
  in.d2h_mean_size = param_of(run, "watch.cuda.d2h.copies.per_s", "mean size");
  in.io_wait_process_pct = value_of(run, "watch.job.io_wait.pct");
  in.io_wait_pid = param_of(run, "watch.job.io_wait.pct", "pid");
  in.io_wait_comm = param_of(run, "watch.job.io_wait.pct", "comm");
  in.runnable_processes = value_of(run, "watch.job.runnable_processes");
  in.job_disk_read_mbps = value_of(run, "watch.job.disk_read.mbps");
  in.disk_read_mbps = value_of(run, "watch.disk.read.mbps");

  in.samples = value_of(run, "watch.samples");
  const auto interval = value_of(run, "watch.interval.s");
  // A job was watched (`watch -- CMD`, `baseline -- CMD`): how long, from the watch itself.
  const auto job_watched = run.find_fact("watch.command") ? value_of(run, "watch.duration.s")
                                                          : std::nullopt;
  if (job_watched)
    in.watched_s = job_watched;
  else if (in.samples && interval)
    in.watched_s = *in.samples * *interval;
  else if (run.duration_s > 0 && run.command == "watch")  // a watch run without samples
    in.watched_s = run.duration_s;
  return in;
}

std::string pct_text(double v) {
  char buf[32];
  if (std::fabs(v) >= 9.95) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f", v);
    std::string s = buf;
    if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
    if (s == "-0") s = "0";
    return s + " %";
  }
  return std::string(buf) + " %";
}

std::string rate_text(double v) {
  char buf[32];
  if (std::fabs(v) >= 10000)
    std::snprintf(buf, sizeof buf, "%.0fk", v / 1000.0);
  else
    std::snprintf(buf, sizeof buf, "%.0f", v);
  return buf;
}

std::string count_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f", v);
  return buf;
}

ProcessKind busiest_process_kind(const WatchInputs& in) {
  if (in.busiest_role == "main") return ProcessKind::main;
  if (in.busiest_role == "child" || in.busiest_role == "worker") return ProcessKind::loader;
  const std::string& comm = in.busiest_comm;
  if (comm.find("data_worker") != std::string::npos || comm.find("loader") != std::string::npos)
    return ProcessKind::loader;
  if (comm == "pt_main_thread") return ProcessKind::main;
  if (!in.root_pid.empty() && in.busiest_pid == in.root_pid) return ProcessKind::main;
  // A job of one process has no workers: whatever is busy is the training process itself.
  if (in.job_processes && *in.job_processes < 1.5) return ProcessKind::main;
  return ProcessKind::unknown;
}

int suggested_workers(double cores) {
  return std::max(1, static_cast<int>(cores) / 2);
}

Status starved_status(const WatchInputs& in, const WatchThresholds& t) {
  if (in.util_pct && *in.util_pct < t.gpu_starved_fail_pct) return Status::fail;
  return Status::warn;
}

}  // namespace gb::diagnose
