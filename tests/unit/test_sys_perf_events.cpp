// test_sys_perf_events.cpp: perf_event_open counters for `gpubase watch` — every event reported
// (counted, or not with a reason), CPU time of a busy child and of a grandchild it forks after
// the counters were opened (inherit), enable_on_exec, the user-space-only fallback, and the
// interval arithmetic of rates_between() on hand-made readings.
//
// Hardware counters may or may not exist (a VM usually has none), so no test asserts either.
// Children burn a fixed amount of their own CPU time (not wall time), so a loaded machine makes
// them slower, never different.
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "core/error.hpp"
#include "sys/child_process.hpp"
#include "sys/perf_events.hpp"
#include "sys/text_parse.hpp"

namespace gb::sys {
namespace {

// Burns cpu_s seconds of the calling process's CPU time after touching 64 fresh pages (64 page
// faults). System calls only: it runs in forked children.
void burn_cpu(double cpu_s) {
  constexpr std::size_t kPages = 64, kPage = 4096;
  void* mem =
      ::mmap(nullptr, kPages * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem != MAP_FAILED) {
    for (std::size_t i = 0; i < kPages; ++i) static_cast<volatile char*>(mem)[i * kPage] = 1;
  }
  timespec now = {};
  do {
    ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  } while (static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9 < cpu_s);
}

// A forked copy of the test that waits until start(), runs work() and exits: counters can be
// opened on it before it does anything. Killed and reaped if the test ends early.
class GatedChild {
 public:
  template <typename Fn>
  explicit GatedChild(Fn work) {
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error("pipe");
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(fds[1]);
      char go = 0;
      if (::read(fds[0], &go, 1) != 1) ::_exit(1);
      work();
      ::_exit(0);
    }
    ::close(fds[0]);
    gate_ = fds[1];
  }
  GatedChild(const GatedChild&) = delete;
  GatedChild& operator=(const GatedChild&) = delete;
  ~GatedChild() {
    if (gate_ >= 0) ::close(gate_);
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  int pid() const { return pid_; }
  void start() {
    const ssize_t n = ::write(gate_, "x", 1);
    EXPECT_EQ(n, 1);
    ::close(gate_);
    gate_ = -1;
  }
  // The wait status; the child is reaped.
  int wait() {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return status;
  }

 private:
  int pid_ = -1;
  int gate_ = -1;
};

int nonexistent_pid() {
  const auto text = text::read_text_file("/proc/sys/kernel/pid_max");
  const auto pid_max = text ? text::parse_number<int>(*text) : std::nullopt;
  return pid_max.value_or(4194304);
}

const CounterReading& reading(const std::vector<CounterReading>& readings,
                              const std::string& name) {
  const CounterReading* r = find_reading(readings, name);
  if (!r) throw std::runtime_error("no reading " + name);
  return *r;
}

// Each reading is counted, or not and says why; a counted one has consistent times.
void expect_well_formed(const std::vector<CounterReading>& readings) {
  ASSERT_EQ(readings.size(), perf_event_names().size());
  for (std::size_t i = 0; i < readings.size(); ++i) {
    const CounterReading& r = readings[i];
    EXPECT_EQ(r.name, perf_event_names()[i]);
    if (r.supported) {
      EXPECT_GE(r.scaled_value, static_cast<double>(r.value)) << r.name;
      EXPECT_LE(r.running_s, r.enabled_s + 1e-9) << r.name;
    } else {
      EXPECT_FALSE(r.reason.empty()) << r.name;
      EXPECT_EQ(r.value, 0u) << r.name;
    }
  }
}

// ---- counting real processes --------------------------------------------------------------

TEST(PerfCounters, EveryEventIsReportedCountedOrWithAReason) {
  const PerfCounters counters = PerfCounters::open_for_process(::getpid());
  expect_well_formed(counters.read());
}

TEST(PerfCounters, BusyChildCountsItsCpuTimeAndPageFaults) {
  GatedChild child([] { burn_cpu(0.3); });
  const PerfCounters counters = PerfCounters::open_for_process(child.pid());
  const auto before = counters.read();
  if (!reading(before, "task-clock").supported) {
    GTEST_SKIP() << "task-clock: " << reading(before, "task-clock").reason;
  }
  child.start();
  ASSERT_EQ(child.wait(), 0);
  const auto after = counters.read();
  expect_well_formed(after);

  // 0.3 s of the child's own CPU time, plus its exit; a wide margin above for a loaded machine.
  const double task_clock_s = reading(after, "task-clock").scaled_value * 1e-9;
  EXPECT_GE(task_clock_s, 0.25);
  EXPECT_LE(task_clock_s, 2.0);
  const CounterReading& faults = reading(after, "page-faults");
  if (faults.supported) {
    EXPECT_GE(faults.value, 64u);
  }
  // Where the machine has hardware counters, 0.3 s of work is millions of them.
  for (const char* name : {"cycles", "instructions"}) {
    const CounterReading& r = reading(after, name);
    if (r.supported) {
      EXPECT_GT(r.scaled_value, 1e6) << name;
    }
  }
}

TEST(PerfCounters, InheritCountsAGrandchildForkedAfterOpening) {
  // The child does nothing but fork a grandchild that does the work, as a DataLoader does.
  GatedChild child([] {
    const pid_t grandchild = ::fork();
    if (grandchild == 0) {
      burn_cpu(0.3);
      ::_exit(0);
    }
    ::waitpid(grandchild, nullptr, 0);
  });
  const PerfCounters counters = PerfCounters::open_for_process(child.pid());
  if (!reading(counters.read(), "task-clock").supported) GTEST_SKIP() << "no task-clock";
  child.start();
  ASSERT_EQ(child.wait(), 0);
  const double task_clock_s = reading(counters.read(), "task-clock").scaled_value * 1e-9;
  EXPECT_GE(task_clock_s, 0.25);
  EXPECT_LE(task_clock_s, 2.0);
}

TEST(PerfCounters, OpenForExecCountsTheCommand) {
  std::optional<PerfCounters> counters;
  ChildProcess child =
      ChildProcess::spawn({"/bin/sh", "-c", "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done"},
                          [&](int pid) { counters.emplace(PerfCounters::open_for_exec(pid)); });
  ASSERT_EQ(child.wait().describe(), "exited with code 0");
  ASSERT_TRUE(counters.has_value());
  const auto readings = counters->read();
  expect_well_formed(readings);
  const CounterReading& task_clock = reading(readings, "task-clock");
  if (!task_clock.supported) GTEST_SKIP() << "task-clock: " << task_clock.reason;
  EXPECT_GT(task_clock.value, 1'000'000u);  // > 1 ms of shell arithmetic
  EXPECT_GT(task_clock.enabled_s, 0.0);
  const CounterReading& faults = reading(readings, "page-faults");
  if (faults.supported) {
    EXPECT_GT(faults.value, 0u);  // exec maps a new program
  }
}

TEST(PerfCounters, OpenForExecStaysOffUntilAnExec) {
  GatedChild child([] { burn_cpu(0.05); });  // works, but never execs
  const PerfCounters counters = PerfCounters::open_for_exec(child.pid());
  child.start();
  ASSERT_EQ(child.wait(), 0);
  for (const CounterReading& r : counters.read()) {
    EXPECT_EQ(r.value, 0u) << r.name;
    EXPECT_EQ(r.enabled_s, 0.0) << r.name;
  }
}

TEST(PerfCounters, NonexistentPidIsAUsageError) {
  const int pid = nonexistent_pid();
  const std::string expected = "no process with pid " + std::to_string(pid);
  for (auto open : {&PerfCounters::open_for_process, &PerfCounters::open_for_exec}) {
    try {
      open(pid);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::usage);
      EXPECT_EQ(std::string(e.what()), expected);
    }
  }
}

TEST(PerfCounters, OpenForProcessesSkipsAPidThatHasExited) {
  const PerfCounters counters = PerfCounters::open_for_processes({nonexistent_pid(), ::getpid()});
  expect_well_formed(counters.read());
  EXPECT_THROW(PerfCounters::open_for_processes({nonexistent_pid()}), Error);
}

TEST(PerfCounters, MovedCountersKeepTheirFds) {
  PerfCounters first = PerfCounters::open_for_process(::getpid());
  PerfCounters second = std::move(first);
  EXPECT_TRUE(first.read().empty());  // NOLINT(bugprone-use-after-move): moved-from is empty
  expect_well_formed(second.read());
  first = std::move(second);
  expect_well_formed(first.read());
}

// What is wrong with counting the calling process when it lacks CAP_PERFMON at this paranoid
// level (>= 2); empty when nothing is.
std::string user_only_problems(int paranoid) {
  std::string problems;
  const std::string level = "perf_event_paranoid is " + std::to_string(paranoid);
  for (const CounterReading& r : PerfCounters::open_for_process(::getpid()).read()) {
    const bool kernel_only = r.name == "context-switches" || r.name == "cpu-migrations";
    if (r.supported && !r.user_only) problems += r.name + " counted kernel mode; ";
    if (r.supported && kernel_only) problems += r.name + " would read a false 0; ";
    const bool refused = r.reason.find(level) != std::string::npos;
    const bool absent = r.reason.find("not supported") != std::string::npos;
    if (!r.supported && !refused && !absent) problems += r.name + ": " + r.reason + "; ";
    if (r.name == "task-clock" && paranoid == 2 && !r.supported) {
      problems += "task-clock not counted user-space only: " + r.reason + "; ";
    }
  }
  return problems;
}

TEST(PerfCounters, UnprivilegedCountingFallsBackToUserSpaceOnly) {
  // Needs root (to become nobody, without CAP_PERFMON) and perf_event_paranoid >= 2.
  const auto paranoid = read_perf_event_paranoid();
  if (::geteuid() != 0 || !paranoid || *paranoid < 2) {
    GTEST_SKIP() << "needs root and perf_event_paranoid >= 2";
  }
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    // The checks run as nobody in a forked child; what fails comes back through the pipe.
    ::close(fds[0]);
    std::string problems = "cannot become nobody";
    if (::setgid(65534) == 0 && ::setuid(65534) == 0) {
      try {
        problems = user_only_problems(*paranoid);
      } catch (const std::exception& e) {
        problems = std::string("open_for_process threw: ") + e.what();
      }
    }
    const ssize_t n = ::write(fds[1], problems.data(), problems.size());
    ::_exit(n == static_cast<ssize_t>(problems.size()) ? 0 : 1);
  }
  ::close(fds[1]);
  std::string problems;
  char buf[256];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) problems.append(buf, n);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(problems, "");
}

// ---- paranoid level and reasons -----------------------------------------------------------

TEST(PerfParanoid, ReadsTheLevelFromAProcTree) {
  const std::string root = testing::TempDir() + "gb_perf_proc_" + std::to_string(::getpid());
  std::filesystem::create_directories(root + "/sys/kernel");
  EXPECT_EQ(read_perf_event_paranoid(root), std::nullopt);
  std::ofstream(root + "/sys/kernel/perf_event_paranoid") << "2\n";
  EXPECT_EQ(read_perf_event_paranoid(root), 2);
  std::ofstream(root + "/sys/kernel/perf_event_paranoid") << "-1\n";
  EXPECT_EQ(read_perf_event_paranoid(root), -1);
  std::filesystem::remove_all(root);
}

TEST(PerfReason, NamesTheCauseOfAFailedOpen) {
  EXPECT_EQ(perf_open_failure_reason(ENOENT, 2), "not supported on this machine (ENOENT)");
  EXPECT_EQ(perf_open_failure_reason(EOPNOTSUPP, 2), "not supported on this machine (EOPNOTSUPP)");
  EXPECT_EQ(perf_open_failure_reason(EACCES, 2),
            "not permitted: perf_event_paranoid is 2 (kernel-mode counting needs CAP_PERFMON, "
            "root or a setting <= 1)");
  EXPECT_EQ(perf_open_failure_reason(EACCES, 3),
            "not permitted: perf_event_paranoid is 3 (perf needs CAP_PERFMON or root at this "
            "level)");
  EXPECT_EQ(perf_open_failure_reason(EPERM, std::nullopt), "not permitted (EPERM)");
  EXPECT_EQ(perf_open_failure_reason(EMFILE, 1), "too many open files (EMFILE; raise `ulimit -n`)");
}

// ---- rates_between ------------------------------------------------------------------------

CounterReading counted(const std::string& name, std::uint64_t value, double enabled_s,
                       double running_s) {
  CounterReading r;
  r.name = name;
  r.supported = true;
  r.value = value;
  r.enabled_s = enabled_s;
  r.running_s = running_s;
  r.multiplexed = running_s < enabled_s;
  r.scaled_value = running_s > 0 ? static_cast<double>(value) * enabled_s / running_s : 0;
  return r;
}

CounterReading not_counted(const std::string& name) {
  CounterReading r;
  r.name = name;
  r.reason = "not supported on this machine (ENOENT)";
  return r;
}

TEST(PerfRates, IpcAndRatesFromTwoReadings) {
  const std::vector<CounterReading> earlier = {
      counted("task-clock", 1'000'000'000, 1, 1),   counted("context-switches", 100, 1, 1),
      counted("cpu-migrations", 10, 1, 1),          counted("page-faults", 5'000, 1, 1),
      counted("cycles", 2'000'000'000, 1, 1),       counted("instructions", 3'000'000'000, 1, 1),
      counted("cache-references", 1'000'000, 1, 1), counted("cache-misses", 100'000, 1, 1)};
  const std::vector<CounterReading> later = {
      counted("task-clock", 4'000'000'000, 3, 3),   counted("context-switches", 300, 3, 3),
      counted("cpu-migrations", 14, 3, 3),          counted("page-faults", 6'000, 3, 3),
      counted("cycles", 6'000'000'000, 3, 3),       counted("instructions", 9'000'000'000, 3, 3),
      counted("cache-references", 3'000'000, 3, 3), counted("cache-misses", 500'000, 3, 3)};
  const PerfRates r = rates_between(earlier, later, 2.0);
  EXPECT_DOUBLE_EQ(r.interval_s, 2.0);
  EXPECT_DOUBLE_EQ(*r.ipc, 6e9 / 4e9);
  EXPECT_DOUBLE_EQ(*r.cpus_utilized, 3e9 / 2e9);  // 3 s of CPU in 2 s: 1.5 cores
  EXPECT_DOUBLE_EQ(*r.instructions_per_s, 3e9);
  EXPECT_DOUBLE_EQ(*r.cycles_per_s, 2e9);
  EXPECT_DOUBLE_EQ(*r.cache_references_per_s, 1e6);
  EXPECT_DOUBLE_EQ(*r.cache_misses_per_s, 2e5);
  EXPECT_DOUBLE_EQ(*r.context_switches_per_s, 100);
  EXPECT_DOUBLE_EQ(*r.cpu_migrations_per_s, 2);
  EXPECT_DOUBLE_EQ(*r.page_faults_per_s, 500);
  EXPECT_FALSE(r.multiplexed);
}

TEST(PerfRates, MultiplexedDeltaIsScaledByItsOwnEnabledAndRunningTimes) {
  // In the interval: enabled 2 s, on the PMU 0.5 s, counted 1e9 -> an estimated 4e9.
  const std::vector<CounterReading> earlier = {counted("cycles", 1'000'000'000, 1.0, 1.0),
                                               counted("instructions", 500'000'000, 1.0, 1.0)};
  const std::vector<CounterReading> later = {counted("cycles", 2'000'000'000, 3.0, 1.5),
                                             counted("instructions", 2'500'000'000, 3.0, 3.0)};
  const PerfRates r = rates_between(earlier, later, 2.0);
  EXPECT_DOUBLE_EQ(*r.cycles_per_s, 4e9 / 2.0);
  EXPECT_DOUBLE_EQ(*r.ipc, 2e9 / 4e9);
  EXPECT_TRUE(r.multiplexed);
}

TEST(PerfRates, CounterNeverOnThePmuInTheIntervalIsUnknown) {
  const std::vector<CounterReading> earlier = {counted("cycles", 1000, 1.0, 1.0)};
  const std::vector<CounterReading> later = {counted("cycles", 1000, 2.0, 1.0)};
  EXPECT_FALSE(rates_between(earlier, later, 1.0).cycles_per_s.has_value());
}

TEST(PerfRates, MissingOrUnsupportedCountersLeaveTheirFieldsEmpty) {
  const std::vector<CounterReading> earlier = {
      counted("task-clock", 0, 0, 0), not_counted("cycles"), counted("instructions", 0, 0, 0)};
  const std::vector<CounterReading> later = {counted("task-clock", 500'000'000, 1, 1),
                                             not_counted("cycles"),
                                             counted("instructions", 1'000'000, 1, 1)};
  const PerfRates r = rates_between(earlier, later, 1.0);
  EXPECT_DOUBLE_EQ(*r.cpus_utilized, 0.5);
  EXPECT_DOUBLE_EQ(*r.instructions_per_s, 1e6);
  EXPECT_FALSE(r.ipc.has_value());  // cycles unsupported
  EXPECT_FALSE(r.cycles_per_s.has_value());
  EXPECT_FALSE(r.page_faults_per_s.has_value());  // absent from both readings
}

TEST(PerfRates, CounterThatWentBackwardsIsEmpty) {
  const PerfRates r =
      rates_between({counted("page-faults", 100, 1, 1)}, {counted("page-faults", 50, 2, 2)}, 1.0);
  EXPECT_FALSE(r.page_faults_per_s.has_value());
}

TEST(PerfRates, NoIntervalGivesIpcButNoRates) {
  const std::vector<CounterReading> earlier = {counted("cycles", 0, 0, 0),
                                               counted("instructions", 0, 0, 0)};
  const std::vector<CounterReading> later = {counted("cycles", 100, 1, 1),
                                             counted("instructions", 250, 1, 1)};
  const PerfRates r = rates_between(earlier, later, 0.0);
  EXPECT_DOUBLE_EQ(*r.ipc, 2.5);
  EXPECT_FALSE(r.cycles_per_s.has_value());
}

}  // namespace
}  // namespace gb::sys
