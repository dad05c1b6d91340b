// watch/cpu_time.hpp: the sampler's own CPU clocks, for its cost figures (watch.sampler.*).
#pragma once
#include <ctime>

namespace gb::watch {

// This process's CPU time (user + system, all threads), seconds.
inline double self_cpu_seconds() {
  timespec ts{};
  if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0) return 0;
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// The calling thread's CPU time, milliseconds.
inline double thread_cpu_ms() {
  timespec ts{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

}  // namespace gb::watch
