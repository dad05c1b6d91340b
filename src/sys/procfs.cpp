// sys/procfs.cpp: parsers and readers for /proc/stat, /proc/meminfo, /proc/loadavg,
// /proc/uptime, /proc/<pid>/{stat,status} and /proc/<pid>/task/<tid>/stat; see procfs.hpp.
// Field layouts are proc(5)'s.
#include "sys/text_parse.hpp"
#include "sys/procfs.hpp"

#include <dirent.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <utility>

namespace gb::sys {

namespace {

using namespace text;  // is_space, trim, for_each_line, split_fields, parse_number

// "1234 kB" -> 1234 * 1024 (the kernel's kB is KiB).
std::optional<std::uint64_t> parse_kib_as_bytes(std::string_view value) {
  value = trim(value);
  constexpr std::string_view unit = "kB";
  if (value.size() < unit.size() || value.substr(value.size() - unit.size()) != unit) {
    return std::nullopt;
  }
  value.remove_suffix(unit.size());
  const auto kib = parse_number<std::uint64_t>(value);
  if (!kib) return std::nullopt;
  return *kib * 1024;
}

// Calls fn(key, value) for each "Key:   value" line.
template <typename Fn>
void for_each_key_value(std::string_view text, Fn fn) {
  for_each_line(text, [&](std::string_view line) {
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) return;
    fn(trim(line.substr(0, colon)), trim(line.substr(colon + 1)));
  });
}

// Counter delta; empty when the counter went backwards (reset, wrap, hot-plug).
std::optional<std::uint64_t> delta(std::uint64_t earlier, std::uint64_t later) {
  if (later < earlier) return std::nullopt;
  return later - earlier;
}

std::optional<CpuShares> shares_between(const CpuJiffies& a, const CpuJiffies& b) {
  const auto user = delta(a.user + a.nice, b.user + b.nice);
  const auto system =
      delta(a.system + a.irq + a.softirq, b.system + b.irq + b.softirq);
  const auto idle = delta(a.idle, b.idle);
  const auto iowait = delta(a.iowait, b.iowait);
  const auto steal = delta(a.steal, b.steal);
  const auto total = delta(a.total(), b.total());
  if (!user || !system || !idle || !iowait || !steal || !total || *total == 0) {
    return std::nullopt;
  }
  const double scale = 100.0 / static_cast<double>(*total);
  CpuShares s;
  s.user_pct = static_cast<double>(*user) * scale;
  s.system_pct = static_cast<double>(*system) * scale;
  s.iowait_pct = static_cast<double>(*iowait) * scale;
  s.steal_pct = static_cast<double>(*steal) * scale;
  s.busy_pct = 100.0 - static_cast<double>(*idle + *iowait) * scale;
  return s;
}

}  // namespace

// ---- /proc/stat -------------------------------------------------------------------------

CpuTimes parse_proc_stat(std::string_view proc_stat_text) {
  CpuTimes times;
  for_each_line(proc_stat_text, [&](std::string_view line) {
    const std::vector<std::string_view> f = split_fields(line);
    if (f.size() < 2) return;
    const std::string_view key = f[0];
    if (key.substr(0, 3) == "cpu") {
      // user nice system idle iowait irq softirq steal [guest guest_nice]; kernels before
      // 2.6.11 lack steal, before 2.6 lack iowait..softirq: missing fields read as 0.
      if (f.size() < 5) return;
      std::uint64_t v[8] = {};
      for (std::size_t i = 0; i < 8 && i + 1 < f.size(); ++i) {
        const auto n = parse_number<std::uint64_t>(f[i + 1]);
        if (!n) return;
        v[i] = *n;
      }
      const CpuJiffies j{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]};
      if (key == "cpu") {
        times.aggregate = j;
      } else if (const auto cpu = parse_number<int>(key.substr(3))) {
        times.per_cpu[*cpu] = j;
      }
    } else if (key == "ctxt") {
      times.context_switches = parse_number<std::uint64_t>(f[1]);
    } else if (key == "procs_running") {
      times.procs_running = parse_number<int>(f[1]);
    } else if (key == "procs_blocked") {
      times.procs_blocked = parse_number<int>(f[1]);
    }
  });
  return times;
}

CpuUsage cpu_usage_between(const CpuTimes& earlier, const CpuTimes& later, double interval_s) {
  CpuUsage usage;
  if (earlier.aggregate && later.aggregate) {
    usage.total = shares_between(*earlier.aggregate, *later.aggregate);
  }
  for (const auto& [cpu, b] : later.per_cpu) {
    const auto a = earlier.per_cpu.find(cpu);
    if (a == earlier.per_cpu.end()) continue;
    if (const auto s = shares_between(a->second, b)) usage.per_cpu[cpu] = *s;
  }
  if (interval_s > 0 && earlier.context_switches && later.context_switches) {
    if (const auto d = delta(*earlier.context_switches, *later.context_switches)) {
      usage.context_switches_per_s = static_cast<double>(*d) / interval_s;
    }
  }
  usage.procs_running = later.procs_running;
  usage.procs_blocked = later.procs_blocked;
  return usage;
}

// ---- /proc/meminfo, /proc/loadavg, /proc/uptime ----------------------------------------

MemInfo parse_meminfo(std::string_view meminfo_text) {
  MemInfo mem;
  for_each_key_value(meminfo_text, [&](std::string_view key, std::string_view value) {
    std::optional<std::uint64_t>* field = nullptr;
    if (key == "MemTotal") field = &mem.total_bytes;
    else if (key == "MemAvailable") field = &mem.available_bytes;
    else if (key == "Cached") field = &mem.cached_bytes;
    else if (key == "Buffers") field = &mem.buffers_bytes;
    else if (key == "Dirty") field = &mem.dirty_bytes;
    if (field && !*field) *field = parse_kib_as_bytes(value);
  });
  return mem;
}

std::optional<LoadAverage> parse_loadavg(std::string_view loadavg_text) {
  // "2.65 0.94 1.05 6/114 3848"
  const std::vector<std::string_view> f = split_fields(loadavg_text);
  if (f.size() < 4) return std::nullopt;
  const std::size_t slash = f[3].find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  const auto l1 = parse_number<double>(f[0]);
  const auto l5 = parse_number<double>(f[1]);
  const auto l15 = parse_number<double>(f[2]);
  const auto runnable = parse_number<int>(f[3].substr(0, slash));
  const auto tasks = parse_number<int>(f[3].substr(slash + 1));
  if (!l1 || !l5 || !l15 || !runnable || !tasks) return std::nullopt;
  return LoadAverage{*l1, *l5, *l15, *runnable, *tasks};
}

std::optional<double> parse_uptime_s(std::string_view uptime_text) {
  const std::vector<std::string_view> f = split_fields(uptime_text);
  if (f.empty()) return std::nullopt;
  return parse_number<double>(f[0]);
}

// ---- /proc/<pid>/stat and /proc/<pid>/status -------------------------------------------

std::optional<ProcStat> parse_pid_stat(std::string_view pid_stat_text) {
  // "pid (comm) state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt
  //  utime stime cutime cstime priority nice num_threads itrealvalue starttime vsize rss ..."
  // comm is any 15 bytes, ')' and ' ' included, so it ends at the LAST ')'.
  const std::size_t open = pid_stat_text.find('(');
  const std::size_t close = pid_stat_text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return std::nullopt;
  }
  const auto pid = parse_number<int>(pid_stat_text.substr(0, open));
  const std::vector<std::string_view> f = split_fields(pid_stat_text.substr(close + 1));
  // f[0] is field 3 (state); field N is f[N - 3]. rss is field 24.
  if (!pid || f.size() < 22 || f[0].size() != 1) return std::nullopt;
  ProcStat s;
  s.pid = *pid;
  s.comm = std::string(pid_stat_text.substr(open + 1, close - open - 1));
  s.state = f[0][0];
  const auto ppid = parse_number<int>(f[1]);            // field 4
  const auto utime = parse_number<std::uint64_t>(f[11]);  // field 14
  const auto stime = parse_number<std::uint64_t>(f[12]);  // field 15
  const auto threads = parse_number<int>(f[17]);          // field 20
  const auto start = parse_number<std::uint64_t>(f[19]);  // field 22
  const auto rss = parse_number<std::int64_t>(f[21]);     // field 24
  if (!ppid || !utime || !stime || !threads || !start || !rss) return std::nullopt;
  s.ppid = *ppid;
  s.utime_ticks = *utime;
  s.stime_ticks = *stime;
  s.num_threads = *threads;
  s.starttime_ticks = *start;
  s.rss_pages = *rss;
  return s;
}

ProcStatus parse_pid_status(std::string_view pid_status_text) {
  ProcStatus status;
  for_each_key_value(pid_status_text, [&](std::string_view key, std::string_view value) {
    if (key == "voluntary_ctxt_switches") {
      status.voluntary_ctxt_switches = parse_number<std::uint64_t>(value);
    } else if (key == "nonvoluntary_ctxt_switches") {
      status.nonvoluntary_ctxt_switches = parse_number<std::uint64_t>(value);
    } else if (key == "VmRSS") {
      status.vm_rss_bytes = parse_kib_as_bytes(value);
    }
  });
  return status;
}

namespace {

std::optional<std::uint64_t> rss_bytes_of(const ProcessSample& s, std::uint64_t page_size_bytes) {
  if (s.status.vm_rss_bytes) return s.status.vm_rss_bytes;
  if (s.stat.rss_pages < 0) return std::nullopt;
  return static_cast<std::uint64_t>(s.stat.rss_pages) * page_size_bytes;
}

std::optional<double> rate(std::optional<std::uint64_t> a, std::optional<std::uint64_t> b,
                           double interval_s) {
  if (!a || !b || interval_s <= 0) return std::nullopt;
  const auto d = delta(*a, *b);
  if (!d) return std::nullopt;
  return static_cast<double>(*d) / interval_s;
}

ProcessUsage exited_usage(const ProcessSample& earlier) {
  ProcessUsage u;
  u.pid = earlier.stat.pid;
  u.comm = earlier.stat.comm;
  u.exited = true;
  return u;
}

}  // namespace

ProcessUsage process_usage_between(const ProcessSample& earlier, const ProcessSample& later,
                                   double interval_s, long clk_tck,
                                   std::uint64_t page_size_bytes) {
  // A different pid or start time is a different process: the earlier one exited.
  if (earlier.stat.pid != later.stat.pid ||
      earlier.stat.starttime_ticks != later.stat.starttime_ticks) {
    return exited_usage(earlier);
  }
  ProcessUsage u;
  u.pid = later.stat.pid;
  u.comm = later.stat.comm;
  u.num_threads = later.stat.num_threads;
  u.rss_bytes = rss_bytes_of(later, page_size_bytes);
  if (clk_tck > 0) {
    // cpu% = (utime + stime) delta in ticks / clk_tck / interval * 100; 100 = one core.
    const auto ticks = rate(earlier.stat.utime_ticks + earlier.stat.stime_ticks,
                            later.stat.utime_ticks + later.stat.stime_ticks, interval_s);
    if (ticks) u.cpu_pct = *ticks / static_cast<double>(clk_tck) * 100.0;
  }
  u.voluntary_ctxt_switches_per_s = rate(earlier.status.voluntary_ctxt_switches,
                                         later.status.voluntary_ctxt_switches, interval_s);
  u.nonvoluntary_ctxt_switches_per_s = rate(earlier.status.nonvoluntary_ctxt_switches,
                                            later.status.nonvoluntary_ctxt_switches, interval_s);
  return u;
}

std::vector<ProcessUsage> processes_usage_between(const std::map<int, ProcessSample>& earlier,
                                                  const std::map<int, ProcessSample>& later,
                                                  double interval_s, long clk_tck,
                                                  std::uint64_t page_size_bytes) {
  std::vector<ProcessUsage> out;
  std::set<int> pids;
  for (const auto& [pid, s] : earlier) pids.insert(pid);
  for (const auto& [pid, s] : later) pids.insert(pid);
  for (const int pid : pids) {
    const auto a = earlier.find(pid);
    const auto b = later.find(pid);
    if (b == later.end()) {
      out.push_back(exited_usage(a->second));
    } else if (a == earlier.end()) {
      ProcessUsage u;  // new since the earlier sample: no baseline for rates yet
      u.pid = pid;
      u.comm = b->second.stat.comm;
      u.started = true;
      u.num_threads = b->second.stat.num_threads;
      u.rss_bytes = rss_bytes_of(b->second, page_size_bytes);
      out.push_back(std::move(u));
    } else {
      out.push_back(
          process_usage_between(a->second, b->second, interval_s, clk_tck, page_size_bytes));
    }
  }
  return out;
}

// ---- /proc/<pid>/task/<tid>/stat --------------------------------------------------------

std::optional<ThreadSample> parse_task_stat(std::string_view task_stat_text) {
  const auto stat = parse_pid_stat(task_stat_text);
  if (!stat) return std::nullopt;
  return ThreadSample{stat->pid, stat->comm, stat->utime_ticks + stat->stime_ticks,
                      stat->starttime_ticks};
}

std::vector<ThreadUsage> threads_usage_between(const std::map<int, ThreadSample>& earlier,
                                               const std::map<int, ThreadSample>& later,
                                               double interval_s, long clk_tck) {
  std::vector<ThreadUsage> out;
  out.reserve(later.size());
  for (const auto& [tid, b] : later) {
    ThreadUsage u;
    u.tid = tid;
    u.comm = b.comm;
    const auto a = earlier.find(tid);
    // The same tid with another start time is a new thread: differencing would mix two.
    u.started = a == earlier.end() || a->second.starttime_ticks != b.starttime_ticks;
    if (!u.started && clk_tck > 0) {
      if (const auto ticks = rate(a->second.cpu_ticks, b.cpu_ticks, interval_s))
        u.cpu_pct = *ticks / static_cast<double>(clk_tck) * 100.0;
    }
    out.push_back(std::move(u));
  }
  return out;
}

// ---- thin readers -----------------------------------------------------------------------

std::optional<CpuTimes> read_proc_stat(const std::string& proc_root) {
  const auto text = read_text_file(proc_root + "/stat");
  if (!text) return std::nullopt;
  return parse_proc_stat(*text);
}

std::optional<MemInfo> read_meminfo(const std::string& proc_root) {
  const auto text = read_text_file(proc_root + "/meminfo");
  if (!text) return std::nullopt;
  return parse_meminfo(*text);
}

std::vector<int> process_tree(int root_pid, const std::string& proc_root) {
  std::map<int, std::vector<int>> children;  // ppid -> pids, each list in pid order
  std::set<int> present;
  // opendir/readdir: this walk runs about once a second under `gpubase watch`, over every
  // process of the machine.
  DIR* dir = opendir(proc_root.c_str());
  if (!dir) return {};
  std::vector<std::pair<int, int>> pid_ppid;
  std::string path;
  while (const dirent* entry = readdir(dir)) {
    const auto pid = parse_number<int>(entry->d_name);
    if (!pid) continue;
    path.assign(proc_root).append("/").append(entry->d_name).append("/stat");
    const auto text = read_text_file(path);    if (!text) continue;  // exited while we listed
    const auto stat = parse_pid_stat(*text);
    if (!stat) continue;
    present.insert(*pid);
    pid_ppid.emplace_back(*pid, stat->ppid);
  }
  closedir(dir);
  if (!present.count(root_pid)) return {};
  std::sort(pid_ppid.begin(), pid_ppid.end());
  for (const auto& [pid, ppid] : pid_ppid) children[ppid].push_back(pid);

  std::vector<int> tree{root_pid};
  std::set<int> seen{root_pid};
  for (std::size_t i = 0; i < tree.size(); ++i) {  // breadth-first
    const auto c = children.find(tree[i]);
    if (c == children.end()) continue;
    for (const int child : c->second) {
      if (seen.insert(child).second) tree.push_back(child);
    }
  }
  std::sort(tree.begin() + 1, tree.end());
  return tree;
}

std::optional<ProcessSample> read_process(int pid, const std::string& proc_root) {
  const std::string dir = proc_root + "/" + std::to_string(pid);
  const auto stat_text = read_text_file(dir + "/stat");
  if (!stat_text) return std::nullopt;
  const auto stat = parse_pid_stat(*stat_text);
  if (!stat) return std::nullopt;
  ProcessSample sample;
  sample.stat = *stat;
  if (const auto status_text = read_text_file(dir + "/status")) {
    sample.status = parse_pid_status(*status_text);
  }
  return sample;
}

std::map<int, ProcessSample> read_processes(const std::vector<int>& pids,
                                            const std::string& proc_root) {
  std::map<int, ProcessSample> samples;
  for (const int pid : pids) {
    if (auto s = read_process(pid, proc_root)) samples.emplace(pid, std::move(*s));
  }
  return samples;
}

std::vector<int> list_threads(int pid, const std::string& proc_root, std::size_t max_threads) {
  const std::string task = proc_root + "/" + std::to_string(pid) + "/task";
  DIR* dir = opendir(task.c_str());
  if (!dir) return {};
  std::vector<int> tids;
  while (const dirent* entry = readdir(dir)) {
    if (tids.size() >= max_threads) break;
    if (const auto tid = parse_number<int>(entry->d_name)) tids.push_back(*tid);
  }
  closedir(dir);
  std::sort(tids.begin(), tids.end());
  return tids;
}

std::map<int, ThreadSample> read_threads(int pid, const std::string& proc_root,
                                         std::size_t max_threads) {
  std::map<int, ThreadSample> threads;
  const std::string task = proc_root + "/" + std::to_string(pid) + "/task/";
  for (const int tid : list_threads(pid, proc_root, max_threads)) {
    const auto text = read_text_file(task + std::to_string(tid) + "/stat");
    if (!text) continue;  // exited while we listed
    if (auto t = parse_task_stat(*text)) threads.emplace(tid, std::move(*t));
  }
  return threads;
}

}  // namespace gb::sys
