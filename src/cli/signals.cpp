// cli/signals.cpp: the SIGINT/SIGTERM/SIGHUP handler (async-signal-safe: atomics, kill, _exit
// only) and SIGPIPE ignored.
#include "cli/signals.hpp"

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <atomic>

#include "core/cancel.hpp"
#include "core/error.hpp"
#include "sys/child_process.hpp"

namespace gb::cli {

namespace {

std::atomic<long long> g_first_signal_ns{0};
std::atomic<int> g_forward_pid{0};

long long monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);  // async-signal-safe
  return static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

// Signals within a second of the first are one request: `timeout` and process managers deliver
// the same signal to the process and to its group, and a double press should not lose the
// report.
extern "C" void on_signal(int sig, siginfo_t* info, void*) {
  const long long now = monotonic_ns();
  const int forward = g_forward_pid.load(std::memory_order_relaxed);
  if (forward > 0) {
    if (!sys::signal_came_from_terminal(info)) kill(forward, sig);
    if (!cancel_requested()) request_cancel();
    return;
  }
  if (!cancel_requested()) {
    g_first_signal_ns.store(now, std::memory_order_relaxed);
    request_cancel();
    return;
  }
  if (now - g_first_signal_ns.load(std::memory_order_relaxed) > 1000000000LL)
    _exit(static_cast<int>(ExitCode::interrupted));
}

}  // namespace

void install_signal_handlers() {
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

}  // namespace gb::cli
