// watch/sampler.hpp: takes one WatchSample per interval from the host (/proc), the GPU (NVML)
// and the job's perf counters. The sampler holds the previous snapshot; each sample() covers
// the time since the one before. It never throws for a figure it cannot read: that figure is
// empty in the sample.
#pragma once
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "watch/gpu.hpp"
#include "watch/host.hpp"
#include "watch/sample.hpp"

namespace gb::watch {

struct SamplerConfig {
  std::string proc_root = "/proc";
  std::vector<int> root_pids;      // the job: its whole process tree is followed
  double tree_rescan_s = 2.0;      // how often new processes of the tree are looked for
  std::string capture_dir;         // non-empty: every interval's /proc files are copied here
  // The sampler runs inside the process it watches (the baseline's training stage): its own CPU
  // (sampler_cpu_pct) is then the CPU time of the thread that calls sample(), made right after
  // start(), not the whole process's (which is the watched work).
  bool in_process = false;
};

// Reads the job's perf counters over the last interval_s seconds.
using PerfReader = std::function<PerfInterval(double interval_s)>;

class Sampler {
 public:
  Sampler(SamplerConfig config, std::unique_ptr<GpuReader> gpu, PerfReader perf = {});

  // The first snapshot; now_s is seconds since monitoring began (the live clock).
  void start(double now_s);
  WatchSample sample(double now_s);

  const std::vector<int>& job_tree() const { return host_.tree(); }
  GpuReader* gpu() const { return gpu_.get(); }

 private:
  SamplerConfig config_;
  HostReader host_;
  std::unique_ptr<GpuReader> gpu_;
  PerfReader perf_;
  HostSnapshot last_;
  double last_t_ = 0;
  double last_self_cpu_s_ = 0;
  int step_ = 0;
  long clk_tck_ = 100;
  std::uint64_t page_size_ = 4096;
};

// Replays a capture (SamplerConfig::capture_dir) through the host side, one sample per step
// after the first, timed by the captured /proc/uptime; gpu, when given, is read live for each
// step (the tests pair captures with the fake NVML library). Throws gb::Error (usage) when dir
// is not a capture.
std::vector<WatchSample> replay_capture(const std::filesystem::path& dir, GpuReader* gpu = nullptr);


}  // namespace gb::watch
