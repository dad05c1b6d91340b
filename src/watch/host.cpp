// watch/host.cpp: reading, parsing, capturing and differencing the host side of an interval.
#include "watch/host.hpp"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "sys/text_parse.hpp"

namespace gb::watch {

namespace fs = std::filesystem;
namespace text = sys::text;

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kStartupRescanS = 5.0;

std::string read_or_empty(const std::string& path) {
  return text::read_text_file(path).value_or(std::string());
}

void write_file(const fs::path& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  if (!out) throw Error(ErrorKind::runtime, "cannot write " + path.string());
}

std::string step_name(int step) {
  std::string s = std::to_string(step);
  return std::string(s.size() < 6 ? 6 - s.size() : 0, '0') + s;
}

template <typename T>
std::optional<double> opt_double(const std::optional<T>& v) {
  if (!v) return std::nullopt;
  return static_cast<double>(*v);
}

CpuInterval cpu_between(const sys::CpuTimes& a, const sys::CpuTimes& b, double interval_s) {
  CpuInterval c;
  const sys::CpuUsage u = sys::cpu_usage_between(a, b, interval_s);
  if (u.total) {
    c.mean_core_pct = u.total->busy_pct;
    c.user_pct = u.total->user_pct;
    c.system_pct = u.total->system_pct;
    c.iowait_pct = u.total->iowait_pct;
    c.steal_pct = u.total->steal_pct;
  }
  if (!u.per_cpu.empty()) {
    int saturated = 0;
    for (const auto& [cpu, shares] : u.per_cpu) {
      c.core_busy_pct.emplace_back(cpu, shares.busy_pct);
      if (shares.busy_pct >= kSaturatedPct) ++saturated;
      if (!c.busiest_core_pct || shares.busy_pct > *c.busiest_core_pct) {
        c.busiest_core_pct = shares.busy_pct;
        c.busiest_core = cpu;
      }
    }
    c.saturated_cores = saturated;
  }
  c.ctx_switches_per_s = u.context_switches_per_s;
  c.run_queue = u.procs_running;
  c.blocked = u.procs_blocked;
  return c;
}

JobInterval job_between(const std::map<int, sys::ProcessSample>& a,
                        const std::map<int, sys::ProcessSample>& b, double interval_s,
                        long clk_tck, std::uint64_t page_size) {
  JobInterval j;
  j.alive = !b.empty();
  const auto usage = sys::processes_usage_between(a, b, interval_s, clk_tck, page_size);
  double cpu = 0, vol = 0, invol = 0, rss = 0;
  bool any_cpu = false, any_cs = false, any_rss = false;
  for (const sys::ProcessUsage& p : usage) {
    if (p.exited) continue;
    ++j.processes;
    j.threads += p.num_threads;
    ProcessInterval pi;
    pi.pid = p.pid;
    pi.comm = p.comm;
    pi.threads = p.num_threads;
    if (p.cpu_pct) {
      any_cpu = true;
      cpu += *p.cpu_pct;
      pi.cpu_pct = *p.cpu_pct;
      if (*p.cpu_pct >= kActiveProcessPct) ++j.active_processes;
      if (*p.cpu_pct >= kSaturatedPct) ++j.saturated_processes;
    }
    if (p.voluntary_ctxt_switches_per_s) {
      any_cs = true;
      vol += *p.voluntary_ctxt_switches_per_s;
      pi.voluntary_cs_per_s = *p.voluntary_ctxt_switches_per_s;
    }
    if (p.nonvoluntary_ctxt_switches_per_s) {
      any_cs = true;
      invol += *p.nonvoluntary_ctxt_switches_per_s;
      pi.involuntary_cs_per_s = *p.nonvoluntary_ctxt_switches_per_s;
    }
    if (p.rss_bytes) {
      any_rss = true;
      rss += static_cast<double>(*p.rss_bytes) / kGiB;
      pi.rss_gib = static_cast<double>(*p.rss_bytes) / kGiB;
    }
    j.processes_detail.push_back(std::move(pi));
  }
  if (any_cpu) j.cpu_pct = cpu;
  if (any_cs) {
    j.voluntary_cs_per_s = vol;
    j.involuntary_cs_per_s = invol;
  }
  if (any_rss) j.rss_gib = rss;
  std::stable_sort(j.processes_detail.begin(), j.processes_detail.end(),
                   [](const ProcessInterval& x, const ProcessInterval& y) {
                     return x.cpu_pct > y.cpu_pct;
                   });
  return j;
}

// The raw task stats of one process (at most sys::kMaxThreadsPerProcess), by tid.
std::map<int, std::string> read_task_stats(const std::string& proc_root, int pid) {
  std::map<int, std::string> tasks;
  const std::string task = proc_root + "/" + std::to_string(pid) + "/task/";
  for (const int tid : sys::list_threads(pid, proc_root)) {
    std::string text = read_or_empty(task + std::to_string(tid) + "/stat");
    if (!text.empty()) tasks.emplace(tid, std::move(text));  // empty: exited while we listed
  }
  return tasks;
}

std::map<int, sys::ThreadSample> parse_task_stats(const std::map<int, std::string>& tasks) {
  std::map<int, sys::ThreadSample> threads;
  for (const auto& [tid, text] : tasks)
    if (auto t = sys::parse_task_stat(text)) threads.emplace(tid, std::move(*t));
  return threads;
}

DiskInterval disk_between(const sys::DiskStats& a, const sys::DiskStats& b, double interval_s) {
  DiskInterval d;
  double read_kb = 0, write_kb = 0, reads = 0, writes = 0;
  bool any = false;
  for (const sys::DiskUsage& u : sys::disks_usage_between(a, b, interval_s)) {
    if (u.appeared || u.reset || !u.util_pct) continue;
    any = true;
    read_kb += u.read_kb_per_s.value_or(0);
    write_kb += u.write_kb_per_s.value_or(0);
    reads += u.reads_per_s.value_or(0);
    writes += u.writes_per_s.value_or(0);
    d.devices.push_back(DeviceIo{u.name, *u.util_pct, u.r_await_ms, u.w_await_ms, u.aqu_sz,
                                 u.reads_per_s.value_or(0), u.writes_per_s.value_or(0)});
    if (!d.util_pct || *u.util_pct > *d.util_pct) {
      d.busiest = u.name;
      d.util_pct = u.util_pct;
      d.r_await_ms = u.r_await_ms;
      d.queue = u.aqu_sz;
    }
  }
  if (any) {
    d.read_mbps = read_kb * 1024.0 / 1e6;
    d.write_mbps = write_kb * 1024.0 / 1e6;
    d.reads_per_s = reads;
    d.writes_per_s = writes;
  }
  return d;
}

}  // namespace

HostReader::HostReader(std::string proc_root, std::vector<int> root_pids,
                       double rescan_interval_s)
    : root_(std::move(proc_root)),
      root_pids_(std::move(root_pids)),
      rescan_interval_s_(rescan_interval_s) {}

HostFiles HostReader::read(double now_s) {
  // A job starts its workers in its first seconds: look every interval until then.
  if (!last_scan_s_ || now_s - *last_scan_s_ >= rescan_interval_s_ || tree_.empty() ||
      now_s < kStartupRescanS) {
    std::set<int> seen;
    std::vector<int> tree;
    for (const int root : root_pids_)
      for (const int pid : sys::process_tree(root, root_))
        if (seen.insert(pid).second) tree.push_back(pid);
    tree_ = std::move(tree);
    last_scan_s_ = now_s;
  }
  HostFiles f;
  // System files and the tree's files back to back, so they describe one moment.
  f.uptime = read_or_empty(root_ + "/uptime");
  f.stat = read_or_empty(root_ + "/stat");
  for (const int pid : tree_) {
    const std::string dir = root_ + "/" + std::to_string(pid);
    ProcessFiles p{read_or_empty(dir + "/stat"), read_or_empty(dir + "/status")};
    if (p.stat.empty()) continue;  // exited
    p.tasks = read_task_stats(root_, pid);
    f.processes.emplace(pid, std::move(p));
  }
  f.meminfo = read_or_empty(root_ + "/meminfo");
  f.diskstats = read_or_empty(root_ + "/diskstats");
  return f;
}

HostSnapshot parse_host_files(const HostFiles& files) {
  HostSnapshot s;
  if (!files.uptime.empty()) s.uptime_s = sys::parse_uptime_s(files.uptime);
  if (!files.stat.empty()) s.cpu = sys::parse_proc_stat(files.stat);
  if (!files.meminfo.empty()) s.mem = sys::parse_meminfo(files.meminfo);
  if (!files.diskstats.empty()) s.disks = sys::parse_diskstats(files.diskstats);
  for (const auto& [pid, p] : files.processes) {
    const auto stat = sys::parse_pid_stat(p.stat);
    if (!stat) continue;
    s.processes.emplace(pid, sys::ProcessSample{*stat, sys::parse_pid_status(p.status)});
    // A capture from before threads were read has no task files: no thread figures then.
    if (auto threads = parse_task_stats(p.tasks); !threads.empty())
      s.threads.emplace(pid, std::move(threads));
  }
  return s;
}

std::optional<ThreadInterval> busiest_thread(const HostSnapshot& earlier,
                                             const HostSnapshot& later, double interval_s,
                                             long clk_tck) {
  std::optional<ThreadInterval> best;
  for (const auto& [pid, threads] : later.threads) {
    const auto process = later.processes.find(pid);
    const auto before = earlier.threads.find(pid);
    if (process == later.processes.end() || before == earlier.threads.end()) continue;
    for (const sys::ThreadUsage& t :
         sys::threads_usage_between(before->second, threads, interval_s, clk_tck)) {
      if (!t.cpu_pct || (best && *t.cpu_pct <= best->cpu_pct)) continue;
      best = ThreadInterval{pid, t.tid, t.comm, process->second.stat.comm, *t.cpu_pct};
    }
  }
  return best;
}

HostInterval host_interval(const HostSnapshot& earlier, const HostSnapshot& later,
                           double interval_s, long clk_tck, std::uint64_t page_size) {
  if (earlier.uptime_s && later.uptime_s && *later.uptime_s > *earlier.uptime_s)
    interval_s = *later.uptime_s - *earlier.uptime_s;
  HostInterval h;
  if (earlier.cpu && later.cpu) h.cpu = cpu_between(*earlier.cpu, *later.cpu, interval_s);
  h.job = job_between(earlier.processes, later.processes, interval_s, clk_tck, page_size);
  h.job.busiest_thread = busiest_thread(earlier, later, interval_s, clk_tck);
  h.mem.total_gib = opt_double(later.mem.total_bytes);
  h.mem.available_gib = opt_double(later.mem.available_bytes);
  h.mem.page_cache_gib = opt_double(later.mem.cached_bytes);
  for (auto* v : {&h.mem.total_gib, &h.mem.available_gib, &h.mem.page_cache_gib})
    if (*v) **v /= kGiB;
  if (earlier.disks && later.disks) h.disk = disk_between(*earlier.disks, *later.disks, interval_s);
  return h;
}

void write_capture_step(const fs::path& dir, int step, const HostFiles& files) {
  const fs::path d = dir / step_name(step);
  fs::create_directories(d);
  write_file(d / "uptime", files.uptime);
  write_file(d / "stat", files.stat);
  write_file(d / "meminfo", files.meminfo);
  write_file(d / "diskstats", files.diskstats);
  for (const auto& [pid, p] : files.processes) {
    const fs::path pd = d / std::to_string(pid);
    fs::create_directories(pd);
    write_file(pd / "stat", p.stat);
    write_file(pd / "status", p.status);
    for (const auto& [tid, stat] : p.tasks) {
      const fs::path td = pd / "task" / std::to_string(tid);
      fs::create_directories(td);
      write_file(td / "stat", stat);
    }
  }
}

void write_capture_roots(const fs::path& dir, const std::vector<int>& root_pids) {
  fs::create_directories(dir);
  std::ostringstream out;
  for (const int pid : root_pids) out << pid << '\n';
  write_file(dir / "root_pids", out.str());
}

std::vector<fs::path> capture_steps(const fs::path& dir) {
  std::error_code ec;
  std::vector<fs::path> steps;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (it->is_directory() && name.size() == 6 && text::parse_number<int>(name))
      steps.push_back(it->path());
  }
  if (ec || steps.empty())
    throw Error(ErrorKind::usage, dir.string() + " is not a watch capture (no step folders)");
  std::sort(steps.begin(), steps.end());
  return steps;
}

std::vector<int> capture_roots(const fs::path& dir) {
  const auto content = text::read_text_file((dir / "root_pids").string());
  if (!content)
    throw Error(ErrorKind::usage, dir.string() + " is not a watch capture (no root_pids)");
  std::vector<int> roots;
  for (const auto field : text::split_fields(*content))
    if (const auto pid = text::parse_number<int>(field)) roots.push_back(*pid);
  return roots;
}

}  // namespace gb::watch
