// tests/unit/test_report_fixture.hpp: realistic runs for the printer and diagnose tests, built
// the way `gpubase probe` builds them (info results with samples, datasheet references and
// telemetry; environment facts as bench/gpu/environment.cpp writes them), then judged by
// diagnose. Figures follow DESIGN.md's H200 measurements.
//   h200_degraded_link_run(): healthy GEMMs and HBM, one GEMM under a thermal slowdown, BF16 at
//                             the power cap, and a PCIe link that trained to Gen3 x8.
//   a100_run():               an older card: FP8 skipped, a slow D2H (warn), slow graph launches.
//   no_gpu_run():             no driver: every GPU section skipped.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/result.hpp"
#include "diagnose/diagnose.hpp"

namespace gb::test {

inline Telemetry telemetry(double sm_min, double sm_max, std::optional<double> power_w,
                           std::optional<double> limit_w, std::optional<double> temp_c,
                           std::uint64_t reasons) {
  Telemetry t;
  t.samples = 40;
  t.sm_clock_mhz_min = sm_min;
  t.sm_clock_mhz_max = sm_max;
  t.sm_clock_mhz_mean = (sm_min + sm_max) / 2;
  t.power_w_mean = power_w;
  t.power_w_max = power_w;
  t.power_limit_w = limit_w;
  t.temp_c_max = temp_c;
  t.throttle_reasons = reasons;
  return t;
}

inline Result gemm(const std::string& p, const std::string& label, std::vector<double> samples,
                   double datasheet, Telemetry t) {
  const std::string unit = p == "int8" ? "TOP/s" : "TFLOP/s";
  const std::string key = "probe.gemm." + p + (p == "int8" ? ".tops" : ".tflops");
  Result r = Result::measured(key, label, unit, std::move(samples));
  r.param("shape", "8192x8192x8192");
  r.reference("datasheet", datasheet, "spec table (docs/gpu-specs.md)");
  r.telemetry = t;
  return r;
}

inline Result bandwidth(const std::string& key, const std::string& label,
                        std::vector<double> samples, std::optional<Telemetry> t) {
  Result r = Result::measured(key, label, "GB/s", std::move(samples));
  r.telemetry = t;
  return r;
}

inline Result latency(const std::string& key, const std::string& label,
                      std::vector<double> samples) {
  return Result::measured(key, label, "µs", std::move(samples), false);
}

inline Result link(const std::string& key, const std::string& label, double value, int gen_max_slot,
                   int gen_max_gpu, int width_max) {
  Result r = Result::measured(key, label, "", {value});
  r.param("gen_max_slot", std::to_string(gen_max_slot));
  r.param("gen_max_gpu", std::to_string(gen_max_gpu));
  r.param("width_max", std::to_string(width_max));
  return r;
}

inline Run base_run(const std::string& started_at, double duration_s) {
  Run run;
  run.tool_version = "0.1.0";
  run.command = "probe";
  run.started_at = started_at;
  run.duration_s = duration_s;
  return run;
}

inline Run h200_degraded_link_run() {
  Run run = base_run("2026-12-02T11:02:03Z", 41.7);
  run.environment = {
      {"gpu.name", "GPU", "NVIDIA H200"},
      {"gpu.pci_bus_id", "PCI bus id", "00000000:19:00.0"},
      {"gpu.compute_capability", "compute capability", "9.0"},
      {"gpu.sm_count", "SMs", "132"},
      {"gpu.memory", "memory", "139.8 GiB"},
      {"gpu.sm_clock_max", "SM clock max", "1980 MHz"},
      {"gpu.ecc", "ECC", "enabled"},
      {"gpu.mig", "MIG", "disabled"},
      {"gpu.power_limit", "power limit", "700 W"},
      {"gpu.pcie.current", "PCIe link now (idle)", "Gen1 x8"},
      {"gpu.pcie.max_slot", "PCIe link max (slot and GPU)", "Gen5 x16"},
      {"gpu.pcie.max_gpu", "PCIe link max (GPU)", "Gen5 x16"},
      {"gpu.spec", "spec-table entry", "NVIDIA H200 SXM 141GB"},
      {"driver.version", "NVIDIA driver", "580.95.05"},
      {"cuda.runtime", "CUDA (runtime)", "13.0"},
      {"cublaslt.version", "cuBLASLt", "13.1.0"},
  };
  const Telemetry cool = telemetry(1980, 1980, 612, 700, 61, 0);
  const Telemetry capped = telemetry(1755, 1980, 690, 700, 66, 0x4);
  const Telemetry hot = telemetry(1290, 1980, 655, 700, 91, 0x4 | 0x40);
  run.results.push_back(gemm("fp64", "FP64 GEMM 8192³", {58.1, 58.4, 58.0, 57.9, 58.3}, 67, cool));
  run.results.push_back(gemm("fp32", "FP32 GEMM 8192³ (no tensor cores)",
                             {51.0, 51.2, 50.8, 51.1, 51.3}, 67, cool));
  run.results.push_back(gemm("tf32", "TF32 GEMM 8192³", {372, 375, 371, 374, 373}, 494.7, capped));
  run.results.push_back(gemm("bf16", "BF16 GEMM 8192³", {791, 789, 793, 790, 792}, 989.4, capped));
  run.results.back().reference("clock_adjusted", 1070.5, "132 SMs x 4096 FLOP/clk x 1980 MHz");
  run.results.push_back(gemm("fp8", "FP8 GEMM 8192³ (E4M3)", {1120, 1185, 1090, 1240, 1150},
                             1978.9, hot));
  run.results.push_back(gemm("int8", "INT8 GEMM 8192³", {1390, 1392, 1388, 1391, 1389}, 1978.9,
                             capped));
  Telemetry hbm = telemetry(1980, 1980, 410, 700, 55, 0);
  hbm.power_limit_w.reset();
  hbm.temp_c_max.reset();
  run.results.push_back(bandwidth("probe.memory.read.gbps", "HBM read", {4390, 4385, 4392}, hbm));
  run.results.push_back(bandwidth("probe.memory.copy.gbps", "HBM copy (read + write)",
                                  {4250, 4246, 4253}, hbm));
  Telemetry pcie = telemetry(1980, 1980, 120, 700, 40, 0);
  pcie.pcie_gen_min = 3;
  pcie.pcie_gen_max = 3;
  pcie.pcie_width_min = 8;
  pcie.pcie_width_max = 8;
  pcie.pcie_replay_delta = 0;
  run.results.push_back(bandwidth("probe.pcie.h2d.pinned.gbps", "H2D pinned, 256 MiB",
                                  {6.61, 6.60, 6.62}, pcie));
  run.results.push_back(bandwidth("probe.pcie.d2h.pinned.gbps", "D2H pinned, 256 MiB",
                                  {6.55, 6.54, 6.57}, pcie));
  run.results.push_back(bandwidth("probe.pcie.h2d.pageable.gbps", "H2D pageable, 256 MiB",
                                  {5.2, 5.4, 5.1}, pcie));
  run.results.push_back(link("probe.pcie.link.gen_under_load", "link generation under load", 3,
                             5, 5, 16));
  run.results.push_back(link("probe.pcie.link.width_under_load", "link width under load", 8, 5,
                             5, 16));
  run.results.push_back(Result::measured("probe.pcie.replay_delta", "PCIe replays", "count", {0}));
  run.results.push_back(latency("probe.latency.launch_host.us", "kernel launch, host side",
                                {2.4, 2.5, 2.3, 2.4, 2.6}));
  run.results.push_back(latency("probe.latency.graph_per_kernel.us",
                                "per kernel in a CUDA graph", {0.83, 0.84, 0.82}));
  diagnose::apply_verdicts(run);
  run.checklist = diagnose::build_checklist(run);
  return run;
}

inline Run a100_run() {
  Run run = base_run("2026-12-02T14:20:00Z", 38.2);
  run.environment = {
      {"gpu.name", "GPU", "NVIDIA A100-SXM4-40GB"},
      {"gpu.compute_capability", "compute capability", "8.0"},
      {"gpu.memory", "memory", "39.4 GiB"},
      {"gpu.sm_clock_max", "SM clock max", "1410 MHz"},
      {"gpu.pcie.max_slot", "PCIe link max (slot and GPU)", "Gen4 x16"},
      {"gpu.pcie.max_gpu", "PCIe link max (GPU)", "Gen4 x16"},
      {"driver.version", "NVIDIA driver", "N/A"},
  };
  const Telemetry t = telemetry(1410, 1410, 330, 400, 58, 0x4);
  run.results.push_back(gemm("tf32", "TF32 GEMM 8192³", {131, 132, 130}, 156, t));
  run.results.push_back(gemm("bf16", "BF16 GEMM 8192³", {262, 260, 259}, 312, t));
  run.results.push_back(Result::skipped(
      "probe.gemm.fp8.tflops", "FP8 GEMM 8192³ (E4M3)", "TFLOP/s",
      "FP8 tensor cores need compute capability 8.9 or newer; this card is 8.0"));
  Result copy = Result::measured("probe.memory.copy.gbps", "HBM copy (read + write)", "GB/s",
                                 {1370, 1368, 1372});
  run.results.push_back(copy);  // no telemetry: NVML was not available for this one
  run.results.push_back(bandwidth("probe.pcie.h2d.pinned.gbps", "H2D pinned, 256 MiB",
                                  {25.1, 25.0, 25.2}, std::nullopt));
  run.results.push_back(bandwidth("probe.pcie.d2h.pinned.gbps", "D2H pinned, 256 MiB",
                                  {22.0, 21.9, 22.1}, std::nullopt));
  run.results.push_back(link("probe.pcie.link.gen_under_load", "link generation under load", 4,
                             4, 4, 16));
  run.results.push_back(link("probe.pcie.link.width_under_load", "link width under load", 16, 4,
                             4, 16));
  run.results.push_back(latency("probe.latency.graph_per_kernel.us",
                                "per kernel in a CUDA graph", {7.1, 7.0, 7.3}));
  diagnose::apply_verdicts(run);
  run.checklist = diagnose::build_checklist(run);
  return run;
}

inline Run no_gpu_run() {
  Run run = base_run("2026-12-02T09:00:00Z", 0.4);
  const std::string reason =
      "no NVIDIA driver found (CUDA: driver version is insufficient); install the NVIDIA driver "
      "or run on a GPU host";
  run.environment = {{"gpu.available", "GPU", "none: " + reason}};
  for (const char* section : {"gemm", "memory", "pcie", "latency", "host"})
    run.results.push_back(Result::skipped(std::string("probe.") + section,
                                          std::string(section) + " section", "", reason));
  diagnose::apply_verdicts(run);
  run.checklist = diagnose::build_checklist(run);
  return run;
}

}  // namespace gb::test
