// cli/signals.cpp: the SIGINT/SIGTERM/SIGHUP handler (async-signal-safe: atomics, kill,
// sem_post, _exit only), SIGPIPE ignored, and the watchdog thread that ends a command whose
// suite does not stop.
#include "cli/signals.hpp"

#include <semaphore.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "core/cancel.hpp"
#include "core/stop_now.hpp"
#include "core/error.hpp"
#include "sys/child_process.hpp"
#include "core/thread_name.hpp"

namespace gb::cli {

namespace {

constexpr double kDefaultStopTimeoutS = 30;

std::atomic<long long> g_first_signal_ns{0};
std::atomic<int> g_forward_pid{0};
sem_t g_wake;  // posted by the handler: a first signal, then a second one

std::mutex g_report_mu;  // held while the report is set, cleared or made
std::function<void()> g_report;

// The command running (cli::main): the watchdog ends only the one that got the signal.
std::atomic<unsigned long> g_command{0};
std::atomic<bool> g_command_running{false};

long long monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);  // async-signal-safe
  return static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

[[noreturn]] void exit_interrupted() { _exit(static_cast<int>(ExitCode::interrupted)); }

extern "C" void on_signal(int sig, siginfo_t* info, void*) {
  const long long now = monotonic_ns();
  const int forward = g_forward_pid.load(std::memory_order_relaxed);
  if (forward > 0 && !sys::signal_came_from_terminal(info)) kill(forward, sig);
  if (!cancel_requested()) {
    g_first_signal_ns.store(now, std::memory_order_relaxed);
    request_cancel();
    // watch keeps its own time (the job's grace); everything else gets the watchdog.
    if (forward <= 0) sem_post(&g_wake);
    return;
  }
  if (now - g_first_signal_ns.load(std::memory_order_relaxed) <= 1000000000LL) return;
  if (stop_now_requested()) exit_interrupted();
  request_stop_now();
  if (forward <= 0) sem_post(&g_wake);
}

// Waits for a first signal, then for the timeout or a second signal; then, if the command is
// still stopping (the flag not reset by its end), reports and exits.
void watchdog() {
  name_this_thread("gb-watchdog");
  for (;;) {
    while (sem_wait(&g_wake) != 0) {
    }
    const unsigned long command = g_command.load();
    if (!g_command_running.load()) continue;  // a signal outside any command (tests raise some)
    timespec deadline{};
    clock_gettime(CLOCK_REALTIME, &deadline);
    const double timeout = stop_timeout_s();
    deadline.tv_sec += static_cast<time_t>(timeout);
    deadline.tv_nsec += static_cast<long>((timeout - static_cast<double>(static_cast<time_t>(
                                                         timeout))) * 1e9);
    if (deadline.tv_nsec >= 1000000000L) {
      ++deadline.tv_sec;
      deadline.tv_nsec -= 1000000000L;
    }
    while (!stop_now_requested()) {
      if (sem_timedwait(&g_wake, &deadline) != 0 && errno == ETIMEDOUT) break;
    }
    // The command ended since (tests run commands one after another in one process).
    if (!g_command_running.load() || g_command.load() != command || !cancel_requested()) continue;
    std::fprintf(stderr, "gpubase: %s: exiting with what was measured\n",
                 stop_now_requested() ? "interrupted again"
                                      : "still running after the stop timeout (a stuck stage)");
    make_stop_report();
    std::fflush(nullptr);
    exit_interrupted();
  }
}

}  // namespace

double stop_timeout_s() {
  if (const char* env = std::getenv("GPUBASE_STOP_TIMEOUT_S"); env && *env) {
    char* end = nullptr;
    const double v = std::strtod(env, &end);
    if (end != env && *end == '\0' && v > 0 && v < 86400) return v;
  }
  return kDefaultStopTimeoutS;
}

void install_signal_handlers() {
  // One watchdog per process (a forked child has none of its parent's threads).
  static pid_t watchdog_pid = 0;
  if (watchdog_pid != ::getpid()) {
    watchdog_pid = ::getpid();
    sem_init(&g_wake, 0, 0);
    std::thread(watchdog).detach();
  }
  struct sigaction sa {};
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  // A closed terminal or a dropped ssh session (SIGHUP) stops the run like Ctrl-C: the report
  // is made and saved, and a watched job gets the signal instead of being left orphaned.
  sigaction(SIGHUP, &sa, nullptr);
  // A closed pipe (`gpubase watch ... | head -1`) is a failed write, reported, not a silent
  // death: the run is saved before it is printed. Children get the default back at exec
  // (sys/child_process resets every signal).
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGPIPE, &ignore, nullptr);
}

void set_signal_forward_pid(int pid) { g_forward_pid.store(pid, std::memory_order_relaxed); }

RunningCommand::RunningCommand() {
  g_command.fetch_add(1);
  g_command_running.store(true);
}

RunningCommand::~RunningCommand() { g_command_running.store(false); }

StopReport::StopReport(std::function<void()> report) {
  std::lock_guard lock(g_report_mu);
  g_report = std::move(report);
}

StopReport::~StopReport() {
  std::lock_guard lock(g_report_mu);
  g_report = nullptr;
}

bool make_stop_report() {
  std::lock_guard lock(g_report_mu);
  if (!g_report) return false;
  try {
    g_report();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpubase: the report could not be made: %s\n", e.what());
  }
  return true;
}

}  // namespace gb::cli
