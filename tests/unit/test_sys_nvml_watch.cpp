// test_sys_nvml_watch.cpp: the NVML metrics behind `gpubase watch` (driver sample buffers,
// per-process utilization, PCIe throughput, HBM temperature, GPM counters) against the fake
// libnvidia-ml (tests/fixtures/fake_nvml), one behaviour per test.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "sys/nvml.hpp"

namespace gb::sys {
namespace {

// The fake's driver samples: six, 1/6 s apart (see fake_nvml.cpp).
constexpr std::uint64_t kSampleBaseUs = 1'700'000'000'000'000ULL;
constexpr std::uint64_t kSamplePeriodUs = 166'667;

Nvml load_fake(const char* scenario) {
  setenv("GPUBASE_FAKE_NVML_SCENARIO", scenario, 1);
  return Nvml::load_from(GPUBASE_FAKE_NVML_PATH);
}

// The fake's count of GPM sample buffers allocated and not freed; -1 if the hook is missing.
int fake_gpm_live_samples() {
  void* so = dlopen(GPUBASE_FAKE_NVML_PATH, RTLD_NOW | RTLD_NOLOAD);
  if (!so) return -1;
  using Fn = int (*)();
  const auto fn = reinterpret_cast<Fn>(dlsym(so, "fakeNvmlGpmLiveSamples"));
  const int live = fn ? fn() : -1;
  dlclose(so);
  return live;
}

TEST(NvmlWatch, GpuUtilizationSamplesComeBackInOrderWithValues) {
  const Nvml nvml = load_fake("healthy");
  const auto device = nvml.device(0);
  ASSERT_TRUE(device.has_value()) << nvml.unavailable_reason();
  const auto samples = device->utilization_samples(NvmlSampleKind::gpu_utilization, 0);
  ASSERT_EQ(samples.size(), 6u);
  const double expected[] = {97, 98, 99, 97, 98, 99};
  for (std::size_t i = 0; i < samples.size(); ++i) {
    EXPECT_EQ(samples[i].timestamp_us, kSampleBaseUs + i * kSamplePeriodUs) << i;
    EXPECT_EQ(samples[i].value_pct, expected[i]) << i;
  }
}

TEST(NvmlWatch, MemoryKindReadsTheMemoryUtilizationSamples) {
  const Nvml nvml = load_fake("healthy");
  const auto device = nvml.device(0);
  ASSERT_TRUE(device.has_value());
  const auto samples = device->utilization_samples(NvmlSampleKind::memory_utilization, 0);
  ASSERT_EQ(samples.size(), 6u);
  EXPECT_EQ(samples.front().value_pct, 70.0);
  EXPECT_EQ(samples.back().value_pct, 72.0);
}

TEST(NvmlWatch, SinceTimestampReturnsOnlyNewerSamples) {
  const Nvml nvml = load_fake("healthy");
  const auto device = nvml.device(0);
  ASSERT_TRUE(device.has_value());
  const std::uint64_t third = kSampleBaseUs + 2 * kSamplePeriodUs;
  const auto samples = device->utilization_samples(NvmlSampleKind::gpu_utilization, third);
  ASSERT_EQ(samples.size(), 3u);
  EXPECT_EQ(samples.front().timestamp_us, third + kSamplePeriodUs);
  EXPECT_EQ(samples.front().value_pct, 97.0);
}

TEST(NvmlWatch, SinceTheLatestTimestampGivesNoSamples) {
  const Nvml nvml = load_fake("healthy");
  const auto device = nvml.device(0);
  ASSERT_TRUE(device.has_value());
  const std::uint64_t last = kSampleBaseUs + 5 * kSamplePeriodUs;
  EXPECT_TRUE(device->utilization_samples(NvmlSampleKind::gpu_utilization, last).empty());
}

TEST(NvmlWatch, ProcessUtilizationAttributesTwoPids) {
  const Nvml nvml = load_fake("healthy");
  const auto device = nvml.device(0);
  ASSERT_TRUE(device.has_value());
  const auto processes = device->process_utilization(0);
  ASSERT_EQ(processes.size(), 2u);
  EXPECT_EQ(processes[0].pid, 4242u);
  EXPECT_EQ(processes[0].sm_pct, 60.0);
  EXPECT_EQ(processes[0].mem_pct, 40.0);
  EXPECT_EQ(processes[1].pid, 4243u);
  EXPECT_EQ(processes[1].sm_pct, 35.0);
}

TEST(NvmlWatch, ProcessUtilizationWithNothingNewerIsEmpty) {
  const Nvml nvml = load_fake("healthy");
  const auto device = nvml.device(0);
  ASSERT_TRUE(device.has_value());
  const std::uint64_t last = kSampleBaseUs + 5 * kSamplePeriodUs;
  EXPECT_TRUE(device->process_utilization(last).empty());  // NVML_ERROR_NOT_FOUND
}

TEST(NvmlWatch, PcieThroughputIsInBytesPerSecond) {
  const Nvml nvml = load_fake("healthy");
  const auto device = nvml.device(0);
  ASSERT_TRUE(device.has_value());
  const auto pcie = device->pcie_throughput();
  ASSERT_TRUE(pcie.has_value());
  EXPECT_EQ(pcie->rx_bytes_per_s, 12'000'000'000ULL);  // 11718750 KB/s
  EXPECT_EQ(pcie->tx_bytes_per_s, 1'464'843ULL * 1024);
}

TEST(NvmlWatch, WatchSampleAddsMemoryUseAndHbmTemperatureToTheSample) {
  const Nvml nvml = load_fake("healthy");
  const auto device = nvml.device(0);
  ASSERT_TRUE(device.has_value());
  const NvmlWatchSample s = device->watch_sample();
  EXPECT_EQ(s.sm_clock_mhz, 1980.0);  // the NvmlSample fields still read
  EXPECT_EQ(s.gpu_util_pct, 98.0);
  EXPECT_EQ(s.memory_used_bytes, 1024ULL * 1024 * 1024);
  EXPECT_EQ(s.memory_temp_c, 52.0);
  ASSERT_TRUE(s.pcie_throughput.has_value());
  EXPECT_EQ(s.pcie_throughput->rx_bytes_per_s, 12'000'000'000ULL);
}

TEST(NvmlWatch, UnsupportedHbmTemperatureFieldIsEmpty) {
  const Nvml nvml = load_fake("degraded_link");
  const auto device = nvml.device(0);
  ASSERT_TRUE(device.has_value());
  const NvmlWatchSample s = device->watch_sample();
  EXPECT_FALSE(s.memory_temp_c.has_value());
  EXPECT_TRUE(s.memory_used_bytes.has_value());  // its neighbours still read
}

TEST(NvmlWatch, GpmMetricsBetweenTwoTakesInHealthy) {
  const Nvml nvml = load_fake("healthy");
  const auto device = nvml.device(0);
  ASSERT_TRUE(device.has_value());
  GpmSampler gpm = device->gpm_sampler();
  ASSERT_TRUE(gpm.available()) << gpm.unavailable_reason();
  ASSERT_TRUE(gpm.take());
  ASSERT_TRUE(gpm.take());
  const auto m = gpm.metrics();
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->sm_active_pct, 92.0);
  EXPECT_EQ(m->sm_occupancy_pct, 48.0);
  EXPECT_EQ(m->tensor_active_pct, 85.0);
  EXPECT_EQ(m->dram_bw_pct, 61.0);
  EXPECT_GE(m->interval_s, 0.0);
}

TEST(NvmlWatch, GpmMetricsNeedTwoTakes) {
  const Nvml nvml = load_fake("healthy");
  const auto device = nvml.device(0);
  ASSERT_TRUE(device.has_value());
  GpmSampler gpm = device->gpm_sampler();
  ASSERT_TRUE(gpm.available()) << gpm.unavailable_reason();
  EXPECT_FALSE(gpm.metrics().has_value());
  ASSERT_TRUE(gpm.take());
  EXPECT_FALSE(gpm.metrics().has_value());
}

TEST(NvmlWatch, GpmSamplerKeepsTakingBetweenTheLastTwo) {
  const Nvml nvml = load_fake("healthy");
  const auto device = nvml.device(0);
  ASSERT_TRUE(device.has_value());
  GpmSampler gpm = device->gpm_sampler();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(gpm.take()) << i;
  // The fake rejects a pair whose first sample is not the earlier one.
  EXPECT_TRUE(gpm.metrics().has_value());
}

TEST(NvmlWatch, GpmSamplerFreesItsBuffers) {
  const Nvml nvml = load_fake("healthy");
  const auto device = nvml.device(0);
  ASSERT_TRUE(device.has_value());
  const int before = fake_gpm_live_samples();
  ASSERT_GE(before, 0);
  {
    GpmSampler gpm = device->gpm_sampler();
    ASSERT_TRUE(gpm.available()) << gpm.unavailable_reason();
    EXPECT_EQ(fake_gpm_live_samples(), before + 2);
    GpmSampler moved = std::move(gpm);
    EXPECT_TRUE(moved.take());
    EXPECT_EQ(fake_gpm_live_samples(), before + 2);
  }
  EXPECT_EQ(fake_gpm_live_samples(), before);
}

TEST(NvmlWatch, GpmUnavailableInThrottledThermalNamesTheReason) {
  const Nvml nvml = load_fake("throttled_thermal");
  const auto device = nvml.device(0);
  ASSERT_TRUE(device.has_value());
  GpmSampler gpm = device->gpm_sampler();
  EXPECT_FALSE(gpm.available());
  EXPECT_NE(gpm.unavailable_reason().find("nvmlGpmQueryDeviceSupport"), std::string::npos)
      << gpm.unavailable_reason();
  EXPECT_NE(gpm.unavailable_reason().find("NVML_ERROR_NOT_SUPPORTED"), std::string::npos)
      << gpm.unavailable_reason();
  EXPECT_FALSE(gpm.take());
  EXPECT_FALSE(gpm.metrics().has_value());
}

TEST(NvmlWatch, ThrottledThermalHasNoDriverOrProcessSamples) {
  const Nvml nvml = load_fake("throttled_thermal");
  const auto device = nvml.device(0);
  ASSERT_TRUE(device.has_value());
  EXPECT_TRUE(device->utilization_samples(NvmlSampleKind::gpu_utilization, 0).empty());
  EXPECT_TRUE(device->process_utilization(0).empty());
  EXPECT_EQ(device->watch_sample().memory_temp_c, 95.0);
}

TEST(NvmlWatch, StarvedCardSamplesAroundFortyPercentWithIdleTensorCores) {
  const Nvml nvml = load_fake("starved");
  const auto device = nvml.device(0);
  ASSERT_TRUE(device.has_value()) << nvml.unavailable_reason();
  const auto samples = device->utilization_samples(NvmlSampleKind::gpu_utilization, 0);
  ASSERT_EQ(samples.size(), 6u);
  for (const UtilSample& s : samples) {
    EXPECT_GE(s.value_pct, 35.0);
    EXPECT_LE(s.value_pct, 45.0);
  }
  GpmSampler gpm = device->gpm_sampler();
  ASSERT_TRUE(gpm.take());
  ASSERT_TRUE(gpm.take());
  const auto m = gpm.metrics();
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->tensor_active_pct, 3.0);
  EXPECT_EQ(m->sm_active_pct, 35.0);
}

TEST(NvmlWatch, BusyNoTensorCardIsBusyWithIdleTensorCores) {
  const Nvml nvml = load_fake("busy_no_tensor");
  const auto device = nvml.device(0);
  ASSERT_TRUE(device.has_value()) << nvml.unavailable_reason();
  const auto samples = device->utilization_samples(NvmlSampleKind::gpu_utilization, 0);
  ASSERT_EQ(samples.size(), 6u);
  for (const UtilSample& s : samples) EXPECT_GE(s.value_pct, 98.0);
  GpmSampler gpm = device->gpm_sampler();
  ASSERT_TRUE(gpm.take());
  ASSERT_TRUE(gpm.take());
  const auto m = gpm.metrics();
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->sm_active_pct, 95.0);
  EXPECT_EQ(m->tensor_active_pct, 0.15);
}

TEST(NvmlWatch, WithoutALibraryEveryWatchQueryIsEmpty) {
  const Nvml nvml = Nvml::load_from("/nonexistent/libnvidia-ml.so.1");
  ASSERT_FALSE(nvml.available());
  EXPECT_FALSE(nvml.device(0).has_value());
  // A device with no library behind it (what a caller holding a stale handle would have).
  const NvmlDevice device(nullptr, nullptr);
  EXPECT_TRUE(device.utilization_samples(NvmlSampleKind::gpu_utilization, 0).empty());
  EXPECT_TRUE(device.process_utilization(0).empty());
  EXPECT_FALSE(device.pcie_throughput().has_value());
  const NvmlWatchSample s = device.watch_sample();
  EXPECT_FALSE(s.memory_used_bytes.has_value());
  EXPECT_FALSE(s.memory_temp_c.has_value());
  EXPECT_FALSE(s.sm_clock_mhz.has_value());
  GpmSampler gpm = device.gpm_sampler();
  EXPECT_FALSE(gpm.available());
  EXPECT_FALSE(gpm.unavailable_reason().empty());
  EXPECT_FALSE(gpm.take());
  EXPECT_FALSE(gpm.metrics().has_value());
}

}  // namespace
}  // namespace gb::sys
