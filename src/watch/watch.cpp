// watch/watch.cpp: the monitoring loop of `gpubase watch`.
#include "watch/watch.hpp"

#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <optional>
#include <memory>
#include <thread>
#include <tuple>

#include "core/cancel.hpp"
#include "core/stop_now.hpp"
#include "core/device_index.hpp"
#include "core/error.hpp"
#include "sys/cpu_info.hpp"
#include "sys/nvml.hpp"
#include "sys/perf_events.hpp"
#include "sys/procfs.hpp"
#include "watch/cuda_monitor.hpp"
#include "watch/sampler.hpp"
#include "watch/series_io.hpp"
#include "watch/summary.hpp"

namespace gb::watch {

namespace {

using Clock = std::chrono::steady_clock;
constexpr double kMinInterval = 0.1;
constexpr double kMaxInterval = 60.0;
constexpr auto kPollSlice = std::chrono::milliseconds(50);

// Shell-quoted for display, on one line (a newline in an argument shows as \n).
std::string quote_arg(const std::string& a) {
  if (!a.empty() && a.find_first_of(" \t\n\"'\\$") == std::string::npos) return a;
  std::string q = "'";
  for (char c : a) {
    if (c == '\'')
      q += "'\\''";
    else if (c == '\n')
      q += "\\n";
    else
      q += c;
  }
  return q + "'";
}

std::string join_command(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + quote_arg(a);
  return s;
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, s == std::floor(s) ? "%.0f s" : "%.1f s", s);
  return buf;
}

// perf readings -> the interval's figures; remembers the previous reading.
class PerfDeltas {
 public:
  explicit PerfDeltas(const sys::PerfCounters* counters) : counters_(counters) {}
  PerfInterval operator()(double interval_s) {
    PerfInterval p;
    if (!counters_) return p;
    auto now = counters_->read();
    if (interval_s > 0 && !last_.empty()) {
      const sys::PerfRates r = sys::rates_between(last_, now, interval_s);
      p.ipc = r.ipc;
      p.task_clock_cores = r.cpus_utilized;
      p.context_switches_per_s = r.context_switches_per_s;
      p.migrations_per_s = r.cpu_migrations_per_s;
      p.page_faults_per_s = r.page_faults_per_s;
      p.cache_misses_per_s = r.cache_misses_per_s;
      p.instructions_per_s = r.instructions_per_s;
    }
    last_ = std::move(now);
    return p;
  }

 private:
  const sys::PerfCounters* counters_;
  std::vector<sys::CounterReading> last_;
};

// Which result each perf event feeds, for the "why is it missing" text.
void perf_reasons(const sys::PerfCounters& counters, SummaryContext& ctx) {
  const std::pair<const char*, const char*> feeds[] = {
      {"instructions", "watch.perf.ipc"},
      {"cycles", "watch.perf.ipc"},
      {"cache-misses", "watch.perf.cache_misses.per_s"},
      {"task-clock", "watch.perf.task_clock.cores"},
      {"context-switches", "watch.perf.context_switches.per_s"},
      {"cpu-migrations", "watch.perf.migrations.per_s"},
      {"page-faults", "watch.perf.page_faults.per_s"},
  };
  const auto readings = counters.read();
  for (const auto& [event, key] : feeds) {
    const sys::CounterReading* r = sys::find_reading(readings, event);
    if (r && !r->supported && !ctx.perf_counter_reasons.count(key))
      ctx.perf_counter_reasons[key] = std::string(event) + ": " + r->reason;
  }
}

struct GpuSetup {
  std::unique_ptr<GpuReader> reader;
  std::string unavailable_reason;
  std::vector<Fact> facts;
};

GpuSetup open_gpu(int device) {
  GpuSetup g;
  const sys::Nvml nvml = sys::Nvml::load();
  if (!nvml.available()) {
    g.unavailable_reason = "no NVIDIA driver/GPU found (NVML did not load)";
    g.facts.push_back({"gpu.nvml", "NVML", nvml.unavailable_reason()});
    return g;
  }
  require_device_index(device, nvml.device_count(), "NVML");  // none listed: reported below
  const auto dev = nvml.device(device);
  if (!dev) {
    g.unavailable_reason = "NVML sees " + std::to_string(nvml.device_count()) +
                           " GPU(s), none at index " + std::to_string(device) +
                           ": GPU figures not measured";
    return g;
  }
  const sys::NvmlDeviceInfo info = dev->info();
  g.facts.push_back({"gpu.name", "GPU", info.name.value_or("N/A")});
  g.facts.push_back({"gpu.index", "GPU index", std::to_string(device)});
  if (const auto v = nvml.driver_version()) g.facts.push_back({"gpu.driver", "driver", *v});
  if (info.pci_bus_id) g.facts.push_back({"gpu.pci_bus_id", "PCI bus id", *info.pci_bus_id});
  g.reader = std::make_unique<GpuReader>(*dev);
  return g;
}

// Perf counters take one fd per event per thread of the job: a PyTorch job with a hundred
// threads needs ~800. Raise the soft limit to the hard one (no privilege needed).
void raise_fd_limit() {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    setrlimit(RLIMIT_NOFILE, &lim);
  }
}

}  // namespace

int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 0;
}

std::span<const SectionRule> watch_section_rules() {
  static constexpr SectionRule kRules[] = {
      {"watch.", "watch.other", "Other figures of the watched job", Layout::monitor},
      {"watch.window", "watch.window", "What the figures cover", Layout::monitor},
      {"watch.startup", "watch.window", "What the figures cover", Layout::monitor},
      {"watch.warmup", "watch.window", "What the figures cover", Layout::monitor},
      {"watch.duration", "watch.window", "What the figures cover", Layout::monitor},
      {"watch.gpu", "watch.gpu", "GPU (NVML, sampled)", Layout::monitor},
      {"watch.cpu", "watch.cpu", "Host CPU (/proc/stat)", Layout::monitor},
      {"watch.host", "watch.cpu", "Host CPU (/proc/stat)", Layout::monitor},
      {"watch.job", "watch.job", "Job: the command and its child processes", Layout::monitor},
      {"watch.mem", "watch.mem", "Host memory (/proc/meminfo)", Layout::monitor},
      {"watch.disk", "watch.disk", "Disk (/proc/diskstats, like iostat -x)", Layout::monitor},
      {"watch.perf", "watch.perf", "perf_event counters (the job)", Layout::monitor},
      {"watch.cuda", "watch.cuda", "Inside the job: CUDA activity (CUPTI) and why the GPU idled",
       Layout::monitor},
      {"watch.sampler", "watch.self", "gpubase itself", Layout::monitor},
      {"watch.interval", "watch.self", "gpubase itself", Layout::monitor},
      {"watch.samples", "watch.self", "gpubase itself", Layout::monitor},
  };
  return kRules;
}

void validate(const WatchOptions& o) {
  if (o.command.empty() && !o.pid)
    throw Error(ErrorKind::usage,
                "nothing to watch: give a command after --, e.g. `gpubase watch -- python "
                "train.py`, or --pid PID");
  if (!o.command.empty() && o.pid)
    throw Error(ErrorKind::usage, "give either a command after -- or --pid, not both");
  if (!(o.interval_s >= kMinInterval && o.interval_s <= kMaxInterval))
    throw Error(ErrorKind::usage, "--interval must be between 0.1 and 60 seconds");
  if (o.duration_s && !(*o.duration_s > 0))
    throw Error(ErrorKind::usage, "--duration must be more than 0 seconds");
  if (o.stop_grace_s < 0) throw Error(ErrorKind::usage, "the stop grace must be >= 0 s");
  require_device_index(o.device, 0);  // the range is checked against NVML's list in run_watch
  // The capture folder is made now, not found unmakeable after a long job has run.
  if (!o.capture_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.capture_dir, ec);
    if (ec || !std::filesystem::is_directory(o.capture_dir, ec))
      throw Error(ErrorKind::usage, "--capture " + o.capture_dir + ": cannot make the folder" +
                                        (ec ? ": " + ec.message() : std::string()));
  }
}

namespace {

// The watched job: a command gpubase started or a process it attached to, with the perf
// counters opened on it (or why not).
struct Job {
  std::optional<sys::ChildProcess> child;
  std::optional<sys::AttachedProcess> attached;
  std::optional<sys::PerfCounters> perf;
  std::string perf_reason;
  int root_pid = 0;

  bool ended() {
    if (child) return child->exit_status().has_value() || child->poll().has_value();
    return !attached->alive();
  }
};

// Sets variables in this process's environment for as long as it lives, so a child forked
// meanwhile inherits them; the old values come back after.
class ScopedEnv {
 public:
  explicit ScopedEnv(const std::vector<std::pair<std::string, std::string>>& vars) {
    for (const auto& [name, value] : vars) {
      const char* old = std::getenv(name.c_str());
      saved_.push_back({name, old ? std::optional<std::string>(old) : std::nullopt});
      ::setenv(name.c_str(), value.c_str(), 1);
    }
  }
  ~ScopedEnv() {
    for (const auto& [name, old] : saved_) {
      if (old)
        ::setenv(name.c_str(), old->c_str(), 1);
      else
        ::unsetenv(name.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

// Starts or attaches. Perf counters are opened on a started child before it execs; env goes
// into a started child's environment (the CUDA-activity injection).
Job start_job(const WatchOptions& o,
              const std::vector<std::pair<std::string, std::string>>& env = {}) {
  Job job;
  if (o.perf_counters) raise_fd_limit();
  job.perf_reason = o.perf_counters ? "" : "perf counters turned off (--no-perf)";
  if (!o.command.empty()) {
    const ScopedEnv job_env(env);
    job.child = sys::ChildProcess::spawn(
        o.command,
        [&](int pid) {
          if (!o.perf_counters) return;
          try {
            job.perf = sys::PerfCounters::open_for_exec(pid);
          } catch (const Error& e) {
            job.perf_reason = e.what();
          }
        },
        o.job_stdout_to_stderr);
    job.root_pid = job.child->pid();
    return job;
  }
  job.attached = sys::AttachedProcess::attach(*o.pid);
  job.root_pid = job.attached->pid();
  if (o.perf_counters) {
    try {
      job.perf =
          sys::PerfCounters::open_for_processes(sys::process_tree(job.root_pid, o.proc_root));
    } catch (const Error& e) {
      job.perf_reason = e.what();
    }
  }
  return job;
}

// Samples every interval until the job ends, monitoring is stopped (Ctrl-C on an attached
// process) or a started job has had its grace after Ctrl-C / --duration and is terminated.
void monitor(const WatchOptions& o, const WatchHooks& hooks, Job& job, Sampler& sampler,
             WatchSummary& summary, SeriesWriter* series, WatchOutcome& out,
             CudaMonitor* cuda = nullptr) {
  auto progress = [&](const std::string& line) {
    if (hooks.on_progress) hooks.on_progress(line);
  };
  const auto t0 = Clock::now();
  auto now_s = [&] { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  sampler.start(0.0);
  std::optional<double> stop_at;  // when stopping began (Ctrl-C or --duration)
  auto begin_stop = [&](const std::string& why) {
    stop_at = now_s();
    if (job.child)
      progress(why + ": waiting up to " + seconds_text(o.stop_grace_s) +
               " for the job to exit, then SIGTERM");
  };
  double next = o.interval_s;
  bool ended = false;
  while (!ended) {
    while (now_s() < next) {
      std::this_thread::sleep_for(std::min<std::chrono::duration<double>>(
          kPollSlice, std::chrono::duration<double>(next - now_s())));
      if (job.ended()) break;
      // Ctrl-C does not end watch at once: it starts the job's grace (core/cancel's flag is
      // read here, not thrown: the report must cover the whole job).
      if (cancel_requested() && !out.interrupted) {
        out.interrupted = true;
        if (job.attached) break;
        begin_stop("interrupted");
      }
      if (stop_now_requested() && job.child) break;
    }
    if (stop_now_requested() && job.child && !job.ended()) {
      // A second Ctrl-C: no more grace. The job's tree is killed and reaped, the run reported.
      progress("interrupted again: killing the job's " + std::to_string(sampler.job_tree().size()) +
               " processes now");
      for (const int pid : sampler.job_tree())
        if (pid != job.child->pid()) ::kill(pid, SIGKILL);
      job.child->send_signal(SIGKILL);
      job.child->wait();
      out.interrupted = out.stopped_at_once = true;
    }
    ended = job.ended();
    const double t = now_s();
    WatchSample s = sampler.sample(t);
    if (cuda) {
      cuda->set_tree(sampler.job_tree());
      std::tie(s.cuda, s.threads) = cuda->take_interval();
    }
    summary.add(s);
    if (series) series->write(s);
    if (hooks.on_sample) hooks.on_sample(s);
    next = t + o.interval_s;

    if (ended || (job.attached && out.interrupted)) break;
    if (o.duration_s && t >= *o.duration_s && !stop_at) {
      out.stopped_by_duration = true;
      if (job.attached) break;
      job.child->send_signal(SIGINT);
      begin_stop("--duration " + seconds_text(*o.duration_s) + " reached, sent SIGINT");
    }
    if (job.child && stop_at && t - *stop_at >= o.stop_grace_s) {
      // The whole tree, not only the command: behind a launcher (`sh -c`, a script) the
      // training process would otherwise outlive gpubase.
      progress("the job did not exit: sending SIGTERM to its " +
               std::to_string(sampler.job_tree().size()) + " processes");
      for (const int pid : sampler.job_tree())
        if (pid != job.child->pid()) ::kill(pid, SIGTERM);
      job.child->terminate(std::chrono::milliseconds(static_cast<long>(
          std::max(2.0, o.stop_grace_s / 2) * 1000)));
      ended = true;
    }
  }
}

// How monitoring ended, in words: "interrupted (Ctrl-C); the job exited with code 0".
void describe_end(const WatchOptions& o, Job& job, WatchOutcome& out) {
  if (job.child) {
    out.exit = job.child->exit_status();
    if (!out.exit) out.exit = job.child->terminate();
    out.end_reason = "the job " + out.exit->describe();
  } else {
    out.end_reason = job.attached->alive() ? "monitoring stopped; pid " +
                                                 std::to_string(job.root_pid) + " still runs"
                                           : "pid " + std::to_string(job.root_pid) + " ended";
  }
  if (out.stopped_by_duration)
    out.end_reason = "stopped after --duration " + seconds_text(*o.duration_s) + "; " +
                     out.end_reason;
  else if (out.stopped_at_once)
    out.end_reason = "interrupted twice (Ctrl-C), ended at once; " + out.end_reason;
  else if (out.interrupted)
    out.end_reason = "interrupted (Ctrl-C); " + out.end_reason;
}

// The run's facts: host, GPU, and what was watched and how.
void add_facts(const WatchOptions& o, const Job& job, GpuSetup& gpu, const SeriesWriter* series,
               int cores, WatchOutcome& out) {
  out.facts = sys::host_facts(sys::read_host_info());
  out.facts.push_back(Fact::numeric("host.usable_cores", "cores usable by the job", cores, "", 0));
  for (Fact& f : gpu.facts) out.facts.push_back(std::move(f));
  if (!out.gpu_available) {
    out.gpu_unavailable = gpu.unavailable_reason;
    out.facts.push_back({"gpu.available", "GPU", "none: " + gpu.unavailable_reason});
  }
  out.facts.push_back({"watch.command", "command",
                       job.child ? join_command(o.command)
                                 : "pid " + std::to_string(job.root_pid) + " (" +
                                       job.attached->comm() + ")"});
  out.facts.push_back({"watch.pid", "pid", std::to_string(job.root_pid)});
  out.facts.push_back({"watch.exit", "ended", out.end_reason});
  out.facts.push_back({"watch.interval", "interval", seconds_text(o.interval_s)});
  if (series) out.facts.push_back({"watch.series", "time series", series->path()});
  if (!o.capture_dir.empty())
    out.facts.push_back({"watch.capture", "/proc capture", o.capture_dir});
}

// What the summary needs to say why a figure is missing.
SummaryContext summary_context(const WatchOptions& o, const Job& job, const GpuSetup& gpu,
                               Sampler& sampler, int cores) {
  SummaryContext ctx;
  ctx.online_cores = cores;
  ctx.gpu_unavailable_reason = gpu.unavailable_reason;
  if (GpuReader* g = sampler.gpu()) {
    ctx.gpm_unavailable_reason = g->gpm_unavailable_reason();
    ctx.attribution_unavailable_reason = g->attribution_unavailable_reason();
    ctx.device_label = std::to_string(o.device);
  }
  if (job.perf) {
    perf_reasons(*job.perf, ctx);
  } else {
    ctx.perf_unavailable_reason =
        job.perf_reason.empty() ? "perf counters not opened" : job.perf_reason;
  }
  return ctx;
}

}  // namespace

WatchOutcome run_watch(const WatchOptions& o, const WatchHooks& hooks) {
  validate(o);
  WatchOutcome out;
  GpuSetup gpu = open_gpu(o.device);
  out.gpu_available = gpu.reader != nullptr;
  if (!out.gpu_available && hooks.on_progress) hooks.on_progress(gpu.unavailable_reason);

  std::unique_ptr<SeriesWriter> series;
  if (!o.series_path.empty()) series = std::make_unique<SeriesWriter>(o.series_path);
  CudaActivitySetup cuda_setup =
      prepare_cuda_activity(o.cuda_activity, !o.command.empty(), o.interval_s);
  Job job = start_job(o, cuda_setup.env);
  if (hooks.on_started) hooks.on_started(job.root_pid);
  const std::string cuda_fact = cuda_setup.enabled ? "on: " + cuda_setup.library
                                                   : "off: " + cuda_setup.reason;
  CudaMonitor cuda(std::move(cuda_setup), o.proc_root);
  cuda.set_tree({job.root_pid});
  cuda.start();

  SamplerConfig config;
  config.proc_root = o.proc_root;
  config.root_pids = {job.root_pid};
  config.capture_dir = o.capture_dir;
  config.tree_rescan_s = std::max(2.0, o.interval_s);
  PerfDeltas perf_deltas(job.perf ? &*job.perf : nullptr);
  Sampler sampler(config, std::move(gpu.reader),
                  job.perf ? PerfReader(std::ref(perf_deltas)) : PerfReader());
  WatchSummary summary;
  monitor(o, hooks, job, sampler, summary, series.get(), out, &cuda);
  cuda.finish();

  out.duration_s = summary.duration_s();
  describe_end(o, job, out);
  const int cores = usable_cores();
  add_facts(o, job, gpu, series.get(), cores, out);
  out.results = summary.results(summary_context(o, job, gpu, sampler, cores));
  out.facts.push_back({"watch.cuda_activity", "CUDA activity", cuda_fact});
  std::optional<double> nvml_util;
  for (const Result& r : out.results)
    if (r.key == "watch.gpu.util.pct") nvml_util = r.value;
  for (Result& r : cuda.results(nvml_util)) out.results.push_back(std::move(r));
  return out;
}

}  // namespace gb::watch
