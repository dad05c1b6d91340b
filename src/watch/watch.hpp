// watch/watch.hpp: `gpubase watch` — run a command (or attach to a running process), sample it
// every interval until it ends, the duration is up or the user stops it, and summarise what
// was seen as watch.* results. Diagnosis (diagnose::diagnose_watch) and printing happen in the
// caller, as for every suite.
//
//   WatchOutcome out = run_watch(options, hooks);   // blocks until the job ends
//
// Stopping: a first Ctrl-C (core/cancel) gives a spawned job stop_grace_s to exit on its own
// (it received the Ctrl-C from the terminal, or the caller forwarded it), then SIGTERM and,
// after a further grace, SIGKILL; an attached process is left alone and monitoring stops.
// --duration ends a spawned job the same way. The report covers everything sampled until then.
#pragma once
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "sys/child_process.hpp"
#include "watch/sample.hpp"

namespace gb::watch {

struct WatchOptions {
  std::vector<std::string> command;  // run this (argv) ...
  std::optional<int> pid;            // ... or attach to this process
  double interval_s = 1.0;           // 0.1 .. 60
  std::optional<double> duration_s;  // stop after this long
  int device = 0;                    // NVML device index
  std::string series_path;           // write the time series here (.csv or JSON lines)
  std::string capture_dir;           // copy every interval's /proc files here (bug reports)
  double stop_grace_s = 10.0;        // time a job gets to exit after Ctrl-C / --duration
  bool perf_counters = true;
  bool cuda_activity = true;  // load the CUDA-activity injection library into the job
  std::string proc_root = "/proc";
};

struct WatchHooks {
  std::function<void(int pid)> on_started;               // the job's pid (for forwarding)
  std::function<void(const WatchSample&)> on_sample;     // live view
  std::function<void(const std::string&)> on_progress;   // one-line notes
};

struct WatchOutcome {
  std::vector<Fact> facts;
  std::vector<Result> results;
  std::optional<sys::ExitStatus> exit;  // the spawned job's, once it ended
  std::string end_reason;               // "the job exited with code 0", ...
  bool interrupted = false;             // the user stopped monitoring (Ctrl-C)
  bool stopped_by_duration = false;
  bool gpu_available = false;
  std::string gpu_unavailable;  // why not, when !gpu_available
  double duration_s = 0;
};

// Throws gb::Error(usage) for bad options, a device index NVML does not list, a command that
// cannot be run or a pid that does not exist; everything else ends up in the outcome.
WatchOutcome run_watch(const WatchOptions& options, const WatchHooks& hooks = {});

// Checks the options (interval range, command xor pid, duration > 0, device index >= 0); throws
// gb::Error(usage).
void validate(const WatchOptions& options);

// Where a watch run's results print (the sink's declare_sections): one section per source --
// GPU, host CPU, the job's processes, memory, disks, perf counters, the sampler itself.
std::span<const SectionRule> watch_section_rules();

// Cores this process may run on (its affinity mask), the figure workers are judged against.
int usable_cores();

}  // namespace gb::watch
