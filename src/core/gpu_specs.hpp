// core/gpu_specs.hpp: the documented spec table of GPUs (datasheet peaks per precision, memory
// bandwidth, PCIe link) and the per-architecture per-SM rates used to compute a peak from the
// device itself (SMs x FLOP per SM per clock x clock), so unknown GPUs still get a reference.
// Every figure names its source; docs/gpu-specs.md lists them. No hardware number lives
// anywhere else in the code.
#pragma once
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace gb {

enum class GemmPrecision { fp64, fp32, tf32, fp16, bf16, fp8, int8 };
inline constexpr GemmPrecision kAllGemmPrecisions[] = {
    GemmPrecision::fp64, GemmPrecision::fp32, GemmPrecision::tf32, GemmPrecision::fp16,
    GemmPrecision::bf16, GemmPrecision::fp8,  GemmPrecision::int8};
std::string_view precision_key(GemmPrecision p);    // "fp64", "fp32", ... (used in result keys)
std::string_view precision_label(GemmPrecision p);  // "FP64", "FP32 (no tensor cores)", "TF32", ...
std::string_view precision_unit(GemmPrecision p);   // "TFLOP/s" or "TOP/s" (int8)

// Dense (no sparsity) datasheet peaks. 0 means the card has no such path.
struct GpuSpec {
  std::string_view name;             // "NVIDIA H200 SXM 141GB"
  std::string_view match;            // device-name substring(s) it matches, '|' separated
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  double boost_clock_mhz = 0;
  double memory_gb = 0;
  double fp64_tflops = 0;  // best FP64 path (tensor cores where the card has FP64 MMA)
  double fp32_tflops = 0;  // FP32 on CUDA cores (no tensor cores)
  double tf32_tflops = 0;
  double fp16_tflops = 0;  // FP16 inputs, FP32 accumulation
  double bf16_tflops = 0;
  double fp8_tflops = 0;
  double int8_tops = 0;
  double mem_bandwidth_gbps = 0;  // GB/s (1e9 bytes/s)
  int pcie_gen = 0;
  int pcie_width = 0;
  std::string_view source;  // datasheet / whitepaper the figures come from
  double peak(GemmPrecision p) const;
};

std::span<const GpuSpec> gpu_spec_table();
// Finds the entry for a device name (as CUDA or NVML reports it); memory size separates
// variants (A100 40 vs 80 GB). nullptr when unknown.
const GpuSpec* find_gpu_spec(std::string_view device_name, std::optional<double> memory_gb = {});

// Dense FLOP (or integer OP) per SM per clock for an architecture, from the architecture
// whitepapers; nullopt when unknown or when the architecture has no such path.
std::optional<double> flops_per_sm_per_clock(int cc_major, int cc_minor, GemmPrecision p);
// SMs x rate x clock, in TFLOP/s.
std::optional<double> computed_peak_tflops(int cc_major, int cc_minor, int sm_count,
                                           double clock_mhz, GemmPrecision p);
// Bus width (bits) x memory clock (MHz) x 2 (double data rate) / 8, in GB/s.
double computed_mem_bandwidth_gbps(int bus_width_bits, double mem_clock_mhz);
// Per-direction PCIe payload bandwidth before protocol overhead: GT/s x encoding x lanes / 8.
std::optional<double> pcie_link_gbps(int generation, int width);
// Per-direction data rate of one NVLink, in GB/s, from NVML's nvmlNvlinkVersion_t (1 = 1.0,
// 2 = 2.0, 3 = 2.2, 4 = 3.0, 5 = 3.1, 6 = 4.0, 7 = 5.0): 20 (1.0), 25 (2.x, 3.x, 4.0), 50 (5.0).
// cc_major caps what the GPU's architecture can have (Hopper, 9: NVLink 4 at most; some drivers
// report 5.0 on H100). docs/gpu-specs.md.
std::optional<double> nvlink_gbps_per_link(int nvml_version, int cc_major);
// "NVLink 4" for nvmlNvlinkVersion_t 6, with the same cap; "NVLink" when unknown.
std::string nvlink_version_name(int nvml_version, int cc_major);

}  // namespace gb
