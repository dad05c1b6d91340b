// sys/cpu_time.hpp: the CPU clocks of this process and of the calling thread, as the kernel
// keeps them (user + system). Used for the watch sampler's own cost (watch.sampler.*), the
// training loop's launching-thread figure (launch_thread_cpu_pct) and the CPU the nvJPEG path's
// trials use (loader.gpu_decode.cpu_cores).
#pragma once
#include <ctime>

namespace gb::sys {

// This process's CPU time (user + system, all threads), seconds; 0 if the clock can't be read.
inline double process_cpu_seconds() {
  timespec ts{};
  if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0) return 0;
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// The calling thread's CPU time (user + system), milliseconds; 0 if the clock can't be read.
inline double thread_cpu_ms() {
  timespec ts{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

}  // namespace gb::sys
