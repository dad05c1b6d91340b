// watch/sampler.cpp: one interval from host, GPU and perf readers.
#include "watch/sampler.hpp"

#include <unistd.h>

#include <chrono>
#include <set>

#include "sys/cpu_time.hpp"

namespace gb::watch {

Sampler::Sampler(SamplerConfig config, std::unique_ptr<GpuReader> gpu, PerfReader perf)
    : config_(std::move(config)),
      host_(config_.proc_root, config_.root_pids, config_.tree_rescan_s),
      gpu_(std::move(gpu)),
      perf_(std::move(perf)) {
  if (const long t = sysconf(_SC_CLK_TCK); t > 0) clk_tck_ = t;
  if (const long p = sysconf(_SC_PAGESIZE); p > 0) page_size_ = static_cast<std::uint64_t>(p);
  if (!config_.capture_dir.empty()) write_capture_roots(config_.capture_dir, config_.root_pids);
}

void Sampler::start(double now_s) {
  const HostFiles files = host_.read(now_s);
  if (!config_.capture_dir.empty()) write_capture_step(config_.capture_dir, step_++, files);
  last_ = parse_host_files(files);
  last_t_ = now_s;
  // In-process, the sampling thread starts after this call: its CPU clock starts at zero.
  last_self_cpu_s_ = config_.in_process ? 0.0 : sys::process_cpu_seconds();
  if (perf_) perf_(0);  // sets the counters' baseline
}

WatchSample Sampler::sample(double now_s) {
  WatchSample s;
  s.t_s = now_s;
  s.interval_s = now_s - last_t_;
  s.unix_time_s = std::chrono::duration<double>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();

  double mark = sys::thread_cpu_ms();
  const HostFiles files = host_.read(now_s);
  if (!config_.capture_dir.empty()) write_capture_step(config_.capture_dir, step_++, files);
  HostSnapshot snap = parse_host_files(files);
  HostInterval h = host_interval(last_, snap, s.interval_s, clk_tck_, page_size_);
  s.sampler_host_ms = sys::thread_cpu_ms() - mark;
  s.cpu = std::move(h.cpu);
  s.job = std::move(h.job);
  s.mem = h.mem;
  s.disk = std::move(h.disk);
  last_ = std::move(snap);

  if (gpu_) {
    mark = sys::thread_cpu_ms();
    const std::set<int> pids(host_.tree().begin(), host_.tree().end());
    s.gpu = gpu_->read(pids, now_s);
    s.sampler_gpu_ms = sys::thread_cpu_ms() - mark;
  }
  if (perf_) {
    mark = sys::thread_cpu_ms();
    s.perf = perf_(s.interval_s);
    s.sampler_perf_ms = sys::thread_cpu_ms() - mark;
  }

  const double self = config_.in_process ? sys::thread_cpu_ms() * 1e-3 : sys::process_cpu_seconds();
  if (s.interval_s > 0) s.sampler_cpu_pct = 100.0 * (self - last_self_cpu_s_) / s.interval_s;
  last_self_cpu_s_ = self;
  last_t_ = now_s;
  return s;
}

std::vector<WatchSample> replay_capture(const std::filesystem::path& dir, GpuReader* gpu) {
  const auto steps = capture_steps(dir);
  const auto roots = capture_roots(dir);
  long clk_tck = sysconf(_SC_CLK_TCK);
  if (clk_tck <= 0) clk_tck = 100;
  std::vector<WatchSample> samples;
  std::optional<HostSnapshot> last;
  double t0 = 0, t_last = 0;
  for (const auto& step : steps) {
    HostReader reader(step.string(), roots);
    HostSnapshot snap = parse_host_files(reader.read(0));
    const double t = snap.uptime_s.value_or(t_last + 1.0);
    if (!last) {
      t0 = t;
    } else {
      WatchSample s;
      s.t_s = t - t0;
      s.interval_s = t - t_last;
      HostInterval h = host_interval(*last, snap, s.interval_s, clk_tck);
      s.cpu = std::move(h.cpu);
      s.job = std::move(h.job);
      s.mem = h.mem;
      s.disk = std::move(h.disk);
      if (gpu) {
        std::set<int> pids;
        for (const auto& [pid, p] : snap.processes) pids.insert(pid);
        s.gpu = gpu->read(pids, s.t_s);
      }
      samples.push_back(std::move(s));
    }
    last = std::move(snap);
    t_last = t;
  }
  return samples;
}

}  // namespace gb::watch
