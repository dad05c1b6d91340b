// sys/telemetry.cpp: the background NVML sampler and the pure summary of a sample series; see
// telemetry.hpp.
//
// Napkin math: one sample is ~10 NVML calls of a few microseconds each on a live driver, so the
// default 20 ms interval costs well under 1 % of one CPU core and yields 50 samples per second.
#include "sys/telemetry.hpp"
#include "core/thread_name.hpp"

#include <algorithm>
#include <utility>

namespace gb::sys {

namespace {

// Min, max and mean over the samples that have the field; all empty when none has it.
struct Range {
  std::optional<double> min;
  std::optional<double> max;
  std::optional<double> mean;
};

template <typename Field>
Range range_of(const std::vector<NvmlSample>& samples, Field field) {
  Range r;
  double sum = 0;
  std::size_t n = 0;
  for (const NvmlSample& s : samples) {
    const auto& v = s.*field;
    if (!v) continue;
    const double x = static_cast<double>(*v);
    r.min = r.min ? std::min(*r.min, x) : x;
    r.max = r.max ? std::max(*r.max, x) : x;
    sum += x;
    ++n;
  }
  if (n > 0) r.mean = sum / static_cast<double>(n);
  return r;
}

std::optional<int> to_int(std::optional<double> v) {
  if (!v) return std::nullopt;
  return static_cast<int>(*v);
}

}  // namespace

Telemetry summarize(const std::vector<NvmlSample>& samples, std::optional<double> power_limit_w) {
  Telemetry t;
  t.samples = samples.size();
  t.power_limit_w = power_limit_w;

  const Range sm = range_of(samples, &NvmlSample::sm_clock_mhz);
  t.sm_clock_mhz_min = sm.min;
  t.sm_clock_mhz_max = sm.max;
  t.sm_clock_mhz_mean = sm.mean;
  t.mem_clock_mhz_mean = range_of(samples, &NvmlSample::mem_clock_mhz).mean;
  const Range power = range_of(samples, &NvmlSample::power_w);
  t.power_w_mean = power.mean;
  t.power_w_max = power.max;
  t.temp_c_max = range_of(samples, &NvmlSample::temp_c).max;

  for (const NvmlSample& s : samples) {
    if (s.throttle_reasons)
      t.throttle_reasons = t.throttle_reasons.value_or(0) | *s.throttle_reasons;
  }

  const Range gen = range_of(samples, &NvmlSample::pcie_gen);
  t.pcie_gen_min = to_int(gen.min);
  t.pcie_gen_max = to_int(gen.max);
  const Range width = range_of(samples, &NvmlSample::pcie_width);
  t.pcie_width_min = to_int(width.min);
  t.pcie_width_max = to_int(width.max);

  // Replays during the interval: last reading minus first. A counter that went backwards was
  // reset (driver reload, GPU reset) and says nothing about this interval.
  std::optional<std::uint64_t> first_replays, last_replays;
  for (const NvmlSample& s : samples) {
    if (!s.pcie_replay_counter) continue;
    if (!first_replays) first_replays = s.pcie_replay_counter;
    last_replays = s.pcie_replay_counter;
  }
  if (first_replays && *last_replays >= *first_replays) {
    t.pcie_replay_delta = *last_replays - *first_replays;
  }
  return t;
}

TelemetrySampler::TelemetrySampler(std::optional<NvmlDevice> device,
                                   std::chrono::milliseconds interval)
    : device_(std::move(device)),
      interval_(std::max(interval, std::chrono::milliseconds(1))),
      t0_(std::chrono::steady_clock::now()) {}

TelemetrySampler::~TelemetrySampler() {
  running_ = false;
  if (thread_.joinable()) thread_.join();
}

void TelemetrySampler::start() {
  // Restarting a running sampler begins a new series.
  running_ = false;
  if (thread_.joinable()) thread_.join();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    samples_.clear();
    t0_ = std::chrono::steady_clock::now();
  }
  if (!device_) return;
  running_ = true;
  thread_ = std::thread([this] {
    name_this_thread("gb-telemetry");
    loop();
  });
}

Telemetry TelemetrySampler::stop() {
  running_ = false;
  if (thread_.joinable()) thread_.join();
  if (!device_) return summarize({}, std::nullopt);

  NvmlSample last = device_->sample();
  std::vector<NvmlSample> series;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    last.t_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    samples_.push_back(std::move(last));
    series = samples_;
  }
  return summarize(series, device_->info().power_limit_w);
}

std::vector<NvmlSample> TelemetrySampler::samples() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return samples_;
}

void TelemetrySampler::loop() {
  // Samples on a fixed grid (t0 + k * interval), so a slow NVML call does not stretch the period.
  // The wait is sliced so stop() returns within a few milliseconds even for long intervals.
  constexpr auto kMaxWaitSlice = std::chrono::milliseconds(5);
  auto next = std::chrono::steady_clock::now();
  while (running_) {
    NvmlSample s = device_->sample();
    const auto now = std::chrono::steady_clock::now();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      s.t_s = std::chrono::duration<double>(now - t0_).count();
      samples_.push_back(std::move(s));
    }
    next += interval_;
    if (next < now) next = now;  // fell behind: skip missed slots rather than burst
    while (running_ && std::chrono::steady_clock::now() < next) {
      std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
          kMaxWaitSlice, next - std::chrono::steady_clock::now()));
    }
  }
}

}  // namespace gb::sys
