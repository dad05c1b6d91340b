// watch/cuda_monitor.cpp: rings + thread-state ticks -> CUDA figures and idle causes.
#include "watch/cuda_monitor.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "core/format.hpp"
#include "core/thread_name.hpp"
#include "watch/steady_window.hpp"

namespace gb::watch {

namespace ca = cuda_activity;
namespace fs = std::filesystem;

namespace {

constexpr std::uint64_t kRingReadNs = 250'000'000;     // rings are read 4 times a second
constexpr std::uint64_t kThreadScanNs = 1'000'000'000;  // launcher threads looked for again
constexpr std::uint64_t kIoReadNs = 1'000'000'000;   // /proc/<pid>/io read once a second
constexpr int kMaxTickHz = 100;
constexpr int kReadsPerSecond = 2000;  // /proc stat reads the ticker allows itself (~1 % CPU)

std::uint64_t mono_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ull +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

bool is_file(const std::string& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// The state letter and comm of a /proc .../stat file; state 0 when it cannot be read.
struct StatState {
  char state = 0;
  std::string comm;
};

StatState read_stat_state(const std::string& path) {
  StatState s;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return s;
  char buf[512];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return s;
  buf[n] = '\0';
  const char* open = std::strchr(buf, '(');
  const char* close = std::strrchr(buf, ')');
  if (!open || !close || close < open || close[1] != ' ') return s;
  s.comm.assign(open + 1, close);
  s.state = close[2];
  return s;
}

std::string read_comm(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  char buf[64];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return "";
  std::string s(buf, static_cast<std::size_t>(n));
  while (!s.empty() && (s.back() == '\n' || s.back() == '\0')) s.pop_back();
  return s;
}

// read_bytes of /proc/<pid>/io: what the process made the storage layer fetch.
std::optional<std::uint64_t> read_io_bytes(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  char buf[512];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return std::nullopt;
  buf[n] = '\0';
  const char* p = std::strstr(buf, "\nread_bytes:");
  if (!p) return std::nullopt;
  return std::strtoull(p + 12, nullptr, 10);
}

std::string status_name(ca::StatusCode c) {
  switch (c) {
    case ca::StatusCode::started:
      return "collecting";
    case ca::StatusCode::skipped:
      return "skipped";
    case ca::StatusCode::failed:
      return "stopped";
    case ca::StatusCode::finished:
      return "finished";
  }
  return "status";
}

}  // namespace

std::string find_injection_library() {
  if (const char* env = std::getenv("GPUBASE_CUDA_INJECT_LIB"); env && *env)
    return is_file(env) ? env : "";
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  for (const fs::path& p : {exe.parent_path() / "libgpubase_cuda_inject.so",
                            exe.parent_path() / ".." / "lib" / "gpubase" / "libgpubase_cuda_inject.so"})
    if (is_file(p.string())) return fs::weakly_canonical(p, ec).string();
  return "";
}

std::string find_cupti() {
  if (const char* env = std::getenv("GPUBASE_CUPTI_PATH"); env && *env)
    return is_file(env) ? env : "";
  std::vector<std::string> roots;
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* v = std::getenv(var); v && *v) roots.emplace_back(v);
  roots.emplace_back("/usr/local/cuda");
  std::vector<std::string> candidates;
  for (const std::string& r : roots) {
    candidates.push_back(r + "/lib64/libcupti.so.13");
    candidates.push_back(r + "/extras/CUPTI/lib64/libcupti.so.13");
  }
  candidates.emplace_back("/usr/lib/x86_64-linux-gnu/libcupti.so.13");
  for (const std::string& c : candidates)
    if (is_file(c)) return c;
  return "";
}

CudaActivitySetup prepare_cuda_activity(bool want, bool command_given, double interval_s) {
  CudaActivitySetup s;
  if (!want) {
    s.reason = "turned off (--no-cuda-activity)";
    return s;
  }
  if (!command_given) {
    s.reason = "only for a command watch starts: CUDA loads the library when the job starts, "
               "an attached process (--pid) is too late";
    return s;
  }
  if (const char* other = std::getenv("CUDA_INJECTION64_PATH"); other && *other) {
    s.reason = std::string("the job already has a CUDA injection library (CUDA_INJECTION64_PATH=") +
               other + ")";
    return s;
  }
  s.library = find_injection_library();
  if (s.library.empty()) {
    s.reason = "libgpubase_cuda_inject.so is not installed next to gpubase (built without "
               "CUDA or without CUPTI's headers)";
    return s;
  }
  s.cupti = find_cupti();  // optional: the job may bring its own (PyTorch does)
  std::error_code ec;
  std::string base = fs::is_directory("/dev/shm", ec) && ::access("/dev/shm", W_OK) == 0
                         ? "/dev/shm"
                         : fs::temp_directory_path(ec).string();
  std::string tmpl = base + "/gpubase-cuda-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (!::mkdtemp(buf.data())) {
    s.reason = "cannot make a folder for the job's rings in " + base + ": " + std::strerror(errno);
    return s;
  }
  s.ring_dir = buf.data();
  const long interval_ms = std::clamp(static_cast<long>(interval_s * 1000.0 + 0.5), 100L, 1000L);
  s.env = {{"CUDA_INJECTION64_PATH", s.library},
           {"GPUBASE_CUDA_RING_DIR", s.ring_dir},
           {"GPUBASE_CUDA_INTERVAL_MS", std::to_string(interval_ms)}};
  if (!s.cupti.empty()) s.env.emplace_back("GPUBASE_CUPTI_PATH", s.cupti);
  // The job's NVTX ranges reach CUPTI through the same library (a tool the user named wins).
  if (const char* nvtx = std::getenv("NVTX_INJECTION64_PATH"); !nvtx || !*nvtx)
    s.env.emplace_back("NVTX_INJECTION64_PATH", s.library);
  s.enabled = true;
  return s;
}

CudaMonitor::CudaMonitor(CudaActivitySetup setup, std::string proc_root)
    : setup_(std::move(setup)), proc_root_(std::move(proc_root)), start_ns_(mono_ns()) {
  attribution_.set_max_idle_tail(static_cast<std::uint64_t>(kMaxIdleTailS * 1e9));
}

std::uint64_t CudaMonitor::steady_start_ns() const {
  return first_kernel_ns_ ? first_kernel_ns_ + static_cast<std::uint64_t>(kWarmupS * 1e9)
                          : UINT64_MAX;
}

void CudaMonitor::IoSpan::add(std::uint64_t now_ns, std::uint64_t delta) {
  // The first read only sets where the span starts; bytes count from the next one on.
  if (from_ns == 0)
    from_ns = now_ns;
  else
    bytes += delta;
  to_ns = now_ns;
}

std::optional<double> CudaMonitor::IoSpan::mbps() const {
  if (to_ns <= from_ns) return std::nullopt;
  return static_cast<double>(bytes) / 1e6 / (static_cast<double>(to_ns - from_ns) / 1e9);
}

void CudaMonitor::read_io(std::uint64_t now_ns, bool steady) {
  std::uint64_t delta = 0;
  bool any = false;
  std::map<int, std::uint64_t> now;
  for (const int pid : tree_) {
    const auto bytes = read_io_bytes(proc_root_ + "/" + std::to_string(pid) + "/io");
    if (!bytes) continue;
    any = true;
    now[pid] = *bytes;
    const auto it = io_last_.find(pid);
    // A process that appeared since the first read counts its reads from its start.
    const std::uint64_t before = it != io_last_.end() ? it->second : io_seen_ ? 0 : *bytes;
    if (*bytes > before) delta += *bytes - before;
  }
  if (!any) return;
  io_last_ = std::move(now);
  io_seen_ = true;
  io_run_.add(now_ns, delta);
  if (steady) io_steady_.add(now_ns, delta);
}

void CudaMonitor::add_steady(const ca::IntervalRecord& r) {
  steady_tail_.add(r);
  if (const std::uint64_t busy_to = ca::last_busy_ns(r)) {
    steady_busy_end_ns_ = std::max(steady_busy_end_ns_, busy_to);
    steady_idle_from_ns_ = 0;
  } else if (!steady_idle_from_ns_) {
    steady_idle_from_ns_ = steady_busy_end_ns_ ? steady_busy_end_ns_ : r.t0_ns;
  }
  // GPU work counts the idle stretch before it; an idle stretch past the limit counts from
  // then on, to its end.
  constexpr auto kMaxIdleNs = static_cast<std::uint64_t>(kMaxIdleTailS * 1e9);
  if (!steady_idle_from_ns_ || steady_tail_.end_ns() > steady_idle_from_ns_ + kMaxIdleNs) {
    steady_.merge(steady_tail_);
    steady_tail_ = CudaTotals();
    if (!steady_idle_from_ns_) steady_.end_at(steady_busy_end_ns_);
  }
}

bool CudaMonitor::steady_judged() const {
  return first_kernel_ns_ && static_cast<double>(steady_.wall_ns()) >= kMinSteadyS * 1e9;
}

CudaMonitor::~CudaMonitor() {
  finish();
  if (!setup_.ring_dir.empty()) {
    std::error_code ec;
    fs::remove_all(setup_.ring_dir, ec);
  }
}

void CudaMonitor::start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] {
    name_this_thread("gb-cuda-watch");
    run();
  });
}

void CudaMonitor::set_tree(const std::vector<int>& pids) {
  std::lock_guard<std::mutex> lock(mu_);
  tree_ = pids;
}

void CudaMonitor::run() {
  std::uint64_t last_ring_read = 0;
  for (;;) {
    std::size_t processes = 1;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
      processes = std::max<std::size_t>(tree_.size() + launcher_tids_.size(), 1);
    }
    const std::uint64_t now = mono_ns();
    tick(now);
    if (setup_.enabled && now - last_ring_read >= kRingReadNs) {
      read_rings();
      last_ring_read = now;
    }
    const double hz = std::min<double>(kMaxTickHz, static_cast<double>(kReadsPerSecond) /
                                                       static_cast<double>(processes));
    std::this_thread::sleep_for(std::chrono::duration<double>(1.0 / std::max(hz, 5.0)));
  }
}

void CudaMonitor::find_launcher_threads(int pid) {
  launcher_tids_.clear();
  launcher_tids_.push_back(pid);
  int ring_tid = 0;
  for (const auto& [path, ring] : rings_)
    if (static_cast<int>(ring.reader.producer_pid()) == pid)
      ring_tid = static_cast<int>(ring.reader.launcher_tid());
  if (ring_tid && ring_tid != pid) launcher_tids_.push_back(ring_tid);
  const std::string task = proc_root_ + "/" + std::to_string(pid) + "/task";
  DIR* d = ::opendir(task.c_str());
  if (!d) return;
  while (const dirent* e = ::readdir(d)) {
    const int tid = std::atoi(e->d_name);
    if (tid <= 0 || tid == pid || tid == ring_tid) continue;
    // PyTorch runs the backward pass's launches on its autograd threads.
    if (read_comm(task + "/" + e->d_name + "/comm").rfind("pt_autograd", 0) == 0)
      launcher_tids_.push_back(tid);
  }
  ::closedir(d);
}

void CudaMonitor::tick(std::uint64_t now_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  if (tree_.empty()) return;
  const int launcher = launcher_pid_ ? launcher_pid_ : tree_.front();
  if (launcher_tids_.empty() || launcher_tids_.front() != launcher ||
      now_ns - last_thread_scan_ns_ >= kThreadScanNs) {
    find_launcher_threads(launcher);
    last_thread_scan_ns_ = now_ns;
  }
  ca::ThreadTick t;
  t.t_ns = now_ns;
  int runnable = 0;
  const std::string lroot = proc_root_ + "/" + std::to_string(launcher) + "/task/";
  for (const int tid : launcher_tids_) {
    const StatState st = read_stat_state(lroot + std::to_string(tid) + "/stat");
    const ca::ThreadState s = ca::thread_state(st.state);
    if (s == ca::ThreadState::running) t.launcher_running = true;
    if (tid == launcher && s == ca::ThreadState::disk) t.launcher_disk = true;
  }
  // Ticks from the steady start on (known ~1 s after the first kernel, well before it).
  const bool steady = now_ns >= steady_start_ns();
  auto count_process = [&](int pid, const StatState& st) {
    const ca::ThreadState s = ca::thread_state(st.state);
    for (ThreadCounts* c : {&threads_run_, &threads_interval_, &threads_steady_}) {
      if (c == &threads_steady_ && !steady) continue;
      ProcessTicks& p = c->processes[pid];
      p.comm = st.comm;
      ++p.seen;
      if (s == ca::ThreadState::disk) ++p.disk;
    }
    if (s == ca::ThreadState::running) ++runnable;
    return s;
  };
  for (const int pid : tree_) {
    const StatState st = read_stat_state(proc_root_ + "/" + std::to_string(pid) + "/stat");
    if (!st.state) continue;
    const ca::ThreadState s = count_process(pid, st);
    if (pid == launcher) continue;
    ++t.workers;
    if (s == ca::ThreadState::running || s == ca::ThreadState::disk) ++t.workers_busy;
  }
  for (ThreadCounts* c : {&threads_run_, &threads_interval_, &threads_steady_}) {
    if (c == &threads_steady_ && !steady) continue;
    ++c->ticks;
    c->runnable += runnable;
    if (t.launcher_running) ++c->launcher_running;
  }
  if (now_ns - last_io_read_ns_ >= kIoReadNs) {
    read_io(now_ns, steady);
    last_io_read_ns_ = now_ns;
  }
  if (setup_.enabled) attribution_.add_tick(t);
  // Bounded: a job that forks many short-lived processes keeps the busiest 1024 in mind.
  for (auto* m : {&threads_run_.processes, &threads_interval_.processes,
                  &threads_steady_.processes})
    if (m->size() > 1024) {
      auto least = std::min_element(m->begin(), m->end(), [](const auto& a, const auto& b) {
        return a.second.disk < b.second.disk;
      });
      m->erase(least);
    }
}

void CudaMonitor::read_rings() {
  std::lock_guard<std::mutex> lock(mu_);
  if (setup_.ring_dir.empty()) return;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(setup_.ring_dir, ec)) {
    const std::string path = e.path().string();
    if (e.path().extension() != ".ring" || rings_.count(path)) continue;
    std::string why;
    auto reader = ca::RingReader::open(path, why);
    if (!reader) {
      if (std::find(ring_errors_.begin(), ring_errors_.end(), why) == ring_errors_.end() &&
          ring_errors_.size() < 8 && why.find("still being made") == std::string::npos &&
          why.find("too small") == std::string::npos)
        ring_errors_.push_back(why);
      continue;
    }
    rings_.emplace(path, Ring{std::move(*reader), false, 0});
  }
  std::uint64_t most = 0;
  int busiest = 0;
  for (auto& [path, ring] : rings_) {
    if (ring.ended) continue;
    const std::uint32_t pid = ring.reader.producer_pid();
    // Whether it was alive is decided before the read: what it wrote before dying is read now.
    const bool alive = ca::producer_alive(pid, ring.reader.producer_start_ticks(), proc_root_);
    const ca::RingRead got = ring.reader.read_new();
    lost_ += got.lost;
    for (const ca::IntervalRecord& r : got.records) {
      if (r.kind == ca::RecordKind::status) {
        statuses_[pid] = status_name(r.status) + ": " +
                         std::string(r.status_text, strnlen(r.status_text, ca::kStatusChars));
        continue;
      }
      std::uint64_t kernels = 0;
      for (std::uint32_t d = 0; d < r.devices && d < ca::kMaxDevices; ++d)
        kernels += r.dev[d].kernels;
      if (kernels > 0 && (!first_kernel_ns_ || r.t0_ns < first_kernel_ns_)) {
        first_kernel_ns_ = r.t0_ns;
        attribution_.set_window_start(steady_start_ns());
      }
      run_.add(r);
      interval_.add(r);
      if (r.t0_ns >= steady_start_ns()) add_steady(r);
      attribution_.add_record(r);
      ring.kernels += kernels;
    }
    if (!alive) {
      ring.ended = true;
      attribution_.producer_ended(pid);
    }
  }
  for (const auto& [path, ring] : rings_)
    if (ring.kernels > most) {
      most = ring.kernels;
      busiest = static_cast<int>(ring.reader.producer_pid());
    }
  if (busiest && busiest != launcher_pid_) {
    launcher_pid_ = busiest;
    launcher_tids_.clear();
  }
}

std::pair<CudaInterval, JobThreadsInterval> CudaMonitor::take_interval() {
  std::lock_guard<std::mutex> lock(mu_);
  CudaInterval c = interval_.interval();
  interval_ = CudaTotals();
  if (first_kernel_ns_) {
    const std::uint64_t now = mono_ns();
    c.since_first_kernel_s =
        now > first_kernel_ns_ ? static_cast<double>(now - first_kernel_ns_) / 1e9 : 0.0;
  }
  JobThreadsInterval t;
  const ThreadCounts& ti = threads_interval_;
  if (ti.ticks > 0) {
    const double n = static_cast<double>(ti.ticks);
    t.ticks = n;
    t.runnable_processes = ti.runnable / n;
    t.launcher_running_pct = 100.0 * static_cast<double>(ti.launcher_running) / n;
    double worst = -1;
    for (const auto& [pid, p] : ti.processes) {
      if (!p.seen) continue;
      const double share = 100.0 * static_cast<double>(p.disk) / static_cast<double>(p.seen);
      if (share > worst) {
        worst = share;
        t.io_wait_pid = pid;
        t.io_wait_comm = p.comm;
      }
    }
    if (worst >= 0) t.io_wait_pct = worst;
  }
  threads_interval_ = ThreadCounts();
  return {c, t};
}

void CudaMonitor::finish() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return;
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
  if (!setup_.enabled) return;
  read_rings();
  std::lock_guard<std::mutex> lock(mu_);
  attribution_.finish();
}

std::vector<Result> CudaMonitor::results(std::optional<double> nvml_util_pct) const {
  std::lock_guard<std::mutex> lock(mu_);
  CudaTotals::Inputs in;
  in.skipped_reason = setup_.enabled ? "" : setup_.reason;
  const bool steady = steady_judged();
  const CudaTotals& judged = steady ? steady_ : run_;
  in.attribution = steady ? attribution_.window_totals() : attribution_.totals();
  in.run_kernels = run_.kernels();
  if (steady) {
    const double from =
        (static_cast<double>(steady_start_ns()) - static_cast<double>(start_ns_)) / 1e9;
    const double first =
        (static_cast<double>(first_kernel_ns_) - static_cast<double>(start_ns_)) / 1e9;
    in.window_note = "the steady state, " + clock_text(from) + "-" +
                     clock_text(from + static_cast<double>(steady_.wall_ns()) / 1e9) +
                     ": start-up before the first kernel (" + clock_text(first) + ") and a " +
                     clock_text(kWarmupS).substr(3) + "-s warm-up excluded";
    if (!steady_tail_.empty() && steady_tail_.end_ns() > steady_.end_ns())
      in.window_note += ", and the idle end after the last GPU work (" +
                        fixed(static_cast<double>(steady_tail_.end_ns() - steady_.end_ns()) / 1e9,
                              1) +
                        " s)";
  } else if (first_kernel_ns_) {
    in.window_note = "all CUDA activity: the job ran less than " +
                     std::to_string(static_cast<int>(kWarmupS + kMinSteadyS)) +
                     " s after its first kernel, so no warm-up was left out";
  }
  in.lost_records = lost_;
  in.nvml_util_pct = nvml_util_pct;
  std::string notes;
  for (const auto& [pid, text] : statuses_)
    notes += (notes.empty() ? "" : "; ") + std::string("pid ") + std::to_string(pid) + " " + text;
  for (const std::string& e : ring_errors_) notes += (notes.empty() ? "" : "; ") + e;
  in.status_note = notes;
  for (const auto& [path, ring] : rings_)
    if (ring.kernels > 0) ++in.processes;
  if (setup_.enabled && run_.empty()) {
    if (rings_.empty() && ring_errors_.empty())
      in.skipped_reason =
          "no process of the job initialised CUDA while watched (no activity ring appeared)";
    else if (!notes.empty())
      in.skipped_reason = notes;
  }
  std::vector<Result> out = judged.results(in);

  // Thread states of the job's processes (also without CUDA activity), over the same window.
  const ThreadCounts& tc =
      steady && threads_steady_.ticks > 0 ? threads_steady_ : threads_run_;
  if (tc.ticks > 0) {
    const double n = static_cast<double>(tc.ticks);
    double worst = -1;
    int worst_pid = 0;
    std::string worst_comm;
    for (const auto& [pid, p] : tc.processes) {
      if (p.seen < 10) continue;  // a process seen a moment only says little
      // Share of the whole run, so a short-lived process does not look blocked throughout.
      const double share = 100.0 * static_cast<double>(p.disk) / n;
      if (share > worst) {
        worst = share;
        worst_pid = pid;
        worst_comm = p.comm;
      }
    }
    auto make = [](const std::string& key, const std::string& label, const std::string& unit,
                   double v) {
      Result r;
      r.key = key;
      r.label = label;
      r.unit = unit;
      r.value = v;
      r.status = Status::info;
      r.higher_is_better = false;
      return r;
    };
    if (worst >= 0) {
      Result r = make("watch.job.io_wait.pct",
                      "job process most often in disk wait (D state), share of the time", "%",
                      worst);
      r.param("pid", std::to_string(worst_pid));
      r.param("comm", worst_comm);
      r.param("samples", std::to_string(tc.ticks));
      out.push_back(std::move(r));
    }
    Result runnable = make("watch.job.runnable_processes",
                           "job processes running or runnable, mean (sampled)", "processes",
                           tc.runnable / n);
    runnable.param("samples", std::to_string(tc.ticks));
    out.push_back(std::move(runnable));
    out.push_back(make("watch.job.launcher_running.pct",
                       "the CUDA-launching threads on a CPU, share of the time", "%",
                       100.0 * static_cast<double>(tc.launcher_running) / n));
    const IoSpan& io = steady && io_steady_.mbps() ? io_steady_ : io_run_;
    if (const auto mbps = io.mbps()) {
      Result r = make("watch.job.disk_read.mbps",
                      "storage reads of the job's processes (read_bytes)", "MB/s", *mbps);
      r.param("source", "/proc/<pid>/io of every process of the job, once a second");
      out.push_back(std::move(r));
    }
  }
  return out;
}

}  // namespace gb::watch
