// test_sys_telemetry.cpp: summarize() over hand-built sample series, and the background sampler
// against the fake libnvidia-ml (tests/fixtures/fake_nvml).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "sys/telemetry.hpp"

namespace gb::sys {
namespace {

NvmlSample sample_at(double t_s, double sm_mhz, double power_w, double temp_c) {
  NvmlSample s;
  s.t_s = t_s;
  s.sm_clock_mhz = sm_mhz;
  s.mem_clock_mhz = 3201;
  s.power_w = power_w;
  s.temp_c = temp_c;
  return s;
}

std::optional<NvmlDevice> fake_device(const char* scenario, Nvml& keep_loaded) {
  setenv("GPUBASE_FAKE_NVML_SCENARIO", scenario, 1);
  keep_loaded = Nvml::load_from(GPUBASE_FAKE_NVML_PATH);
  return keep_loaded.device(0);
}

TEST(Summarize, EmptySeriesHasNoSamplesAndNoFields) {
  const Telemetry t = summarize({}, std::nullopt);
  EXPECT_EQ(t.samples, 0u);
  EXPECT_FALSE(t.sm_clock_mhz_min || t.sm_clock_mhz_max || t.sm_clock_mhz_mean);
  EXPECT_FALSE(t.mem_clock_mhz_mean || t.power_w_mean || t.power_w_max || t.power_limit_w);
  EXPECT_FALSE(t.temp_c_max || t.throttle_reasons || t.pcie_replay_delta);
  EXPECT_FALSE(t.pcie_gen_min || t.pcie_gen_max || t.pcie_width_min || t.pcie_width_max);
}

TEST(Summarize, ComputesClockPowerAndTemperatureStatistics) {
  const std::vector<NvmlSample> series = {sample_at(0.00, 1980, 300, 60),
                                          sample_at(0.02, 1900, 400, 65),
                                          sample_at(0.04, 1840, 500, 63)};
  const Telemetry t = summarize(series, 700.0);
  EXPECT_EQ(t.samples, 3u);
  EXPECT_EQ(t.sm_clock_mhz_min, 1840.0);
  EXPECT_EQ(t.sm_clock_mhz_max, 1980.0);
  ASSERT_TRUE(t.sm_clock_mhz_mean.has_value());
  EXPECT_NEAR(*t.sm_clock_mhz_mean, (1980.0 + 1900.0 + 1840.0) / 3, 1e-9);
  EXPECT_EQ(t.mem_clock_mhz_mean, 3201.0);
  EXPECT_EQ(t.power_w_mean, 400.0);
  EXPECT_EQ(t.power_w_max, 500.0);
  EXPECT_EQ(t.power_limit_w, 700.0);
  EXPECT_EQ(t.temp_c_max, 65.0);
}

TEST(Summarize, StatisticsCoverOnlySamplesThatHaveTheField) {
  std::vector<NvmlSample> series = {sample_at(0.00, 1980, 300, 60), sample_at(0.02, 1800, 500, 70)};
  series[1].power_w.reset();
  const Telemetry t = summarize(series, std::nullopt);
  EXPECT_EQ(t.samples, 2u);
  EXPECT_EQ(t.power_w_mean, 300.0);
  EXPECT_EQ(t.power_w_max, 300.0);
  EXPECT_EQ(t.sm_clock_mhz_mean, 1890.0);
  EXPECT_FALSE(t.throttle_reasons.has_value());  // no sample reported reasons
}

TEST(Summarize, OrsTheThrottleReasonsOfAllSamples) {
  std::vector<NvmlSample> series(3);
  series[0].throttle_reasons = 0x4;
  series[1].throttle_reasons = 0x0;
  series[2].throttle_reasons = 0x40;
  EXPECT_EQ(summarize(series, std::nullopt).throttle_reasons, 0x44u);
}

TEST(Summarize, TracksPcieRangeAndReplayDelta) {
  std::vector<NvmlSample> series(3);
  const int gens[] = {5, 3, 5};
  const int widths[] = {16, 8, 16};
  const std::uint64_t replays[] = {10, 12, 19};
  for (int i = 0; i < 3; ++i) {
    series[i].pcie_gen = gens[i];
    series[i].pcie_width = widths[i];
    series[i].pcie_replay_counter = replays[i];
  }
  const Telemetry t = summarize(series, std::nullopt);
  EXPECT_EQ(t.pcie_gen_min, 3);
  EXPECT_EQ(t.pcie_gen_max, 5);
  EXPECT_EQ(t.pcie_width_min, 8);
  EXPECT_EQ(t.pcie_width_max, 16);
  EXPECT_EQ(t.pcie_replay_delta, 9u);
}

TEST(Summarize, ReplayCounterThatWentBackwardsGivesNoDelta) {
  std::vector<NvmlSample> series(2);
  series[0].pcie_replay_counter = 50;
  series[1].pcie_replay_counter = 3;
  EXPECT_FALSE(summarize(series, std::nullopt).pcie_replay_delta.has_value());
}

TEST(TelemetrySampler, WithoutDeviceRecordsNothing) {
  TelemetrySampler sampler(std::nullopt, std::chrono::milliseconds(1));
  sampler.start();
  const Telemetry t = sampler.stop();
  EXPECT_EQ(t.samples, 0u);
  EXPECT_FALSE(t.sm_clock_mhz_max.has_value());
  EXPECT_FALSE(t.power_limit_w.has_value());
  EXPECT_TRUE(sampler.samples().empty());
}

TEST(TelemetrySampler, CollectsSamplesFromTheFakeLibrary) {
  Nvml nvml;
  auto device = fake_device("healthy", nvml);
  ASSERT_TRUE(device.has_value()) << nvml.unavailable_reason();
  TelemetrySampler sampler(device, std::chrono::milliseconds(2));
  sampler.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  const Telemetry t = sampler.stop();
  EXPECT_GE(t.samples, 1u);
  EXPECT_EQ(t.sm_clock_mhz_max, 1980.0);
  EXPECT_EQ(t.power_limit_w, 700.0);
  EXPECT_EQ(t.pcie_gen_min, 5);
  const std::vector<NvmlSample> samples = sampler.samples();
  ASSERT_EQ(samples.size(), t.samples);
  for (std::size_t i = 1; i < samples.size(); ++i) EXPECT_GE(samples[i].t_s, samples[i - 1].t_s);
}

TEST(TelemetrySampler, StopRightAfterStartStillHasOneSample) {
  Nvml nvml;
  auto device = fake_device("healthy", nvml);
  ASSERT_TRUE(device.has_value()) << nvml.unavailable_reason();
  TelemetrySampler sampler(device, std::chrono::seconds(10));
  sampler.start();
  const auto t0 = std::chrono::steady_clock::now();
  const Telemetry t = sampler.stop();
  EXPECT_GE(t.samples, 1u);
  // A 10 s interval must not hold stop() for 10 s.
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
}

TEST(TelemetrySampler, SeesThermalThrottlingAndFallingClock) {
  Nvml nvml;
  auto device = fake_device("throttled_thermal", nvml);
  ASSERT_TRUE(device.has_value()) << nvml.unavailable_reason();
  TelemetrySampler sampler(device, std::chrono::milliseconds(2));
  sampler.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const Telemetry t = sampler.stop();
  ASSERT_GE(t.samples, 2u);
  EXPECT_LT(t.sm_clock_mhz_min.value_or(0), t.sm_clock_mhz_max.value_or(0));
  EXPECT_EQ(t.temp_c_max, 92.0);
  EXPECT_TRUE(is_slowdown(t.throttle_reasons.value_or(0)));
}

}  // namespace
}  // namespace gb::sys
