// gpu/timing.hpp: timing GPU work honestly. Warm up first, then time each repetition with its
// own pair of CUDA events so the raw samples (not only a mean) reach the result.
#pragma once
#include <functional>
#include <vector>

#include "gpu/cuda_raii.hpp"

namespace gb::gpu {

struct TimingPlan {
  int warmup = 3;          // untimed runs first (module load, clocks ramping up, caches)
  int repetitions = 10;    // timed runs; each one is a sample
  double min_total_ms = 0; // keep repeating (up to max_repetitions) until this much was timed
  int max_repetitions = 200;
};

// Runs fn(stream) plan.warmup times, then times each repetition with events on `stream`.
// Returns milliseconds per repetition.
std::vector<double> time_on_stream(cudaStream_t stream, const TimingPlan& plan,
                                   const std::function<void(cudaStream_t)>& fn);

}  // namespace gb::gpu
