// tests/unit/test_core_gpu_specs.cpp: the spec table and the computed peaks. Device names are
// the strings CUDA/NVML report; the traps are prefixes ("NVIDIA H200" of "NVIDIA H200 NVL",
// "A10" of "A100", "L4" of "L40S") and products told apart only by memory size.
#include <gtest/gtest.h>

#include <string>

#include "core/gpu_specs.hpp"

namespace {

std::string spec_name(std::string_view device, std::optional<double> memory_gb = {}) {
  const gb::GpuSpec* s = gb::find_gpu_spec(device, memory_gb);
  return s ? std::string(s->name) : std::string("(none)");
}

}  // namespace

TEST(GpuSpecMatch, H200IsNotH200Nvl) {
  EXPECT_EQ(spec_name("NVIDIA H200"), "NVIDIA H200 SXM 141GB");
  EXPECT_EQ(spec_name("NVIDIA H200 NVL"), "NVIDIA H200 NVL 141GB");
}

TEST(GpuSpecMatch, A10IsNotA100) {
  EXPECT_EQ(spec_name("NVIDIA A10"), "NVIDIA A10");
  EXPECT_EQ(spec_name("NVIDIA A100-SXM4-40GB"), "NVIDIA A100 SXM4 40GB");
}

TEST(GpuSpecMatch, L4IsNotL40S) {
  EXPECT_EQ(spec_name("NVIDIA L4"), "NVIDIA L4");
  EXPECT_EQ(spec_name("NVIDIA L40S"), "NVIDIA L40S");
  EXPECT_EQ(spec_name("NVIDIA L40"), "(none)");  // not in the table: no wrong guess
}

TEST(GpuSpecMatch, EveryReportedNameFindsItsEntry) {
  EXPECT_EQ(spec_name("NVIDIA H100 80GB HBM3"), "NVIDIA H100 SXM5 80GB");
  EXPECT_EQ(spec_name("NVIDIA H100 PCIe"), "NVIDIA H100 PCIe 80GB");
  EXPECT_EQ(spec_name("NVIDIA H100 NVL"), "NVIDIA H100 NVL 94GB");
  EXPECT_EQ(spec_name("NVIDIA A100-SXM4-80GB"), "NVIDIA A100 SXM4 80GB");
  EXPECT_EQ(spec_name("NVIDIA A100-PCIE-40GB"), "NVIDIA A100 PCIe 40GB");
  EXPECT_EQ(spec_name("NVIDIA A100 80GB PCIe"), "NVIDIA A100 PCIe 80GB");
  EXPECT_EQ(spec_name("NVIDIA GeForce RTX 4090"), "NVIDIA GeForce RTX 4090");
}

TEST(GpuSpecMatch, MemorySizeSeparatesA100Variants) {
  // CUDA reports 79.2 GiB (85.1 GB) for the 80 GB card and 39.4 GiB for the 40 GB card.
  EXPECT_EQ(spec_name("NVIDIA A100-SXM4", 79.2), "NVIDIA A100 SXM4 80GB");
  EXPECT_EQ(spec_name("NVIDIA A100-SXM4", 39.4), "NVIDIA A100 SXM4 40GB");
  EXPECT_EQ(spec_name("NVIDIA A100 PCIe", 85.1), "NVIDIA A100 PCIe 80GB");
}

TEST(GpuSpecMatch, AmbiguousNameWithoutMemoryFindsNothing) {
  EXPECT_EQ(spec_name("NVIDIA A100-SXM4"), "(none)");
  EXPECT_EQ(spec_name("NVIDIA A100"), "(none)");
}

TEST(GpuSpecMatch, UnknownDeviceFindsNothing) {
  EXPECT_EQ(spec_name("NVIDIA GH200 480GB"), "(none)");
  EXPECT_EQ(spec_name(""), "(none)");
}

TEST(GpuSpecTable, H200AndH100SxmShareDatasheetCompute) {
  const gb::GpuSpec* h200 = gb::find_gpu_spec("NVIDIA H200");
  const gb::GpuSpec* h100 = gb::find_gpu_spec("NVIDIA H100 80GB HBM3");
  ASSERT_NE(h200, nullptr);
  ASSERT_NE(h100, nullptr);
  EXPECT_DOUBLE_EQ(h200->peak(gb::GemmPrecision::fp64), 67);
  EXPECT_DOUBLE_EQ(h200->peak(gb::GemmPrecision::fp32), 67);
  EXPECT_DOUBLE_EQ(h200->peak(gb::GemmPrecision::tf32), 494.7);
  EXPECT_DOUBLE_EQ(h200->peak(gb::GemmPrecision::bf16), 989.4);
  EXPECT_DOUBLE_EQ(h200->peak(gb::GemmPrecision::fp8), 1978.9);
  EXPECT_DOUBLE_EQ(h200->peak(gb::GemmPrecision::int8), 1978.9);
  EXPECT_EQ(h200->sm_count, 132);
  EXPECT_DOUBLE_EQ(h200->boost_clock_mhz, 1980);
  EXPECT_DOUBLE_EQ(h200->mem_bandwidth_gbps, 4800);
  EXPECT_DOUBLE_EQ(h200->memory_gb, 141);
  EXPECT_EQ(h200->pcie_gen, 5);
  EXPECT_EQ(h200->pcie_width, 16);
  for (const gb::GemmPrecision p : gb::kAllGemmPrecisions)
    EXPECT_DOUBLE_EQ(h100->peak(p), h200->peak(p));
  EXPECT_DOUBLE_EQ(h100->mem_bandwidth_gbps, 3350);
}

TEST(GpuSpecTable, GeForce4090RunsFp16WithFp32AccumulateAtHalfRate) {
  const gb::GpuSpec* rtx = gb::find_gpu_spec("NVIDIA GeForce RTX 4090");
  const gb::GpuSpec* l40s = gb::find_gpu_spec("NVIDIA L40S");
  ASSERT_NE(rtx, nullptr);
  ASSERT_NE(l40s, nullptr);
  // Same Ada rate per SM per clock; GeForce halves the FP32-accumulate tensor path.
  const double full_rate = 128 * 1024 * 2520e6 / 1e12;  // 330.3 TFLOP/s
  EXPECT_NEAR(rtx->peak(gb::GemmPrecision::fp16), full_rate / 2, 0.1);
  EXPECT_NEAR(rtx->peak(gb::GemmPrecision::bf16), full_rate / 2, 0.1);
}

TEST(GpuSpecTable, CardsWithoutFp8SayZero) {
  EXPECT_DOUBLE_EQ(gb::find_gpu_spec("NVIDIA A100-SXM4-80GB")->peak(gb::GemmPrecision::fp8), 0);
  EXPECT_DOUBLE_EQ(gb::find_gpu_spec("NVIDIA A10")->peak(gb::GemmPrecision::fp8), 0);
  EXPECT_GT(gb::find_gpu_spec("NVIDIA L4")->peak(gb::GemmPrecision::fp8), 0);
}

TEST(GpuSpecTable, EveryRowNamesItsSourceAndHasTheBasics) {
  EXPECT_GE(gb::gpu_spec_table().size(), 13u);
  for (const gb::GpuSpec& s : gb::gpu_spec_table()) {
    EXPECT_FALSE(s.source.empty()) << s.name;
    EXPECT_GT(s.sm_count, 0) << s.name;
    EXPECT_GT(s.boost_clock_mhz, 0) << s.name;
    EXPECT_GT(s.memory_gb, 0) << s.name;
    EXPECT_GT(s.mem_bandwidth_gbps, 0) << s.name;
    EXPECT_GT(s.fp32_tflops, 0) << s.name;
    EXPECT_GT(s.bf16_tflops, 0) << s.name;
    EXPECT_GE(s.pcie_gen, 4) << s.name;
    EXPECT_EQ(s.pcie_width, 16) << s.name;
  }
}

TEST(GpuSpecTable, FP32DatasheetAgreesWithSmsTimesRateTimesBoostClock) {
  // The table and the per-SM rates must tell the same story: FP32 is quoted at the boost clock.
  for (const gb::GpuSpec& s : gb::gpu_spec_table()) {
    const auto computed = gb::computed_peak_tflops(s.cc_major, s.cc_minor, s.sm_count,
                                                   s.boost_clock_mhz, gb::GemmPrecision::fp32);
    ASSERT_TRUE(computed) << s.name;
    EXPECT_NEAR(*computed, s.fp32_tflops, 0.03 * s.fp32_tflops) << s.name;
  }
}

TEST(ComputedPeak, H200Bf16At1980MHzIs1070TFlops) {
  const auto peak = gb::computed_peak_tflops(9, 0, 132, 1980, gb::GemmPrecision::bf16);
  ASSERT_TRUE(peak);
  EXPECT_NEAR(*peak, 1070.5, 0.1);  // 132 x 4096 x 1.98e9
}

TEST(ComputedPeak, PerSmRatesFollowTheWhitepapers) {
  EXPECT_EQ(gb::flops_per_sm_per_clock(9, 0, gb::GemmPrecision::fp32), 256);
  EXPECT_EQ(gb::flops_per_sm_per_clock(9, 0, gb::GemmPrecision::fp64), 256);
  EXPECT_EQ(gb::flops_per_sm_per_clock(9, 0, gb::GemmPrecision::tf32), 2048);
  EXPECT_EQ(gb::flops_per_sm_per_clock(9, 0, gb::GemmPrecision::fp16), 4096);
  EXPECT_EQ(gb::flops_per_sm_per_clock(9, 0, gb::GemmPrecision::fp8), 8192);
  EXPECT_EQ(gb::flops_per_sm_per_clock(9, 0, gb::GemmPrecision::int8), 8192);
  EXPECT_EQ(gb::flops_per_sm_per_clock(8, 0, gb::GemmPrecision::fp64), 128);
  EXPECT_EQ(gb::flops_per_sm_per_clock(8, 0, gb::GemmPrecision::tf32), 1024);
  EXPECT_EQ(gb::flops_per_sm_per_clock(8, 0, gb::GemmPrecision::fp16), 2048);
  EXPECT_EQ(gb::flops_per_sm_per_clock(8, 0, gb::GemmPrecision::int8), 4096);
}

TEST(ComputedPeak, A100At1410MHzMatchesItsDatasheet) {
  // 108 x 2048 x 1.41e9 = 311.9 TFLOP/s; the datasheet rounds to 312.
  EXPECT_NEAR(*gb::computed_peak_tflops(8, 0, 108, 1410, gb::GemmPrecision::fp16), 312, 0.5);
  EXPECT_NEAR(*gb::computed_peak_tflops(8, 0, 108, 1410, gb::GemmPrecision::tf32), 156, 0.5);
  EXPECT_NEAR(*gb::computed_peak_tflops(8, 0, 108, 1410, gb::GemmPrecision::fp64), 19.5, 0.05);
}

TEST(ComputedPeak, MissingPathOrArchitectureIsEmpty) {
  EXPECT_FALSE(gb::flops_per_sm_per_clock(8, 0, gb::GemmPrecision::fp8));   // A100 has no FP8
  EXPECT_FALSE(gb::flops_per_sm_per_clock(7, 5, gb::GemmPrecision::fp16));  // not in the table
  EXPECT_FALSE(gb::computed_peak_tflops(9, 0, 0, 1980, gb::GemmPrecision::bf16));
}

TEST(MemoryBandwidth, BusWidthTimesDoubleDataRate) {
  EXPECT_NEAR(gb::computed_mem_bandwidth_gbps(5120, 2619), 3352.3, 0.1);  // H100 SXM5
  EXPECT_NEAR(gb::computed_mem_bandwidth_gbps(384, 10501), 1008.1, 0.1);  // RTX 4090
  EXPECT_DOUBLE_EQ(gb::computed_mem_bandwidth_gbps(0, 2619), 0);
}

TEST(PcieLink, Gen5x16IsAbout63GBPerDirection) {
  EXPECT_NEAR(*gb::pcie_link_gbps(5, 16), 63.0, 0.05);
}

TEST(PcieLink, EncodingPerGeneration) {
  EXPECT_NEAR(*gb::pcie_link_gbps(1, 16), 4.0, 1e-9);    // 2.5 GT/s, 8b/10b
  EXPECT_NEAR(*gb::pcie_link_gbps(2, 16), 8.0, 1e-9);    // 5 GT/s, 8b/10b
  EXPECT_NEAR(*gb::pcie_link_gbps(3, 16), 15.75, 0.01);  // 8 GT/s, 128b/130b
  EXPECT_NEAR(*gb::pcie_link_gbps(4, 16), 31.5, 0.01);
  EXPECT_NEAR(*gb::pcie_link_gbps(6, 16), 121.0, 0.01);  // 64 GT/s, FLIT 242/256
  EXPECT_NEAR(*gb::pcie_link_gbps(3, 8), 7.88, 0.01);
}

TEST(PcieLink, UnknownGenerationOrWidthIsEmpty) {
  EXPECT_FALSE(gb::pcie_link_gbps(0, 16));
  EXPECT_FALSE(gb::pcie_link_gbps(7, 16));
  EXPECT_FALSE(gb::pcie_link_gbps(5, 0));
}

TEST(GemmPrecision, KeysLabelsAndUnits) {
  EXPECT_EQ(gb::precision_key(gb::GemmPrecision::bf16), "bf16");
  EXPECT_EQ(gb::precision_label(gb::GemmPrecision::fp32), "FP32 (no tensor cores)");
  EXPECT_EQ(gb::precision_unit(gb::GemmPrecision::int8), "TOP/s");
  EXPECT_EQ(gb::precision_unit(gb::GemmPrecision::fp8), "TFLOP/s");
}
