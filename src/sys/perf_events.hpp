// sys/perf_events.hpp: `perf stat`-like counters for a process tree through perf_event_open(2):
// instructions, cycles, cache references and misses (hardware), task-clock, context switches,
// CPU migrations and page faults (software), for `gpubase watch`.
//
// One fd per event per target thread, opened with inherit=1 so that threads and processes the
// target creates afterwards (a training job's DataLoader workers) are counted too; the kernel
// adds an exited child's counts into its parent's counter. Hardware counters are few and may be
// multiplexed; each fd is read with its enabled and running times and scaled by
// enabled / running, the way perf does. (PERF_FORMAT_GROUP would read all events at once but
// the kernel refuses read() of an inherited group, so there are no groups.)
//
// Every event is always reported, counted or not, with the reason it is not: a VM without a
// virtual PMU answers ENOENT for the hardware events; perf_event_paranoid >= 2 without
// CAP_PERFMON refuses kernel-mode counting, in which case the events are reopened user-space
// only (exclude_kernel) and marked so. Context switches and CPU migrations happen in the
// kernel and count nothing user-space only, so they are then reported unsupported rather than
// as a false 0. (task-clock is time-based and still includes time in system calls.)
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gb::sys {

// One event summed over all fds of a PerfCounters (threads, inherited children).
struct CounterReading {
  std::string name;  // perf's name: "instructions", "task-clock", "page-faults", ...
  bool supported = false;
  // Why it is not counted: "not supported on this machine (ENOENT)", "not permitted:
  // perf_event_paranoid is 3 (...)". When supported, usually empty; it may note a partial count
  // ("counting 7 of 8 threads: ...").
  std::string reason;
  bool user_only = false;    // opened with exclude_kernel (perf_event_paranoid refused more)
  std::uint64_t value = 0;   // raw count, summed over fds (task-clock: nanoseconds)
  double scaled_value = 0;   // sum over fds of value * enabled / running: the estimated count
  double enabled_s = 0;      // summed over fds, as perf stat sums them
  double running_s = 0;      // time actually on a PMU; < enabled_s when multiplexed
  bool multiplexed = false;  // some fd ran less than it was enabled: the value is an estimate
};

// Perf's names of the events, in the order read() returns them.
const std::vector<std::string>& perf_event_names();

// The reading named name, or nullptr.
const CounterReading* find_reading(const std::vector<CounterReading>& readings,
                                   std::string_view name);

// /proc/sys/kernel/perf_event_paranoid: -1 (all allowed) .. 2 (user space only without
// CAP_PERFMON); Debian and Ubuntu add 3 and 4 (no perf without CAP_PERFMON). Empty when the
// kernel has no perf events or the file cannot be read.
std::optional<int> read_perf_event_paranoid(const std::string& proc_root = "/proc");

// The reason text for a perf_event_open() that failed with err: "not supported on this machine
// (ENOENT)", "not permitted: perf_event_paranoid is 2 (needs CAP_PERFMON or a setting <= 1)",
// "not permitted (EACCES)" without a known paranoid level, ...
std::string perf_open_failure_reason(int err, std::optional<int> perf_event_paranoid);

// Counters opened on one or more processes. RAII: the fds close in the destructor. Move-only.
class PerfCounters {
 public:
  // For a child that has been forked but not yet exec'd (ChildProcess::spawn's before_exec):
  // disabled until the exec (enable_on_exec), so gpubase's own fork-side work is not counted.
  // Throws gb::Error(usage) "no process with pid N" when pid does not exist.
  static PerfCounters open_for_exec(int pid);
  // For a running process: one set per thread now in /proc/<pid>/task, enabled at once.
  // Threads and processes it creates from now on are counted (inherit); child processes it
  // forked BEFORE this call are not — pass their pids to open_for_processes() as well.
  // Throws gb::Error(usage) "no process with pid N" when pid does not exist.
  static PerfCounters open_for_process(int pid);
  // open_for_process() over several processes (a job and the workers it already has); pids
  // that have exited meanwhile are skipped. Throws gb::Error(usage) when none exists.
  static PerfCounters open_for_processes(const std::vector<int>& pids);

  PerfCounters(PerfCounters&& other) noexcept;
  PerfCounters& operator=(PerfCounters&& other) noexcept;
  PerfCounters(const PerfCounters&) = delete;
  PerfCounters& operator=(const PerfCounters&) = delete;
  ~PerfCounters();

  // One reading per event of perf_event_names(), in that order; empty for a moved-from object.
  // Counters keep their final values after the processes exit, so reading after wait() gives
  // the whole run, as `perf stat` does.
  std::vector<CounterReading> read() const;
  // The perf_event_paranoid level seen when the counters were opened.
  std::optional<int> perf_event_paranoid() const { return paranoid_; }

 private:
  struct Counter {
    std::string name;
    bool supported = false;
    std::string reason;
    bool user_only = false;
    std::vector<int> fds;
  };
  enum class Mode { exec, running };

  PerfCounters() = default;
  static PerfCounters open(const std::vector<int>& pids, Mode mode);
  void close_all() noexcept;

  std::vector<Counter> counters_;
  std::optional<int> paranoid_;
};

// Per-interval figures from two read()s of the same counters, like `perf stat -I`. Each delta is
// scaled by its own enabled/running deltas. A field is empty when a counter it needs is missing
// or unsupported in either reading, went backwards, or (for the rates) interval_s <= 0.
struct PerfRates {
  double interval_s = 0;
  std::optional<double> ipc;            // instructions per cycle
  std::optional<double> cpus_utilized;  // task-clock ns / interval ns: 1.0 = one core busy
  std::optional<double> instructions_per_s;
  std::optional<double> cycles_per_s;
  std::optional<double> cache_references_per_s;
  std::optional<double> cache_misses_per_s;
  std::optional<double> context_switches_per_s;
  std::optional<double> cpu_migrations_per_s;
  std::optional<double> page_faults_per_s;
  bool multiplexed = false;  // some counter ran on the PMU for only part of the interval
};
PerfRates rates_between(const std::vector<CounterReading>& earlier,
                        const std::vector<CounterReading>& later, double interval_s);

}  // namespace gb::sys
