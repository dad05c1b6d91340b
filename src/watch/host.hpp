// watch/host.hpp: the host side of one sampling interval. HostReader reads the /proc files the
// interval needs as raw text (HostFiles) — so a run can be captured file for file and replayed
// in tests — and host_interval() turns two parsed snapshots into the CPU, job, memory and disk
// figures of a WatchSample.
//
// The /proc root is a parameter: "/proc" live, a capture directory in tests. The clock is the
// snapshot's own /proc/uptime, so rates come out right for replayed captures too.
#pragma once
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sys/diskstats.hpp"
#include "sys/procfs.hpp"
#include "watch/sample.hpp"

namespace gb::watch {

struct ProcessFiles {
  std::string stat;
  std::string status;
  std::map<int, std::string> tasks;  // tid -> task/<tid>/stat; threads that exited are absent
};

// The raw text of what one interval reads. Empty strings: the file could not be read.
struct HostFiles {
  std::string uptime;
  std::string stat;
  std::string meminfo;
  std::string diskstats;
  std::map<int, ProcessFiles> processes;  // the job's tree; pids that exited are absent
};

// Reads HostFiles from a /proc tree. The job's process tree is found from its root pids by a
// walk over every process (ppid links): at every read during the first 5 s (when a job starts
// its workers), then at most once per rescan interval (2 s), so new workers show up within that
// time and the sampler does not pay for a full /proc scan each tick. Each process's threads are
// read every time (at most sys::kMaxThreadsPerProcess of them), to name its busiest thread.
class HostReader {
 public:
  HostReader(std::string proc_root, std::vector<int> root_pids, double rescan_interval_s = 2.0);
  HostFiles read(double now_s);
  const std::vector<int>& tree() const { return tree_; }

 private:
  std::string root_;
  std::vector<int> root_pids_;
  double rescan_interval_s_;
  std::optional<double> last_scan_s_;
  std::vector<int> tree_;
};

struct HostSnapshot {
  std::optional<double> uptime_s;
  std::optional<sys::CpuTimes> cpu;
  sys::MemInfo mem;
  std::optional<sys::DiskStats> disks;
  std::map<int, sys::ProcessSample> processes;
  std::map<int, std::map<int, sys::ThreadSample>> threads;  // by pid, then tid
};

HostSnapshot parse_host_files(const HostFiles& files);

struct HostInterval {
  CpuInterval cpu;
  JobInterval job;
  MemoryInterval mem;
  DiskInterval disk;
};

// The interval between two snapshots; interval_s is used when the snapshots carry no uptime.
// clk_tck: sysconf(_SC_CLK_TCK); page_size: for stat's rss when status has no VmRSS.
HostInterval host_interval(const HostSnapshot& earlier, const HostSnapshot& later,
                           double interval_s, long clk_tck, std::uint64_t page_size = 4096);

// The job's thread with the most CPU time between two snapshots, over the processes of the later
// one; ties go to the lower pid, then tid. Empty when no thread could be differenced.
std::optional<ThreadInterval> busiest_thread(const HostSnapshot& earlier,
                                             const HostSnapshot& later, double interval_s,
                                             long clk_tck);

// A process uses "a core" at >= 90 % and is "active" at >= 10 %; a core is saturated at >= 90 %.
inline constexpr double kSaturatedPct = 90.0;
inline constexpr double kActiveProcessPct = 10.0;

// Capture: HostFiles written in /proc's own layout under dir/NNNNNN/ (uptime, stat, meminfo,
// diskstats, <pid>/stat, <pid>/status, <pid>/task/<tid>/stat), with the root pids in
// dir/root_pids, so a capture step reads back through HostReader(dir/NNNNNN, roots).
void write_capture_step(const std::filesystem::path& dir, int step, const HostFiles& files);
void write_capture_roots(const std::filesystem::path& dir, const std::vector<int>& root_pids);
// The step directories of a capture in order, and its root pids; throws gb::Error (usage) when
// dir is not a capture.
std::vector<std::filesystem::path> capture_steps(const std::filesystem::path& dir);
std::vector<int> capture_roots(const std::filesystem::path& dir);

}  // namespace gb::watch
