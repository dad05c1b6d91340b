// sys/telemetry.hpp: samples one device through NVML on a background thread while a
// measurement runs and summarises what it saw (gb::Telemetry). Without NVML it records nothing
// and returns a Telemetry with samples == 0.
#pragma once
#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "core/result.hpp"
#include "sys/nvml.hpp"

namespace gb::sys {

class TelemetrySampler {
 public:
  explicit TelemetrySampler(std::optional<NvmlDevice> device,
                            std::chrono::milliseconds interval = std::chrono::milliseconds(20));
  ~TelemetrySampler();
  TelemetrySampler(const TelemetrySampler&) = delete;
  TelemetrySampler& operator=(const TelemetrySampler&) = delete;

  void start();
  // Stops sampling and summarises the samples taken since start(). Takes one final sample so
  // even a short measurement has at least one.
  Telemetry stop();
  std::vector<NvmlSample> samples() const;

 private:
  void loop();
  std::optional<NvmlDevice> device_;
  std::chrono::milliseconds interval_;
  std::atomic<bool> running_{false};
  std::thread thread_;
  mutable std::mutex mutex_;
  std::vector<NvmlSample> samples_;
  std::chrono::steady_clock::time_point t0_;
};

// Pure summary of a series of samples (testable without threads).
Telemetry summarize(const std::vector<NvmlSample>& samples, std::optional<double> power_limit_w);

}  // namespace gb::sys
