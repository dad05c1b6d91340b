// test_sys_nvml.cpp: NVML loading and queries against the fake libnvidia-ml
// (tests/fixtures/fake_nvml), one scripted card per scenario, plus the clock-event reason helpers.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "sys/nvml.hpp"

namespace gb::sys {
namespace {

// The fake re-reads the scenario on every call, so setting it before load_from is enough even
// though dlopen hands back the library already loaded by an earlier test.
Nvml load_fake(const char* scenario) {
  setenv("GPUBASE_FAKE_NVML_SCENARIO", scenario, 1);
  return Nvml::load_from(GPUBASE_FAKE_NVML_PATH);
}

constexpr std::uint64_t kSwPowerCap = 0x4;
constexpr std::uint64_t kHwSlowdown = 0x8;
constexpr std::uint64_t kSwThermalSlowdown = 0x20;
constexpr std::uint64_t kHwThermalSlowdown = 0x40;
constexpr std::uint64_t kHwPowerBrakeSlowdown = 0x80;

TEST(NvmlFake, HealthyCardReportsDriverAndOneDevice) {
  const Nvml nvml = load_fake("healthy");
  ASSERT_TRUE(nvml.available()) << nvml.unavailable_reason();
  EXPECT_EQ(nvml.driver_version(), "580.65.06");
  EXPECT_EQ(nvml.cuda_driver_version(), 13000);
  EXPECT_EQ(nvml.device_count(), 1);
}

TEST(NvmlFake, HealthyCardReportsItsStaticFacts) {
  const Nvml nvml = load_fake("healthy");
  const auto device = nvml.device(0);
  ASSERT_TRUE(device.has_value());
  const NvmlDeviceInfo info = device->info();
  EXPECT_EQ(info.name, "NVIDIA H200");
  EXPECT_EQ(info.uuid, "GPU-3f0c9a51-7d2e-4b86-a1c4-5e9d20b7f613");
  EXPECT_EQ(info.pci_bus_id, "0000:3B:00.0");
  EXPECT_EQ(info.memory_total_bytes, 143771ULL * 1024 * 1024);
  EXPECT_EQ(info.sm_clock_max_mhz, 1980.0);
  EXPECT_EQ(info.mem_clock_max_mhz, 3201.0);
  EXPECT_EQ(info.power_limit_w, 700.0);
  EXPECT_EQ(info.power_default_limit_w, 700.0);
  EXPECT_EQ(info.ecc_enabled, true);
  EXPECT_EQ(info.mig_enabled, false);
  EXPECT_EQ(info.persistence_enabled, true);
  EXPECT_EQ(info.pcie.gen_current, 5);
  EXPECT_EQ(info.pcie.gen_max_slot, 5);
  EXPECT_EQ(info.pcie.gen_max_gpu, 5);
  EXPECT_EQ(info.pcie.width_current, 16);
  EXPECT_EQ(info.pcie.width_max, 16);
}

TEST(NvmlFake, HealthyCardSampleReadsLiveState) {
  const Nvml nvml = load_fake("healthy");
  const auto device = nvml.device(0);
  ASSERT_TRUE(device.has_value());
  const NvmlSample s = device->sample();
  EXPECT_EQ(s.sm_clock_mhz, 1980.0);
  EXPECT_EQ(s.mem_clock_mhz, 3201.0);
  EXPECT_EQ(s.power_w, 350.0);
  EXPECT_EQ(s.temp_c, 45.0);
  EXPECT_EQ(s.throttle_reasons, 0u);
  EXPECT_EQ(s.pcie_gen, 5);
  EXPECT_EQ(s.pcie_width, 16);
  EXPECT_EQ(s.pcie_replay_counter, 0u);
  EXPECT_EQ(s.gpu_util_pct, 98.0);
  EXPECT_EQ(s.mem_util_pct, 71.0);
}

TEST(NvmlFake, CpuAffinityFallsBackToNvmlWhenSysfsLacksTheDevice) {
  if (std::filesystem::exists("/sys/bus/pci/devices/0000:3b:00.0")) {
    GTEST_SKIP() << "this host has a real PCI device at the fake card's bus id";
  }
  const Nvml nvml = load_fake("healthy");
  const auto device = nvml.device(0);
  ASSERT_TRUE(device.has_value());
  const NvmlDeviceInfo info = device->info();
  EXPECT_EQ(info.cpu_affinity, "0-15");
  EXPECT_FALSE(info.numa_node.has_value());
}

TEST(NvmlFake, DegradedLinkReadsGen3x8AgainstMaxGen5x16) {
  const Nvml nvml = load_fake("degraded_link");
  const auto device = nvml.device(0);
  ASSERT_TRUE(device.has_value());
  const NvmlDeviceInfo info = device->info();
  EXPECT_EQ(info.pcie.gen_current, 3);
  EXPECT_EQ(info.pcie.width_current, 8);
  EXPECT_EQ(info.pcie.gen_max_slot, 5);
  EXPECT_EQ(info.pcie.width_max, 16);
  const NvmlSample s = device->sample();
  EXPECT_EQ(s.pcie_gen, 3);
  EXPECT_EQ(s.pcie_width, 8);
}

TEST(NvmlFake, UnsupportedQueriesLeaveTheirFieldsEmpty) {
  const Nvml nvml = load_fake("degraded_link");
  const auto device = nvml.device(0);
  ASSERT_TRUE(device.has_value());
  const NvmlDeviceInfo info = device->info();
  EXPECT_FALSE(info.pcie.gen_max_gpu.has_value());
  EXPECT_FALSE(info.power_default_limit_w.has_value());
  EXPECT_EQ(info.power_limit_w, 700.0);  // its neighbours still read
}

TEST(NvmlFake, DegradedLinkReplayCounterGrowsBetweenSamples) {
  const Nvml nvml = load_fake("degraded_link");
  const auto device = nvml.device(0);
  ASSERT_TRUE(device.has_value());
  const auto first = device->sample().pcie_replay_counter;
  const auto second = device->sample().pcie_replay_counter;
  ASSERT_TRUE(first.has_value());
  ASSERT_TRUE(second.has_value());
  EXPECT_GT(*second, *first);
}

TEST(NvmlFake, ThrottledPowerReportsSwPowerCapNearTheLimit) {
  const Nvml nvml = load_fake("throttled_power");
  const auto device = nvml.device(0);
  ASSERT_TRUE(device.has_value());
  const NvmlSample s = device->sample();
  EXPECT_EQ(s.throttle_reasons, kSwPowerCap);
  ASSERT_TRUE(s.power_w.has_value());
  EXPECT_NEAR(*s.power_w, 690.0, 1.0);
  EXPECT_FALSE(is_slowdown(*s.throttle_reasons));
}

TEST(NvmlFake, ThrottledThermalReportsThermalSlowdownAndNoUtilization) {
  const Nvml nvml = load_fake("throttled_thermal");
  const auto device = nvml.device(0);
  ASSERT_TRUE(device.has_value());
  const NvmlSample s = device->sample();
  EXPECT_EQ(s.temp_c, 92.0);
  EXPECT_EQ(s.throttle_reasons, kHwThermalSlowdown | kSwThermalSlowdown);
  EXPECT_TRUE(is_slowdown(s.throttle_reasons.value_or(0)));
  EXPECT_FALSE(s.gpu_util_pct.has_value());
  EXPECT_FALSE(s.mem_util_pct.has_value());
}

TEST(NvmlFake, MissingLibraryIsUnavailableWithAReason) {
  const Nvml nvml = Nvml::load_from("/nonexistent/libnvidia-ml.so.1");
  EXPECT_FALSE(nvml.available());
  EXPECT_NE(nvml.unavailable_reason().find("not found: is the NVIDIA driver installed?"),
            std::string::npos)
      << nvml.unavailable_reason();
  EXPECT_EQ(nvml.device_count(), 0);
  EXPECT_FALSE(nvml.device(0).has_value());
  EXPECT_FALSE(nvml.driver_version().has_value());
  EXPECT_FALSE(nvml.cuda_driver_version().has_value());
}

TEST(NvmlFake, InitFailureIsUnavailableNamingTheError) {
  const Nvml nvml = load_fake("init_fails");
  EXPECT_FALSE(nvml.available());
  EXPECT_NE(nvml.unavailable_reason().find("NVML_ERROR_DRIVER_NOT_LOADED"), std::string::npos)
      << nvml.unavailable_reason();
  EXPECT_NE(nvml.unavailable_reason().find("Driver Not Loaded"), std::string::npos)
      << nvml.unavailable_reason();
  EXPECT_EQ(nvml.device_count(), 0);
}

TEST(NvmlFake, NoDeviceIsAvailableWithZeroDevices) {
  const Nvml nvml = load_fake("no_device");
  ASSERT_TRUE(nvml.available()) << nvml.unavailable_reason();
  EXPECT_EQ(nvml.device_count(), 0);
  EXPECT_FALSE(nvml.device(0).has_value());
  EXPECT_FALSE(nvml.device_by_pci_bus_id("0000:3B:00.0").has_value());
}

TEST(NvmlFake, DeviceByPciBusIdAcceptsCudaAndNvmlSpellings) {
  const Nvml nvml = load_fake("healthy");
  EXPECT_TRUE(nvml.device_by_pci_bus_id("0000:3B:00.0").has_value());
  EXPECT_TRUE(nvml.device_by_pci_bus_id("0000:3b:00.0").has_value());
  EXPECT_TRUE(nvml.device_by_pci_bus_id("00000000:3B:00.0").has_value());
  EXPECT_FALSE(nvml.device_by_pci_bus_id("0000:3C:00.0").has_value());
  EXPECT_FALSE(nvml.device_by_pci_bus_id("not a bus id").has_value());
}

TEST(NvmlFake, LoadHonoursTheLibraryOverrideVariable) {
  setenv("GPUBASE_FAKE_NVML_SCENARIO", "healthy", 1);
  setenv("GPUBASE_NVML_LIBRARY", GPUBASE_FAKE_NVML_PATH, 1);
  const Nvml nvml = Nvml::load();
  unsetenv("GPUBASE_NVML_LIBRARY");
  EXPECT_TRUE(nvml.available()) << nvml.unavailable_reason();
  EXPECT_EQ(nvml.device_count(), 1);
}

TEST(ThrottleReasonNames, NamesEachSetBitInBitOrder) {
  EXPECT_EQ(throttle_reason_names(kHwThermalSlowdown | kSwPowerCap),
            (std::vector<std::string>{"SwPowerCap", "HwThermalSlowdown"}));
  EXPECT_EQ(throttle_reason_names(0x1 | 0x2 | 0x10 | 0x100),
            (std::vector<std::string>{"GpuIdle", "ApplicationsClocksSetting", "SyncBoost",
                                      "DisplayClockSetting"}));
}

TEST(ThrottleReasonNames, NoBitsGiveNoNames) {
  EXPECT_TRUE(throttle_reason_names(0).empty());
}

TEST(ThrottleReasonNames, UnknownBitsAreShownNotDropped) {
  EXPECT_EQ(throttle_reason_names(std::uint64_t{1} << 40),
            (std::vector<std::string>{"Unknown(0x10000000000)"}));
}

TEST(IsSlowdown, ThermalHardwareAndPowerBrakeReasonsAreSlowdowns) {
  EXPECT_TRUE(is_slowdown(kHwSlowdown));
  EXPECT_TRUE(is_slowdown(kSwThermalSlowdown));
  EXPECT_TRUE(is_slowdown(kHwThermalSlowdown));
  EXPECT_TRUE(is_slowdown(kHwPowerBrakeSlowdown));
  EXPECT_TRUE(is_slowdown(kSwPowerCap | kHwSlowdown));
}

TEST(IsSlowdown, PowerCapIdleAndClockSettingsAreNot) {
  EXPECT_FALSE(is_slowdown(0));
  EXPECT_FALSE(is_slowdown(kSwPowerCap));
  EXPECT_FALSE(is_slowdown(0x1 | 0x2 | 0x10 | 0x100));
}

}  // namespace
}  // namespace gb::sys
