// diagnose/watch_host.cpp: watch rules about the host around the job, true whatever the GPU
// does: more busy processes or threads than cores (the scheduler preempts them: involuntary
// context switches), memory running out, a hypervisor taking CPU time, and a run too short
// for its figures to describe training.
#include <string>

#include "diagnose/text.hpp"
#include "diagnose/watch_rules.hpp"

namespace gb::diagnose {

namespace {

// Preempted often enough that the scheduler, not the work, sets the pace. A process that has
// a core to itself is preempted a few times a second at most.
bool preempted(const WatchInputs& in, const WatchThresholds& t) {
  return in.involuntary_cs_per_busy && *in.involuntary_cs_per_busy >= t.involuntary_cs_per_busy;
}

std::string switches_text(const WatchInputs& in) {
  std::string s;
  if (in.involuntary_cs_per_s)
    s = rate_text(*in.involuntary_cs_per_s) + " involuntary switches/s (";
  s += rate_text(*in.involuntary_cs_per_busy) + " per busy process";
  return in.involuntary_cs_per_s ? s + ")" : s + " per second";
}

}  // namespace

std::optional<Finding> too_many_workers_rule(const WatchInputs& in, const WatchThresholds& t) {
  if (!in.cores || !in.active_processes) return std::nullopt;
  if (*in.active_processes <= *in.cores) return std::nullopt;
  // Oversubscribed: preempted often, or a run queue well past the cores (CPU-bound workers get
  // long time slices, so few involuntary switches, but still wait in the queue).
  const bool queued = in.run_queue && *in.run_queue >= t.run_queue_per_core * *in.cores;
  if (!preempted(in, t) && !queued) return std::nullopt;
  Finding f;
  f.id = "too_many_workers";
  f.status = Status::warn;
  f.title = "too many workers";
  f.evidence = in.job_processes ? count_text(*in.job_processes) + " job processes (" +
                                      count_text(*in.active_processes) + " busy)"
                                : count_text(*in.active_processes) + " busy job processes";
  f.evidence += " on " + count_text(*in.cores) + " cores, " + switches_text(in);
  if (queued) f.evidence += ", " + format_number(*in.run_queue) + " runnable tasks";
  f.advice = "more busy processes than cores only adds switching: try num_workers about " +
             std::to_string(suggested_workers(*in.cores)) + " (half the " + count_text(*in.cores) +
             " cores) and measure (`gpubase loader` sweeps worker "
             "counts); set OMP_NUM_THREADS=1 in the workers";
  return f;
}

std::optional<Finding> too_many_threads_rule(const WatchInputs& in, const WatchThresholds& t) {
  if (!in.cores || !in.run_queue || !in.active_processes || !preempted(in, t)) return std::nullopt;
  if (*in.active_processes > *in.cores) return std::nullopt;  // too_many_workers' case
  if (*in.run_queue < t.run_queue_per_core * *in.cores) return std::nullopt;
  Finding f;
  f.id = "too_many_threads";
  f.status = Status::warn;
  f.title = "too many threads";
  f.evidence = format_number(*in.run_queue) + " runnable tasks on " + count_text(*in.cores) +
               " cores from " + count_text(*in.active_processes) + " busy job processes";
  if (in.threads) f.evidence += " (" + count_text(*in.threads) + " threads)";
  f.evidence += ", " + switches_text(in);
  f.advice =
      "each process runs a thread pool as wide as the machine: cap them so processes x "
      "threads is about the core count (OMP_NUM_THREADS, MKL_NUM_THREADS, "
      "torch.set_num_threads, cv2.setNumThreads(0) in the workers)";
  return f;
}

std::optional<Finding> memory_pressure_rule(const WatchInputs& in, const WatchThresholds& t) {
  if (!in.mem_available_pct || *in.mem_available_pct >= t.mem_available_min_pct)
    return std::nullopt;
  Finding f;
  f.id = "memory_pressure";
  f.status = Status::warn;
  f.title = "host memory nearly exhausted";
  f.evidence = "MemAvailable fell to ";
  if (in.mem_available_gib) {
    f.evidence += format_number(*in.mem_available_gib) + " GiB (" + pct_text(*in.mem_available_pct);
    if (*in.mem_available_pct > 0)
      f.evidence +=
          " of " + format_number(*in.mem_available_gib * 100.0 / *in.mem_available_pct) + " GiB";
    f.evidence += ")";
  } else {
    f.evidence += pct_text(*in.mem_available_pct) + " of RAM";
  }
  if (in.job_rss_gib)
    f.evidence += "; the job's processes held up to " + format_number(*in.job_rss_gib) +
                  " GiB RSS (shared pages count once per process)";
  f.advice =
      "the page cache is evicted (every epoch reads from disk again) and the OOM killer is "
      "near: fewer workers or a smaller prefetch_factor, dataset indices in numpy arrays "
      "rather than Python lists (forked workers copy what they touch), or more memory";
  return f;
}

std::optional<Finding> cpu_steal_rule(const WatchInputs& in, const WatchThresholds& t) {
  if (!in.steal_pct || *in.steal_pct < t.steal_pct) return std::nullopt;
  Finding f;
  f.id = "cpu_steal";
  f.status = Status::warn;
  f.title = "CPU time stolen by the hypervisor";
  f.evidence = "steal " + pct_text(*in.steal_pct) +
               ": the VM's vCPUs waited that share of the time for a physical CPU";
  f.advice =
      "the host is oversubscribed: ask for dedicated (pinned) vCPUs or a bare-metal "
      "instance; the CPU figures here undercount what the job asked for";
  return f;
}

std::optional<Finding> short_run_rule(const WatchInputs& in, const WatchThresholds& t) {
  if (!in.watched_s || *in.watched_s >= t.short_run_s) return std::nullopt;
  Finding f;
  f.id = "short_run";
  f.status = Status::info;
  f.title = "short run";
  f.evidence = "watched for " + format_number(*in.watched_s) + " s";
  if (in.samples) f.evidence += " (" + count_text(*in.samples) + " samples)";
  f.evidence += ": start-up (imports, dataset indexing, cuDNN autotuning) weighs on every figure";
  f.advice =
      "watch at least a minute of steady training: stop with Ctrl-C after a few hundred "
      "steps";
  return f;
}

}  // namespace gb::diagnose
