// sys/perf_events.cpp: perf_event_open(2) counters with inherit, user-space-only fallback and
// multiplex scaling; see perf_events.hpp.
#include "sys/perf_events.hpp"

#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <set>
#include <system_error>
#include <utility>

#include "core/error.hpp"
#include "sys/text_parse.hpp"

namespace gb::sys {

namespace {

struct EventSpec {
  const char* name;
  std::uint32_t type;
  std::uint64_t config;
  // Counted only in kernel mode (the scheduler), so exclude_kernel would count nothing.
  bool kernel_mode_only;
};

// perf stat's default order: software first, then hardware.
constexpr EventSpec kEvents[] = {
    {"task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, false},
    {"context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, true},
    {"cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS, true},
    {"page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, false},
    {"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, false},
    {"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, false},
    {"cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES, false},
    {"cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES, false},
};

std::string errno_name(int err) {
  struct Named {
    int err;
    const char* name;
  };
  static constexpr Named kNames[] = {
      {ENOENT, "ENOENT"}, {EACCES, "EACCES"}, {EPERM, "EPERM"},   {EOPNOTSUPP, "EOPNOTSUPP"},
      {ENODEV, "ENODEV"}, {EINVAL, "EINVAL"}, {ENOSYS, "ENOSYS"}, {EMFILE, "EMFILE"},
      {ENFILE, "ENFILE"}, {ESRCH, "ESRCH"},   {EBUSY, "EBUSY"},   {E2BIG, "E2BIG"}};
  for (const Named& n : kNames) {
    if (n.err == err) return n.name;
  }
  return "errno " + std::to_string(err);
}

// One perf_event_open() of event on thread tid; the fd, or -1 with errno set.
int open_event(const EventSpec& event, int tid, bool enable_on_exec, bool user_only) {
  perf_event_attr attr = {};
  attr.size = sizeof attr;
  attr.type = event.type;
  attr.config = event.config;
  attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
  attr.inherit = 1;
  attr.disabled = enable_on_exec ? 1 : 0;
  attr.enable_on_exec = enable_on_exec ? 1 : 0;
  attr.exclude_kernel = user_only ? 1 : 0;
  attr.exclude_hv = user_only ? 1 : 0;
  return static_cast<int>(::syscall(SYS_perf_event_open, &attr, tid, /*cpu=*/-1, /*group_fd=*/-1,
                                    PERF_FLAG_FD_CLOEXEC));
}

// The threads of pid now (/proc/<pid>/task); empty when the process is gone.
std::vector<int> list_threads(int pid) {
  std::vector<int> tids;
  std::error_code ec;
  const std::filesystem::path dir = "/proc/" + std::to_string(pid) + "/task";
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (const auto tid = text::parse_number<int>(it->path().filename().string())) {
      tids.push_back(*tid);
    }
  }
  std::sort(tids.begin(), tids.end());
  return tids;
}

// The opening state of one event across the targets.
struct EventOpening {
  const EventSpec* spec = nullptr;
  bool user_only = false;  // switched to exclude_kernel after a refusal
  bool given_up = false;   // failed before any fd opened: the event cannot be counted here
  std::string first_failure;
  int failed_targets = 0;  // targets that exist but could not be counted
  std::vector<int> fds;
};

// Opens ev on tid. Returns false when tid does not exist (ESRCH: a thread that just exited).
bool open_on(EventOpening& ev, int tid, bool enable_on_exec, std::optional<int> paranoid) {
  if (ev.given_up) return true;
  int fd = open_event(*ev.spec, tid, enable_on_exec, ev.user_only);
  int err = fd < 0 ? errno : 0;
  if (fd < 0 && (err == EACCES || err == EPERM) && !ev.user_only) {
    if (ev.spec->kernel_mode_only) {
      if (ev.first_failure.empty()) {
        ev.first_failure =
            perf_open_failure_reason(err, paranoid) +
            "; counted in kernel mode only, so user-space-only counting would show a false 0";
      }
      ev.given_up = ev.fds.empty();
      ++ev.failed_targets;
      return true;
    }
    ev.user_only = true;
    fd = open_event(*ev.spec, tid, enable_on_exec, true);
    err = fd < 0 ? errno : 0;
  }
  if (fd >= 0) {
    ev.fds.push_back(fd);
    return true;
  }
  if (err == ESRCH) return false;
  if (ev.first_failure.empty()) ev.first_failure = perf_open_failure_reason(err, paranoid);
  ++ev.failed_targets;
  if (ev.fds.empty()) ev.given_up = true;
  return true;
}

std::string no_process_message(const std::vector<int>& pids) {
  if (pids.size() == 1) return "no process with pid " + std::to_string(pids[0]);
  std::string list;
  for (const int pid : pids) list += (list.empty() ? "" : ", ") + std::to_string(pid);
  return "none of these processes exists: " + list;
}

// The per-interval count of one event, scaled by its own enabled/running deltas.
struct Delta {
  double count = 0;
  bool multiplexed = false;
};
std::optional<Delta> delta_of(const std::vector<CounterReading>& earlier,
                              const std::vector<CounterReading>& later, std::string_view name) {
  const CounterReading* a = find_reading(earlier, name);
  const CounterReading* b = find_reading(later, name);
  if (!a || !b || !a->supported || !b->supported || b->value < a->value) return std::nullopt;
  const double counted = static_cast<double>(b->value - a->value);
  const double enabled = b->enabled_s - a->enabled_s;
  const double running = b->running_s - a->running_s;
  if (running < enabled) {
    if (running <= 0) return std::nullopt;  // never on the PMU in this interval: unknown
    return Delta{counted * enabled / running, true};
  }
  return Delta{counted, false};
}

}  // namespace

// ---- helpers ------------------------------------------------------------------------------

const std::vector<std::string>& perf_event_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const EventSpec& e : kEvents) v.emplace_back(e.name);
    return v;
  }();
  return names;
}

const CounterReading* find_reading(const std::vector<CounterReading>& readings,
                                   std::string_view name) {
  for (const CounterReading& r : readings) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

std::optional<int> read_perf_event_paranoid(const std::string& proc_root) {
  const auto text = text::read_text_file(proc_root + "/sys/kernel/perf_event_paranoid");
  if (!text) return std::nullopt;
  return text::parse_number<int>(*text);
}

std::string perf_open_failure_reason(int err, std::optional<int> paranoid) {
  const std::string name = errno_name(err);
  switch (err) {
    case ENOENT:
    case EOPNOTSUPP:
    case ENODEV:
    case EINVAL:
    case E2BIG:
      return "not supported on this machine (" + name + ")";
    case EACCES:
    case EPERM:
      if (paranoid && *paranoid >= 3) {
        return "not permitted: perf_event_paranoid is " + std::to_string(*paranoid) +
               " (perf needs CAP_PERFMON or root at this level)";
      }
      if (paranoid && *paranoid == 2) {
        return "not permitted: perf_event_paranoid is 2 (kernel-mode counting needs "
               "CAP_PERFMON, root or a setting <= 1)";
      }
      if (paranoid) {
        return "not permitted (" + name + ", perf_event_paranoid is " + std::to_string(*paranoid) +
               "; a container's seccomp profile may block perf)";
      }
      return "not permitted (" + name + ")";
    case ENOSYS:
      return "perf_event_open is not available (ENOSYS: a kernel without perf events)";
    case EMFILE:
    case ENFILE:
      return "too many open files (" + name + "; raise `ulimit -n`)";
    case EBUSY:
      return "the PMU is in use by another tool (EBUSY)";
    case ESRCH:
      return "the process has exited (ESRCH)";
    default:
      return "perf_event_open failed: " + std::generic_category().message(err) + " (" + name + ")";
  }
}

// ---- PerfCounters -------------------------------------------------------------------------

PerfCounters PerfCounters::open_for_exec(int pid) {
  return open({pid}, Mode::exec);
}

PerfCounters PerfCounters::open_for_process(int pid) {
  return open({pid}, Mode::running);
}

PerfCounters PerfCounters::open_for_processes(const std::vector<int>& pids) {
  return open(pids, Mode::running);
}

PerfCounters PerfCounters::open(const std::vector<int>& pids, Mode mode) {
  if (pids.empty()) throw Error(ErrorKind::usage, "no process to count");
  PerfCounters counters;
  counters.paranoid_ = read_perf_event_paranoid();
  const bool enable_on_exec = mode == Mode::exec;

  std::vector<EventOpening> events;
  for (const EventSpec& spec : kEvents) events.push_back(EventOpening{&spec});
  auto close_opened = [&events] {
    for (EventOpening& ev : events) {
      for (const int fd : ev.fds) ::close(fd);
    }
  };

  // Opens every event on tid; true when tid existed for at least one of them.
  auto open_target = [&](int tid) {
    bool exists = false;
    for (EventOpening& ev : events) {
      if (open_on(ev, tid, enable_on_exec, counters.paranoid_)) exists = true;
    }
    return exists;
  };

  std::set<int> tried;
  std::size_t counted_targets = 0;
  try {
    if (mode == Mode::exec) {
      // A forked child before exec has one thread, the pid itself.
      for (const int pid : pids) {
        tried.insert(pid);
        if (open_target(pid)) ++counted_targets;
      }
    } else {
      // Threads started while the first ones are being opened would be missed (inherit only
      // covers threads started after their creator's fd exists): list again until no new
      // thread shows up, a few rounds at most.
      for (int round = 0; round < 4; ++round) {
        bool new_threads = false;
        for (const int pid : pids) {
          for (const int tid : list_threads(pid)) {
            if (!tried.insert(tid).second) continue;
            new_threads = true;
            if (open_target(tid)) ++counted_targets;
          }
        }
        if (!new_threads) break;
      }
    }
  } catch (...) {
    close_opened();
    throw;
  }
  if (counted_targets == 0) {
    close_opened();
    throw Error(ErrorKind::usage, no_process_message(pids));
  }

  counters.counters_.reserve(events.size());  // push_back below does not reallocate
  for (EventOpening& ev : events) {
    Counter c;
    c.name = ev.spec->name;
    c.supported = !ev.fds.empty();
    c.user_only = ev.user_only && c.supported;
    if (!c.supported) {
      c.reason = ev.first_failure;
    } else if (ev.failed_targets > 0) {
      const std::size_t total = ev.fds.size() + static_cast<std::size_t>(ev.failed_targets);
      c.reason = "counting " + std::to_string(ev.fds.size()) + " of " + std::to_string(total) +
                 " threads: " + ev.first_failure;
    }
    c.fds = std::move(ev.fds);
    counters.counters_.push_back(std::move(c));
  }
  return counters;
}

PerfCounters::PerfCounters(PerfCounters&& other) noexcept
    : counters_(std::exchange(other.counters_, {})), paranoid_(other.paranoid_) {}

PerfCounters& PerfCounters::operator=(PerfCounters&& other) noexcept {
  if (this != &other) {
    close_all();
    counters_ = std::exchange(other.counters_, {});
    paranoid_ = other.paranoid_;
  }
  return *this;
}

PerfCounters::~PerfCounters() {
  close_all();
}

void PerfCounters::close_all() noexcept {
  for (Counter& c : counters_) {
    for (const int fd : c.fds) ::close(fd);
    c.fds.clear();
  }
  counters_.clear();
}

std::vector<CounterReading> PerfCounters::read() const {
  std::vector<CounterReading> readings;
  readings.reserve(counters_.size());
  for (const Counter& c : counters_) {
    CounterReading r;
    r.name = c.name;
    r.supported = c.supported;
    r.reason = c.reason;
    r.user_only = c.user_only;
    std::uint64_t enabled_ns = 0, running_ns = 0;
    for (const int fd : c.fds) {
      // read_format TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING: value, enabled ns, running ns.
      std::uint64_t v[3] = {};
      if (::read(fd, v, sizeof v) != static_cast<ssize_t>(sizeof v)) continue;
      r.value += v[0];
      enabled_ns += v[1];
      running_ns += v[2];
      if (v[2] < v[1]) r.multiplexed = true;
      // Never on the PMU (running 0) counts as 0, perf's "<not counted>"; multiplexed says so.
      r.scaled_value += v[2] > 0 ? static_cast<double>(v[0]) * static_cast<double>(v[1]) /
                                       static_cast<double>(v[2])
                                 : static_cast<double>(v[0]);
    }
    r.enabled_s = static_cast<double>(enabled_ns) * 1e-9;
    r.running_s = static_cast<double>(running_ns) * 1e-9;
    readings.push_back(std::move(r));
  }
  return readings;
}

// ---- rates --------------------------------------------------------------------------------

PerfRates rates_between(const std::vector<CounterReading>& earlier,
                        const std::vector<CounterReading>& later, double interval_s) {
  PerfRates rates;
  rates.interval_s = interval_s;
  auto delta = [&](std::string_view name) {
    auto d = delta_of(earlier, later, name);
    if (d && d->multiplexed) rates.multiplexed = true;
    return d;
  };
  auto per_s = [&](std::string_view name) -> std::optional<double> {
    const auto d = delta(name);
    if (!d || interval_s <= 0) return std::nullopt;
    return d->count / interval_s;
  };

  const auto instructions = delta("instructions");
  const auto cycles = delta("cycles");
  if (instructions && cycles && cycles->count > 0) rates.ipc = instructions->count / cycles->count;
  if (const auto task_clock_ns = delta("task-clock"); task_clock_ns && interval_s > 0) {
    rates.cpus_utilized = task_clock_ns->count / (interval_s * 1e9);
  }
  rates.instructions_per_s = per_s("instructions");
  rates.cycles_per_s = per_s("cycles");
  rates.cache_references_per_s = per_s("cache-references");
  rates.cache_misses_per_s = per_s("cache-misses");
  rates.context_switches_per_s = per_s("context-switches");
  rates.cpu_migrations_per_s = per_s("cpu-migrations");
  rates.page_faults_per_s = per_s("page-faults");
  return rates;
}

}  // namespace gb::sys
