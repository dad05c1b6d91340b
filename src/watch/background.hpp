// watch/background.hpp: the watch sampler running on a thread of this very process, for work
// gpubase does itself (`gpubase baseline`'s training run): the same samples (NVML utilization
// samples, GPM, every CPU core, iowait, context switches, memory) and the same watch.* results
// as `gpubase watch -- CMD` gives for a command, without a second process.
//
//   watch::BackgroundWatch w({.device = 0});
//   w.start();
//   ... the work ...
//   watch::WatchOutcome o = w.stop();   // o.results: watch.gpu.util.pct, watch.cpu.*, ...
//
// perf_event counters are not opened (they would count gpubase's own sampler thread and every
// loader thread started later would be missed); their figures are skipped with that reason.
#pragma once
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "watch/watch.hpp"

namespace gb::watch {

struct BackgroundWatchOptions {
  int device = 0;           // NVML index
  double interval_s = 0.5;  // between samples
  std::string proc_root = "/proc";
  // Sees every sample, on the sampler's thread (the Prometheus export).
  std::function<void(const WatchSample&)> on_sample;
};

class BackgroundWatch {
 public:
  explicit BackgroundWatch(BackgroundWatchOptions options);
  ~BackgroundWatch();  // stops the thread (results dropped)
  BackgroundWatch(const BackgroundWatch&) = delete;
  BackgroundWatch& operator=(const BackgroundWatch&) = delete;

  // Opens NVML (missing: the GPU figures are skipped with the reason) and starts sampling.
  void start();
  // The measured work begins now (any thread): the results judge the samples from here on, not
  // the building and warming up before it. Without it they judge the steady state watch finds
  // itself (watch/steady_window.hpp).
  void judge_from_now();
  // Stops sampling and summarises what was sampled (the watch.* results and facts).
  WatchOutcome stop();

 private:
  struct State;
  BackgroundWatchOptions options_;
  std::unique_ptr<State> state_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<double> judge_from_s_{-1.0};  // judge_from_now(), seconds since start(); < 0: none
};

}  // namespace gb::watch
