// watch/cuda_monitor.hpp: the watcher's side of seeing inside the job. Before the job starts,
// prepare_cuda_activity() decides whether CUDA should load the injection library into it and
// makes the folder its rings go to; while it runs, a CudaMonitor thread
//  - reads every job process's ring (new processes' rings are found as they appear),
//  - samples the job's threads from /proc/<pid>/task/<tid>/stat (the CUDA-launching threads of
//    the process that runs the most kernels, and every other process of the tree) up to 100
//    times a second, fewer with many processes, so the watcher's own cost stays ~1 % of a core,
//  - and matches both into the why-idle attribution (cuda_activity/attribution).
// take_interval() hands each sample its share; results() the run's watch.cuda.* figures.
// The thread-state side runs also without CUDA activity: disk waits and runnable processes
// are judged per process from it.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/result.hpp"
#include "cuda_activity/attribution.hpp"
#include "cuda_activity/ring.hpp"
#include "watch/cuda_sample.hpp"
#include "watch/cuda_totals.hpp"

namespace gb::watch {

struct CudaActivitySetup {
  bool enabled = false;
  std::string reason;     // why not, when !enabled
  std::string ring_dir;   // made here, removed by the monitor
  std::vector<std::pair<std::string, std::string>> env;  // for the job's environment
  std::string library;    // the injection library's path
  std::string cupti;      // CUPTI's path, where found
};

// want: the user did not turn it off; command_given: watch starts the job (an attached
// process cannot load a library any more); interval_s: the watch interval.
CudaActivitySetup prepare_cuda_activity(bool want, bool command_given, double interval_s);

// Where the injection library is: $GPUBASE_CUDA_INJECT_LIB, else next to this executable, else
// ../lib/gpubase/; empty when none exists.
std::string find_injection_library();
// CUPTI's library: $GPUBASE_CUPTI_PATH, else the toolkit's usual places; empty when none.
std::string find_cupti();

class CudaMonitor {
 public:
  CudaMonitor(CudaActivitySetup setup, std::string proc_root);
  ~CudaMonitor();
  CudaMonitor(const CudaMonitor&) = delete;
  CudaMonitor& operator=(const CudaMonitor&) = delete;

  void start();
  void set_tree(const std::vector<int>& pids);
  // The CUDA figures and thread states since the previous call.
  std::pair<CudaInterval, JobThreadsInterval> take_interval();
  // Stops the thread after a last read of the rings.
  void finish();
  // watch.cuda.* (or skipped with the reason) and the per-process thread-state results.
  std::vector<Result> results(std::optional<double> nvml_util_pct) const;

  // One tick, exposed for tests with a fixture /proc: reads the states of the tree.
  void tick(std::uint64_t now_ns);
  // Reads every ring in the folder once (new records, statuses, ended producers).
  void read_rings();

 private:
  struct Ring {
    cuda_activity::RingReader reader;
    bool ended = false;
    std::uint64_t kernels = 0;
  };
  struct ProcessTicks {
    std::string comm;
    std::uint64_t disk = 0;  // ticks in D
    std::uint64_t seen = 0;
  };
  // Thread states over some span: per process, and the job's totals.
  struct ThreadCounts {
    std::map<int, ProcessTicks> processes;
    std::uint64_t ticks = 0;
    double runnable = 0;
    std::uint64_t launcher_running = 0;
  };
  void run();
  void find_launcher_threads(int pid);
  // Once a second: the bytes the job's processes read from storage (/proc/<pid>/io).
  void read_io(std::uint64_t now_ns, bool steady);

  CudaActivitySetup setup_;
  std::string proc_root_;
  std::thread thread_;
  bool stop_ = false;
  mutable std::mutex mu_;
  std::vector<int> tree_;
  std::map<std::string, Ring> rings_;  // by path
  std::map<std::uint32_t, std::string> statuses_;  // pid -> last status text
  std::vector<std::string> ring_errors_;
  std::uint64_t lost_ = 0;
  // run_: every record from the first CUDA work; steady_: those from kWarmupS after the first
  // kernel to the last millisecond of GPU work (watch/steady_window.hpp), the window the
  // results judge when it is long enough. steady_tail_: the records without GPU work since the
  // last that had some (the job's idle end, so far); they join steady_ once GPU work follows
  // them or once the idle stretch lasts longer than kMaxIdleTailS (then the rest counts too).
  CudaTotals run_, interval_, steady_, steady_tail_;
  std::uint64_t steady_busy_end_ns_ = 0;  // the last GPU work in the steady records
  std::uint64_t steady_idle_from_ns_ = 0;  // start of the idle stretch since; 0: none
  void add_steady(const cuda_activity::IntervalRecord& r);
  std::uint64_t start_ns_ = 0;         // CLOCK_MONOTONIC when the monitor was made
  std::uint64_t first_kernel_ns_ = 0;  // start of the first interval record with kernels
  cuda_activity::IdleAttribution attribution_;
  int launcher_pid_ = 0;
  std::vector<int> launcher_tids_;
  std::uint64_t last_thread_scan_ns_ = 0;
  // Thread states over the run, in the current interval and in the steady window.
  ThreadCounts threads_run_, threads_interval_, threads_steady_;
  bool steady_judged() const;
  std::uint64_t steady_start_ns() const;
  // Storage reads of the job's processes: read_bytes by pid at the last read, and the bytes
  // read between the first and the last read of the run and of the steady window.
  struct IoSpan {
    std::uint64_t from_ns = 0, to_ns = 0;
    std::uint64_t bytes = 0;
    void add(std::uint64_t now_ns, std::uint64_t delta);
    std::optional<double> mbps() const;
  };
  std::map<int, std::uint64_t> io_last_;
  bool io_seen_ = false;
  std::uint64_t last_io_read_ns_ = 0;
  IoSpan io_run_, io_steady_;
};

}  // namespace gb::watch
