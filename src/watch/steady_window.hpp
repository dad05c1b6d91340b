// watch/steady_window.hpp: which part of a watched run the figures judge. A training job spends
// its first seconds importing, building the model and the loader, and its first steps
// autotuning (cuDNN benchmark), allocating and filling the loader's prefetch queue; judged over
// the whole run, a short job looks idle. The figures therefore cover the steady state: from
// kWarmupS after the job's first GPU work (its first kernel, seen by the CUDA-activity library;
// without it, the first interval NVML saw the GPU >= 5 % busy) to its last GPU work: the idle
// end of a job (freeing memory, destroying its CUDA context, joining its workers) is left out
// unless it lasts longer than kMaxIdleTailS (then the job really went idle, and that counts).
// When that leaves less than kMinSteadyS, the warm-up is kept and the figures say so.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace gb::watch {

inline constexpr double kWarmupS = 5.0;
inline constexpr double kMinSteadyS = 5.0;
inline constexpr double kMaxIdleTailS = 60.0;

// Seconds since monitoring began as "mm:ss" ("h:mm:ss" from an hour on).
inline std::string clock_text(double s) {
  const long t = std::lround(std::max(0.0, s));
  char buf[32];
  if (t >= 3600)
    std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
  else
    std::snprintf(buf, sizeof buf, "%02ld:%02ld", t / 60, t % 60);
  return buf;
}

}  // namespace gb::watch
