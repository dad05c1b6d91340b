// sys/procfs.hpp: CPU-side samplers for `gpubase watch` (the htop / perf stat part): host CPU
// time per core from /proc/stat, memory from /proc/meminfo, and the CPU time, context switches,
// threads and RSS of a process tree from /proc/<pid>/{stat,status}, and the CPU time of each of
// its threads from /proc/<pid>/task/<tid>/stat.
//
// The house pattern: pure parsers over a file's text (tested against files captured from a real
// machine, tests/fixtures/proc/watch) and thin readers that take the /proc root, so a test can
// point them at a fixture tree. Counters are cumulative; the *_between() functions turn two
// samples into rates. Anything that may be missing (an older kernel, a process that exited)
// is a std::optional or is reported as such, never a crash.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gb::sys {

// ---- /proc/stat -------------------------------------------------------------------------

// One "cpu" line of /proc/stat, in clock ticks (USER_HZ, normally 100 per second). Guest time is
// already counted inside user/nice by the kernel, so it is not listed separately.
struct CpuJiffies {
  std::uint64_t user = 0;
  std::uint64_t nice = 0;
  std::uint64_t system = 0;
  std::uint64_t idle = 0;
  std::uint64_t iowait = 0;
  std::uint64_t irq = 0;
  std::uint64_t softirq = 0;
  std::uint64_t steal = 0;
  std::uint64_t total() const { return user + nice + system + idle + iowait + irq + softirq + steal; }
};

struct CpuTimes {
  std::optional<CpuJiffies> aggregate;        // the "cpu" line
  std::map<int, CpuJiffies> per_cpu;          // "cpuN" lines; offline CPUs are absent
  std::optional<std::uint64_t> context_switches;  // "ctxt", since boot
  std::optional<int> procs_running;           // runnable tasks right now (the run queue)
  std::optional<int> procs_blocked;           // tasks blocked on I/O right now
};

// Shares of one CPU's (or all CPUs') time over an interval, in percent of that time.
struct CpuShares {
  double user_pct = 0;    // user + nice
  double system_pct = 0;  // system + irq + softirq
  double iowait_pct = 0;
  double steal_pct = 0;
  double busy_pct = 0;    // 100 - idle - iowait
};

struct CpuUsage {
  std::optional<CpuShares> total;  // from the aggregate line
  std::map<int, CpuShares> per_cpu;  // CPUs present in both samples with ticks elapsed
  std::optional<double> context_switches_per_s;  // empty without an interval or counter
  std::optional<int> procs_running;  // of the later sample
  std::optional<int> procs_blocked;
};

CpuTimes parse_proc_stat(std::string_view proc_stat_text);
// Percentages are of the ticks elapsed on each line, so they need no interval; a line whose
// counters did not advance (or went backwards: a CPU hot-plugged off and on) is left out.
// Context switches per second need interval_s > 0.
CpuUsage cpu_usage_between(const CpuTimes& earlier, const CpuTimes& later,
                           double interval_s = 0);

// ---- /proc/meminfo, /proc/loadavg, /proc/uptime ----------------------------------------

struct MemInfo {
  std::optional<std::uint64_t> total_bytes;      // MemTotal
  std::optional<std::uint64_t> available_bytes;  // MemAvailable (kernel >= 3.14)
  std::optional<std::uint64_t> cached_bytes;     // Cached (page cache)
  std::optional<std::uint64_t> buffers_bytes;    // Buffers
  std::optional<std::uint64_t> dirty_bytes;      // Dirty (waiting to be written back)
};
MemInfo parse_meminfo(std::string_view meminfo_text);

struct LoadAverage {
  double load_1m = 0, load_5m = 0, load_15m = 0;
  int runnable_tasks = 0;  // the "6" of "6/114"
  int total_tasks = 0;
};
std::optional<LoadAverage> parse_loadavg(std::string_view loadavg_text);

// Seconds since boot: the first field of /proc/uptime, a clock that two samples can share.
std::optional<double> parse_uptime_s(std::string_view uptime_text);

// ---- /proc/<pid>/stat and /proc/<pid>/status -------------------------------------------

struct ProcStat {
  int pid = 0;
  std::string comm;    // may hold spaces and parentheses: "a) (b"
  char state = '?';    // R S D Z T t X I ...
  int ppid = 0;
  std::uint64_t utime_ticks = 0;
  std::uint64_t stime_ticks = 0;
  int num_threads = 0;
  std::uint64_t starttime_ticks = 0;  // since boot; tells a reused pid from the same process
  std::int64_t rss_pages = 0;
};
// Empty when the text is not a stat line (the comm is found by the last ')').
std::optional<ProcStat> parse_pid_stat(std::string_view pid_stat_text);

struct ProcStatus {
  std::optional<std::uint64_t> voluntary_ctxt_switches;
  std::optional<std::uint64_t> nonvoluntary_ctxt_switches;
  std::optional<std::uint64_t> vm_rss_bytes;  // absent for kernel threads
};
ProcStatus parse_pid_status(std::string_view pid_status_text);

// One process at one moment.
struct ProcessSample {
  ProcStat stat;
  ProcStatus status;
};

// A process over an interval. A process seen only in the earlier sample (or whose pid was
// reused: starttime changed) is reported with exited = true and no rates.
struct ProcessUsage {
  int pid = 0;
  std::string comm;
  bool exited = false;
  bool started = false;  // only in the later sample: rates are over the part it lived, ~0
  std::optional<double> cpu_pct;  // 100 = one core busy
  std::optional<double> voluntary_ctxt_switches_per_s;
  std::optional<double> nonvoluntary_ctxt_switches_per_s;
  int num_threads = 0;
  std::optional<std::uint64_t> rss_bytes;  // VmRSS, or rss pages * page size
};

// Rates need interval_s > 0 and clk_tck > 0 (sysconf(_SC_CLK_TCK)); otherwise they stay empty.
// page_size_bytes converts stat's rss when status has no VmRSS.
ProcessUsage process_usage_between(const ProcessSample& earlier, const ProcessSample& later,
                                   double interval_s, long clk_tck,
                                   std::uint64_t page_size_bytes = 4096);
// Every process of two samples, keyed by pid: those in both, those that exited (earlier
// only), and those that started (later only), in pid order.
std::vector<ProcessUsage> processes_usage_between(const std::map<int, ProcessSample>& earlier,
                                                  const std::map<int, ProcessSample>& later,
                                                  double interval_s, long clk_tck,
                                                  std::uint64_t page_size_bytes = 4096);

// ---- /proc/<pid>/task/<tid>/stat --------------------------------------------------------

// One thread at one moment. A task's stat file has /proc/<pid>/stat's layout, but its comm,
// utime, stime and starttime are the thread's own (its "pid" field is the tid).
struct ThreadSample {
  int tid = 0;
  std::string comm;                   // the thread's name, e.g. "pt_main_thread", "gb-load 3"
  std::uint64_t cpu_ticks = 0;        // utime + stime
  std::uint64_t starttime_ticks = 0;  // since boot; tells a reused tid from the same thread
};
// Empty when the text is not a stat line (parse_pid_stat's rules: comm ends at the last ')').
std::optional<ThreadSample> parse_task_stat(std::string_view task_stat_text);

// A thread over an interval: those of the later sample, in tid order. A thread not in the
// earlier sample, or whose tid was reused (starttime changed), has no baseline: started = true
// and no cpu_pct. A thread that exited is left out: its time has no live thread to name.
struct ThreadUsage {
  int tid = 0;
  std::string comm;
  bool started = false;
  std::optional<double> cpu_pct;  // 100 = one core; needs interval_s > 0 and clk_tck > 0
};
std::vector<ThreadUsage> threads_usage_between(const std::map<int, ThreadSample>& earlier,
                                               const std::map<int, ThreadSample>& later,
                                               double interval_s, long clk_tck);

// Threads read per process at most: one stat file each, every interval, so a job with tens of
// thousands of threads must not make a sample slow. Beyond it the rest go unread (readdir order).
inline constexpr std::size_t kMaxThreadsPerProcess = 4096;

// ---- thin readers over a /proc tree -----------------------------------------------------

std::optional<CpuTimes> read_proc_stat(const std::string& proc_root = "/proc");
std::optional<MemInfo> read_meminfo(const std::string& proc_root = "/proc");
// root_pid and all its descendants (via the ppid field of every <proc_root>/<pid>/stat), root
// first, then in pid order; empty when root_pid does not exist.
std::vector<int> process_tree(int root_pid, const std::string& proc_root = "/proc");
// stat and status of one pid; empty when it is gone (a race with exit is normal).
std::optional<ProcessSample> read_process(int pid, const std::string& proc_root = "/proc");
// read_process for each pid; the pids that vanished are absent from the map.
std::map<int, ProcessSample> read_processes(const std::vector<int>& pids,
                                            const std::string& proc_root = "/proc");
// The tids of <proc_root>/<pid>/task, ascending, at most max_threads; empty when it is gone.
std::vector<int> list_threads(int pid, const std::string& proc_root = "/proc",
                              std::size_t max_threads = kMaxThreadsPerProcess);
// Each listed thread's task stat, by tid; threads that exited meanwhile are absent.
std::map<int, ThreadSample> read_threads(int pid, const std::string& proc_root = "/proc",
                                         std::size_t max_threads = kMaxThreadsPerProcess);

}  // namespace gb::sys
