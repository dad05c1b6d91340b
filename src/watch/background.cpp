// watch/background.cpp: see background.hpp.
#include "watch/background.hpp"

#include <unistd.h>

#include <chrono>

#include "sys/cpu_info.hpp"
#include "sys/nvml.hpp"
#include "watch/sampler.hpp"
#include "watch/summary.hpp"
#include "core/thread_name.hpp"

namespace gb::watch {

struct BackgroundWatch::State {
  std::unique_ptr<Sampler> sampler;
  WatchSummary summary;
  std::string gpu_unavailable;
  std::vector<Fact> gpu_facts;
  std::chrono::steady_clock::time_point t0;
  double last_s = 0;
};

BackgroundWatch::BackgroundWatch(BackgroundWatchOptions options) : options_(std::move(options)) {}

BackgroundWatch::~BackgroundWatch() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void BackgroundWatch::start() {
  state_ = std::make_unique<State>();
  std::unique_ptr<GpuReader> gpu;
  const sys::Nvml nvml = sys::Nvml::load();
  if (!nvml.available()) {
    state_->gpu_unavailable = "no NVIDIA driver/GPU found (NVML did not load: " +
                              nvml.unavailable_reason() + ")";
  } else if (const auto dev = nvml.device(options_.device)) {
    state_->gpu_facts.push_back({"watch.gpu.index", "GPU watched", std::to_string(options_.device)});
    gpu = std::make_unique<GpuReader>(*dev);
  } else {
    state_->gpu_unavailable = "NVML sees " + std::to_string(nvml.device_count()) +
                              " GPU(s), none at index " + std::to_string(options_.device);
  }
  SamplerConfig config;
  config.proc_root = options_.proc_root;
  config.root_pids = {static_cast<int>(::getpid())};
  config.in_process = true;  // sample() runs on the thread made below
  state_->sampler = std::make_unique<Sampler>(config, std::move(gpu));
  state_->t0 = std::chrono::steady_clock::now();
  judge_from_s_ = -1.0;
  state_->sampler->start(0.0);
  stop_ = false;
  thread_ = std::thread([this] {
    name_this_thread("gb-watch");
    State& st = *state_;
    auto now_s = [&] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - st.t0).count();
    };
    double next = options_.interval_s;
    while (!stop_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      if (now_s() < next) continue;
      const double t = now_s();
      const WatchSample sample = st.sampler->sample(t);
      if (const double from = judge_from_s_.load(); from >= 0) st.summary.judge_from(from);
      st.summary.add(sample);
      if (options_.on_sample) options_.on_sample(sample);
      st.last_s = t;
      next = t + options_.interval_s;
    }
  });
}

void BackgroundWatch::judge_from_now() {
  if (!state_) return;
  judge_from_s_ =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - state_->t0).count();
}

WatchOutcome BackgroundWatch::stop() {
  WatchOutcome out;
  if (!state_) return out;
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  State& st = *state_;
  if (const double from = judge_from_s_.load(); from >= 0) st.summary.judge_from(from);
  const int cores = usable_cores();
  SummaryContext ctx;
  ctx.online_cores = cores;
  ctx.gpu_unavailable_reason = st.gpu_unavailable;
  ctx.perf_unavailable_reason =
      "perf counters are not opened for the in-process sampler (use `gpubase watch -- CMD`)";
  if (GpuReader* g = st.sampler->gpu()) {
    ctx.gpm_unavailable_reason = g->gpm_unavailable_reason();
    ctx.attribution_unavailable_reason = g->attribution_unavailable_reason();
    ctx.device_label = std::to_string(options_.device);
  }
  out.gpu_available = st.sampler->gpu() != nullptr;
  out.gpu_unavailable = st.gpu_unavailable;
  out.duration_s = st.summary.duration_s();
  out.facts = std::move(st.gpu_facts);
  out.facts.push_back(Fact::numeric("host.usable_cores", "cores usable by the job", cores, "", 0));
  out.facts.push_back(Fact::numeric("watch.interval", "sampling interval", options_.interval_s, "s"));
  // The diagnosis speaks of gpubase's own loader threads, not of a separate job's processes.
  out.facts.push_back(
      {"watch.target", "watched", "in_process: gpubase's own work and its loader threads"});
  out.results = st.summary.results(ctx);
  out.end_reason = "the measured work ended";
  state_.reset();
  return out;
}

}  // namespace gb::watch
