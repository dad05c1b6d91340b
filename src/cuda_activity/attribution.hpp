// cuda_activity/attribution.hpp: why the GPU was idle. The watcher samples, many times a
// second, what the job's CUDA-launching threads and its other processes are doing
// (/proc/<pid>/task/<tid>/stat: R running, S sleeping, D uninterruptible I/O wait). Each tick
// is matched with the jobs' interval records at the same moment (their idle and sync masks,
// 1 ms resolution) and, when the GPU was idle then, given one cause:
//
//   sync   the host was inside a CUDA synchronization (CUPTI's sync spans): the GPU drained
//          its queue and the host waited for it to return (.item(), .cpu(), a sync per step);
//   host   a launching thread was running on a CPU: Python, framework and launch overhead;
//   data   the launching threads were blocked while loader workers were busy, or the main
//          thread itself was in disk wait: the job waited for its next batch;
//   other  none of these (blocked with idle workers: a lock, a barrier, a sleep).
//
// data_wait_pct is the share of ticks (= wall time) with the GPU idle for data; ticks are
// counted only inside the span the records cover (the job's CUDA life). A second set of totals
// counts only the ticks from a window start on (the steady state after the job's warm-up, set
// by the watcher once it knows when the first kernel ran) to the last tick with the GPU busy:
// the idle ticks after it (the job's shutdown) count only once the GPU gets busy again or the
// idle stretch outlasts the idle-tail limit (the job went idle for good: all of it counts).
#pragma once
#include <cstdint>
#include <deque>
#include <map>
#include <optional>

#include "cuda_activity/record.hpp"

namespace gb::cuda_activity {

enum class ThreadState { running, sleeping, disk, other };
// From the state letter of /proc/.../stat: R running; S and I sleeping; D disk wait.
ThreadState thread_state(char stat_letter);

struct ThreadTick {
  std::uint64_t t_ns = 0;         // CLOCK_MONOTONIC
  bool launcher_running = false;  // a CUDA-launching thread (main, autograd) runs or is runnable
  bool launcher_disk = false;     // the main thread is in uninterruptible (disk) wait
  int workers = 0;                // the job's other processes
  int workers_busy = 0;           // ... of them running or in disk wait
};

enum class IdleCause { sync = 0, host, data, other };
inline constexpr int kIdleCauses = 4;
const char* idle_cause_name(IdleCause c);

IdleCause classify_idle(const ThreadTick& tick, bool host_in_sync);

struct AttributionTotals {
  std::uint64_t ticks = 0;       // resolved ticks inside the records' span
  std::uint64_t idle_ticks = 0;  // ... with the GPU idle
  std::uint64_t by_cause[kIdleCauses] = {};
  std::uint64_t unresolved = 0;  // no record came for them (dropped after max_pending)

  std::optional<double> idle_pct() const;
  std::optional<double> cause_pct(IdleCause c) const;  // share of all ticks (wall time)
  void add(const AttributionTotals& other);
};

class IdleAttribution {
 public:
  static constexpr std::size_t kMaxPendingTicks = 8192;

  // Records of every CUDA process of the job, as the rings deliver them.
  void add_record(const IntervalRecord& r);
  // A producer that exited: its records no longer hold ticks back.
  void producer_ended(std::uint32_t pid);
  void add_tick(const ThreadTick& tick);
  // Resolves every pending tick (end of the run): ticks no record covers are unresolved.
  void finish();
  // Ticks at or after t_ns also count in window_totals(). Set it before records covering those
  // ticks arrive (ticks wait for their records, so the first kernel's record is early enough).
  void set_window_start(std::uint64_t t_ns) { window_start_ns_ = t_ns; }
  // How long an idle end of the window may last and still be left out (default 60 s).
  void set_max_idle_tail(std::uint64_t ns) { max_idle_tail_ns_ = ns; }
  const AttributionTotals& totals() const { return totals_; }
  const AttributionTotals& window_totals() const { return window_; }

 private:
  struct Producer {
    std::deque<IntervalRecord> records;  // recent ones, oldest first
    std::uint64_t covered_until = 0;     // t1 of the newest record
    bool ended = false;
  };
  void resolve(bool final);
  // The GPU busy at t in any producer's record, and the host in a sync; empty: no record
  // covers t.
  struct Moment {
    bool covered = false, busy = false, in_sync = false;
  };
  Moment moment(std::uint64_t t_ns) const;
  void trim();

  std::map<std::uint32_t, Producer> producers_;
  std::deque<ThreadTick> pending_;
  AttributionTotals totals_;
  AttributionTotals window_;
  std::uint64_t window_start_ns_ = UINT64_MAX;
  // The window's idle ticks since its last busy one (not yet counted), and when the idle
  // stretch began (0: the last tick was busy).
  AttributionTotals window_tail_;
  std::uint64_t window_idle_from_ns_ = 0;
  std::uint64_t max_idle_tail_ns_ = 60'000'000'000;
  void count_in_window(const ThreadTick& t, const Moment& m);
};

}  // namespace gb::cuda_activity
