// core/gpu_specs.cpp: the spec table (one row per GPU product, dense datasheet peaks) and the
// per-architecture per-SM rates. Every figure, its source and the conversions (sparse -> dense,
// 1/64-rate FP64 on parts whose datasheet omits it) are listed in docs/gpu-specs.md; change both
// together.
#include "core/gpu_specs.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <string>
#include <vector>

namespace gb {

std::string_view precision_key(GemmPrecision p) {
  switch (p) {
    case GemmPrecision::fp64:
      return "fp64";
    case GemmPrecision::fp32:
      return "fp32";
    case GemmPrecision::tf32:
      return "tf32";
    case GemmPrecision::fp16:
      return "fp16";
    case GemmPrecision::bf16:
      return "bf16";
    case GemmPrecision::fp8:
      return "fp8";
    case GemmPrecision::int8:
      return "int8";
  }
  return "unknown";
}

std::string_view precision_label(GemmPrecision p) {
  switch (p) {
    case GemmPrecision::fp64:
      return "FP64";
    case GemmPrecision::fp32:
      return "FP32 (no tensor cores)";
    case GemmPrecision::tf32:
      return "TF32";
    case GemmPrecision::fp16:
      return "FP16";
    case GemmPrecision::bf16:
      return "BF16";
    case GemmPrecision::fp8:
      return "FP8";
    case GemmPrecision::int8:
      return "INT8";
  }
  return "unknown";
}

std::string_view precision_unit(GemmPrecision p) {
  return p == GemmPrecision::int8 ? "TOP/s" : "TFLOP/s";
}

double GpuSpec::peak(GemmPrecision p) const {
  switch (p) {
    case GemmPrecision::fp64:
      return fp64_tflops;
    case GemmPrecision::fp32:
      return fp32_tflops;
    case GemmPrecision::tf32:
      return tf32_tflops;
    case GemmPrecision::fp16:
      return fp16_tflops;
    case GemmPrecision::bf16:
      return bf16_tflops;
    case GemmPrecision::fp8:
      return fp8_tflops;
    case GemmPrecision::int8:
      return int8_tops;
  }
  return 0;
}

namespace {

// Source strings, shared by the rows that come from the same document.
constexpr std::string_view kA100Source =
    "NVIDIA A100 Tensor Core GPU datasheet (nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf, "
    "https://www.nvidia.com/en-us/data-center/a100/); SMs and boost clock: NVIDIA A100 Tensor "
    "Core GPU Architecture whitepaper";
constexpr std::string_view kH100Source =
    "NVIDIA H100 Tensor Core GPU datasheet (https://www.nvidia.com/en-us/data-center/h100/), "
    "sparse figures halved; SMs and clocks: NVIDIA H100 Tensor Core GPU Architecture whitepaper";
constexpr std::string_view kH100NvlSource =
    "NVIDIA H100 Tensor Core GPU datasheet, H100 NVL column "
    "(https://www.nvidia.com/en-us/data-center/h100/), sparse figures halved; clock: H100 NVL "
    "product brief";
constexpr std::string_view kH200Source =
    "NVIDIA H200 Tensor Core GPU datasheet (https://www.nvidia.com/en-us/data-center/h200/), "
    "sparse figures halved; SMs and clocks as H100 SXM5 (same GH100 compute)";
constexpr std::string_view kH200NvlSource =
    "NVIDIA H200 Tensor Core GPU datasheet, H200 NVL column "
    "(https://www.nvidia.com/en-us/data-center/h200/), sparse figures halved";
constexpr std::string_view kL40sSource =
    "NVIDIA L40S datasheet (https://www.nvidia.com/en-us/data-center/l40s/), sparse figures "
    "halved; FP64 = FP32/64 (Ada Lovelace architecture whitepaper: 2 FP64 units per SM)";
constexpr std::string_view kL4Source =
    "NVIDIA L4 Tensor Core GPU datasheet (https://www.nvidia.com/en-us/data-center/l4/), sparse "
    "figures halved; FP64 = FP32/64 (Ada Lovelace architecture whitepaper)";
constexpr std::string_view kA10Source =
    "NVIDIA A10 Tensor Core GPU datasheet (https://www.nvidia.com/en-us/data-center/products/"
    "a10-gpu/), sparse figures halved; FP64 = FP32/64 (NVIDIA Ampere GA102 GPU Architecture "
    "whitepaper: 2 FP64 units per SM)";
constexpr std::string_view kRtx4090Source =
    "NVIDIA Ada Lovelace GPU Architecture whitepaper v2.1, RTX 4090 column (tensor figures with "
    "FP32 accumulate, which GeForce runs at half the FP16-accumulate rate); FP64 = FP32/64";

// name, match, cc, SMs, boost MHz, memory GB,
// fp64, fp32, tf32, fp16, bf16, fp8, int8 (dense TFLOP/s, TOP/s), memory GB/s, PCIe gen, width.
constexpr std::array<GpuSpec, 13> kSpecs{{
    {"NVIDIA A100 SXM4 40GB", "A100 SXM4 40GB|A100 SXM4|A100", 8, 0, 108, 1410, 40,
     19.5, 19.5, 156, 312, 312, 0, 624, 1555, 4, 16, kA100Source},
    {"NVIDIA A100 SXM4 80GB", "A100 SXM4 80GB|A100 SXM4|A100", 8, 0, 108, 1410, 80,
     19.5, 19.5, 156, 312, 312, 0, 624, 2039, 4, 16, kA100Source},
    {"NVIDIA A100 PCIe 40GB", "A100 PCIE 40GB|A100 PCIE|A100", 8, 0, 108, 1410, 40,
     19.5, 19.5, 156, 312, 312, 0, 624, 1555, 4, 16, kA100Source},
    {"NVIDIA A100 PCIe 80GB", "A100 PCIE 80GB|A100 PCIE|A100", 8, 0, 108, 1410, 80,
     19.5, 19.5, 156, 312, 312, 0, 624, 1935, 4, 16, kA100Source},
    {"NVIDIA H100 SXM5 80GB", "H100 HBM3|H100 SXM5|H100 SXM", 9, 0, 132, 1980, 80,
     67, 67, 494.7, 989.4, 989.4, 1978.9, 1978.9, 3350, 5, 16, kH100Source},
    {"NVIDIA H100 PCIe 80GB", "H100 PCIE", 9, 0, 114, 1755, 80,
     51, 51, 378, 756, 756, 1513, 1513, 2000, 5, 16, kH100Source},
    {"NVIDIA H100 NVL 94GB", "H100 NVL", 9, 0, 132, 1785, 94,
     60, 60, 417.5, 835.5, 835.5, 1670.5, 1670.5, 3900, 5, 16, kH100NvlSource},
    {"NVIDIA H200 SXM 141GB", "H200", 9, 0, 132, 1980, 141,
     67, 67, 494.7, 989.4, 989.4, 1978.9, 1978.9, 4800, 5, 16, kH200Source},
    {"NVIDIA H200 NVL 141GB", "H200 NVL", 9, 0, 132, 1785, 141,
     60, 60, 417.5, 835.5, 835.5, 1670.5, 1670.5, 4800, 5, 16, kH200NvlSource},
    {"NVIDIA L40S", "L40S", 8, 9, 142, 2520, 48,
     1.43, 91.6, 183, 362.05, 362.05, 733, 733, 864, 4, 16, kL40sSource},
    {"NVIDIA L4", "L4", 8, 9, 58, 2040, 24,
     0.47, 30.3, 60, 121, 121, 242.5, 242.5, 300, 4, 16, kL4Source},
    {"NVIDIA A10", "A10", 8, 6, 72, 1695, 24,
     0.49, 31.2, 62.5, 125, 125, 0, 250, 600, 4, 16, kA10Source},
    {"NVIDIA GeForce RTX 4090", "RTX 4090", 8, 9, 128, 2520, 24,
     1.29, 82.6, 82.6, 165.2, 165.2, 330.3, 660.6, 1008, 4, 16, kRtx4090Source},
}};

// Upper-case words of a device name; '-' and '_' separate words too, so
// "NVIDIA A100-SXM4-80GB" and "NVIDIA A100 80GB PCIe" both yield whole tokens.
std::vector<std::string> name_tokens(std::string_view name) {
  std::vector<std::string> tokens;
  std::string current;
  for (const char c : name) {
    if (c == ' ' || c == '-' || c == '_' || c == '\t') {
      if (!current.empty()) tokens.push_back(std::move(current));
      current.clear();
    } else {
      current.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
    }
  }
  if (!current.empty()) tokens.push_back(std::move(current));
  return tokens;
}

// Number of tokens of the best alternative in `match` whose tokens all occur in the name;
// 0 when none does. Whole-token comparison keeps "A10" from matching "A100" and "L4" from
// matching "L40S".
std::size_t match_specificity(std::string_view match, const std::vector<std::string>& tokens) {
  std::size_t best = 0;
  std::size_t start = 0;
  while (start <= match.size()) {
    const std::size_t bar = std::min(match.find('|', start), match.size());
    const auto alternative = name_tokens(match.substr(start, bar - start));
    const bool all_present =
        !alternative.empty() &&
        std::all_of(alternative.begin(), alternative.end(), [&](const std::string& t) {
          return std::find(tokens.begin(), tokens.end(), t) != tokens.end();
        });
    if (all_present) best = std::max(best, alternative.size());
    start = bar + 1;
  }
  return best;
}

}  // namespace

std::span<const GpuSpec> gpu_spec_table() { return kSpecs; }

const GpuSpec* find_gpu_spec(std::string_view device_name, std::optional<double> memory_gb) {
  const auto tokens = name_tokens(device_name);
  std::size_t best_specificity = 0;
  std::vector<const GpuSpec*> candidates;
  for (const GpuSpec& spec : kSpecs) {
    const std::size_t s = match_specificity(spec.match, tokens);
    if (s == 0 || s < best_specificity) continue;
    if (s > best_specificity) candidates.clear();
    best_specificity = s;
    candidates.push_back(&spec);
  }
  if (candidates.size() == 1) return candidates.front();
  // Several products fit the name equally well ("NVIDIA A100-SXM4"): the memory size decides.
  // Nearest capacity works whether the caller passes GB or GiB (40 vs 80 differ by far more).
  if (candidates.empty() || !memory_gb) return nullptr;
  auto distance = [&](const GpuSpec* s) { return std::fabs(s->memory_gb - *memory_gb); };
  std::sort(candidates.begin(), candidates.end(),
            [&](const GpuSpec* a, const GpuSpec* b) { return distance(a) < distance(b); });
  if (distance(candidates[0]) == distance(candidates[1])) return nullptr;  // still ambiguous
  return candidates.front();
}

std::optional<double> flops_per_sm_per_clock(int cc_major, int cc_minor, GemmPrecision p) {
  // Dense FLOP per SM per clock (one FMA = 2 FLOP); 0 = the architecture has no such path.
  // Order: fp64 (best path), fp32 (CUDA cores), tf32, fp16, bf16, fp8, int8. Sources and the
  // napkin math that ties each row to a datasheet figure are in docs/gpu-specs.md.
  struct ArchRates {
    int major, minor;
    std::array<double, 7> rates;
  };
  static constexpr std::array<ArchRates, 5> kArch{{
      {8, 0, {128, 128, 1024, 2048, 2048, 0, 4096}},           // A100: FP64 via tensor cores
      {8, 6, {4, 256, 512, 1024, 1024, 0, 2048}},              // GA10x (A10, A40)
      {8, 9, {4, 256, 512, 1024, 1024, 2048, 2048}},           // Ada (L40S, L4)
      {9, 0, {256, 256, 2048, 4096, 4096, 8192, 8192}},        // Hopper (H100, H200)
      {10, 0, {128, 256, 4096, 8192, 8192, 16384, 16384}},     // Blackwell B200 (derived)
  }};
  for (const auto& arch : kArch) {
    if (arch.major != cc_major || arch.minor != cc_minor) continue;
    const double rate = arch.rates[static_cast<std::size_t>(p)];
    if (rate <= 0) return std::nullopt;
    return rate;
  }
  return std::nullopt;
}

std::optional<double> computed_peak_tflops(int cc_major, int cc_minor, int sm_count,
                                           double clock_mhz, GemmPrecision p) {
  const auto rate = flops_per_sm_per_clock(cc_major, cc_minor, p);
  if (!rate || sm_count <= 0 || clock_mhz <= 0) return std::nullopt;
  // SMs x FLOP/clk/SM x clock: 132 x 4096 x 1.98e9 = 1.07e15 FLOP/s for H200 BF16.
  return static_cast<double>(sm_count) * *rate * clock_mhz * 1e6 / 1e12;
}

double computed_mem_bandwidth_gbps(int bus_width_bits, double mem_clock_mhz) {
  if (bus_width_bits <= 0 || mem_clock_mhz <= 0) return 0;
  // H100 SXM5: 5120 bit x 2619 MHz x 2 / 8 = 3352 GB/s.
  return static_cast<double>(bus_width_bits) * mem_clock_mhz * 2.0 / 8.0 / 1000.0;
}

std::optional<double> pcie_link_gbps(int generation, int width) {
  if (width <= 0 || width > 32) return std::nullopt;
  double gt_per_s = 0;
  double efficiency = 0;
  switch (generation) {
    case 1: gt_per_s = 2.5; efficiency = 8.0 / 10.0; break;
    case 2: gt_per_s = 5.0; efficiency = 8.0 / 10.0; break;
    case 3: gt_per_s = 8.0; efficiency = 128.0 / 130.0; break;
    case 4: gt_per_s = 16.0; efficiency = 128.0 / 130.0; break;
    case 5: gt_per_s = 32.0; efficiency = 128.0 / 130.0; break;
    // Gen6 runs FLIT mode: a 256-byte flit carries 236 B of TLP and 6 B of DLLP; the other
    // 14 B are CRC and FEC. 242/256 is the share left for the link layer, the counterpart of
    // 128/130 (which also leaves DLLP and TLP headers in).
    case 6: gt_per_s = 64.0; efficiency = 242.0 / 256.0; break;
    default: return std::nullopt;
  }
  // Gen5 x16: 32 GT/s x 128/130 x 16 lanes / 8 bit = 63.0 GB/s per direction.
  return gt_per_s * efficiency * width / 8.0;
}

namespace {

// The NVLink generation an NVML version value means, capped by the architecture: Volta (7) has
// NVLink 2, Ampere (8) 3, Hopper (9) 4; Blackwell (10+) 5.
int nvlink_generation(int nvml_version, int cc_major) {
  int gen = 0;
  switch (nvml_version) {
    case 1: gen = 1; break;
    case 2: case 3: gen = 2; break;
    case 4: case 5: gen = 3; break;
    case 6: gen = 4; break;
    case 7: gen = 5; break;
    default: return 0;
  }
  const int cap = cc_major <= 6 ? 1 : cc_major == 7 ? 2 : cc_major == 8 ? 3 : cc_major == 9 ? 4 : 5;
  return std::min(gen, cap);
}

}  // namespace

std::optional<double> nvlink_gbps_per_link(int nvml_version, int cc_major) {
  // Per direction per link: NVLink 1 20 GB/s (P100); 2, 3 and 4 25 GB/s (V100: 6 links = 150,
  // A100: 12 links = 300, H100/H200: 18 links = 450 per direction, 900 GB/s both ways); 5
  // 50 GB/s (B200: 18 links = 900 per direction).
  switch (nvlink_generation(nvml_version, cc_major)) {
    case 1: return 20.0;
    case 2: case 3: case 4: return 25.0;
    case 5: return 50.0;
    default: return std::nullopt;
  }
}

std::string nvlink_version_name(int nvml_version, int cc_major) {
  const int gen = nvlink_generation(nvml_version, cc_major);
  return gen > 0 ? "NVLink " + std::to_string(gen) : "NVLink";
}

}  // namespace gb
