// tests/unit/test_report_fixture.hpp: realistic runs for the printer and diagnose tests, built
// the way `gpubase probe` builds them (info results with samples, datasheet references and
// telemetry; environment facts as bench/gpu/environment.cpp writes them), then judged by
// diagnose. Figures follow the H200 measurements of docs/pytorch-figures.md.
//   h200_degraded_link_run(): healthy GEMMs and HBM, one GEMM under a thermal slowdown, BF16 at
//                             the power cap, and a PCIe link that trained to Gen3 x8.
//   a100_run():               an older card: FP8 skipped, a slow D2H (warn), slow graph launches.
//   no_gpu_run():             no driver: every GPU section skipped.
//   watch_starved_run():      `gpubase watch` of a ResNet-50 job on an H200 with 16 cores and one
//                             DataLoader worker: GPU busy ~40 % while the worker pegs a core.
//                             Keys, labels and units as src/watch/summary.cpp writes them.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "bench/probe.hpp"
#include "core/result.hpp"
#include "diagnose/diagnose.hpp"
#include "watch/watch.hpp"

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

// Places the results in their suite's sections, as the suite's sink does.
inline void place_in_sections(Run& run, std::span<const SectionRule> rules) {
  bench::ResultSink sink;
  sink.declare_sections(rules);
  for (Result& r : run.results) sink.add(std::move(r));
  run.results = std::move(sink.results());
  run.sections = std::move(sink.sections());
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
      gb::Fact::numeric("gpu.memory", "memory", 139.8, "GiB", 1),
      gb::Fact::numeric("gpu.sm_clock_max", "SM clock max", 1980, "MHz", 0),
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
  place_in_sections(run, bench::probe_section_rules());
  diagnose::apply_verdicts(run);
  run.checklist = diagnose::build_checklist(run);
  return run;
}

inline Run a100_run() {
  Run run = base_run("2026-12-02T14:20:00Z", 38.2);
  run.environment = {
      {"gpu.name", "GPU", "NVIDIA A100-SXM4-40GB"},
      {"gpu.compute_capability", "compute capability", "8.0"},
      gb::Fact::numeric("gpu.memory", "memory", 39.4, "GiB", 1),
      gb::Fact::numeric("gpu.sm_clock_max", "SM clock max", 1410, "MHz", 0),
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
  place_in_sections(run, bench::probe_section_rules());
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
  run.gpu.unavailable = reason;
  for (const char* section : {"gemm", "memory", "pcie", "latency", "host"})
    run.results.push_back(Result::skipped(std::string("probe.") + section,
                                          std::string(section) + " section", "", reason));
  place_in_sections(run, bench::probe_section_rules());
  diagnose::apply_verdicts(run);
  run.checklist = diagnose::build_checklist(run);
  return run;
}

// A watch figure as the summary writes it: a mean (or max/min) over the run's intervals.
inline Result watch_figure(const std::string& key, const std::string& label,
                           const std::string& unit, double value) {
  Result r = Result::measured(key, label, unit, {value});
  if (key.rfind("watch.gpu.", 0) == 0) r.param("gpu", "0");
  return r;
}

inline Run watch_starved_run() {
  Run run = base_run("2026-12-03T08:15:00Z", 300.4);
  run.command = "watch";
  run.environment = {
      {"host.cpu_model", "CPU", "Intel(R) Xeon(R) Platinum 8480+"},
      {"host.logical_cores", "logical cores", "16"},
      {"host.physical_cores", "physical cores", "8"},
      {"host.memory", "host memory", "251 GiB"},
      {"host.kernel", "kernel", "6.8.0-60-generic"},
      gb::Fact::numeric("host.usable_cores", "cores usable by the job", 16, "", 0),
      {"gpu.name", "GPU", "NVIDIA H200"},
      {"gpu.index", "GPU index", "0"},
      {"gpu.driver", "driver", "580.95.05"},
      {"gpu.pci_bus_id", "PCI bus id", "00000000:19:00.0"},
      {"watch.command", "command", "python train.py --data /data/imagenet --workers 1 -b 256"},
      {"watch.pid", "pid", "48177"},
      {"watch.exit", "ended", "interrupted (Ctrl-C); the job exited with code 130"},
      {"watch.interval", "interval", "1 s"},
  };
  auto add = [&run](const std::string& key, const std::string& label, const std::string& unit,
                    double value) {
    run.results.push_back(watch_figure(key, label, unit, value));
    return &run.results.back();
  };
  Result util = watch_figure("watch.gpu.util.pct", "GPU utilization, mean", "%", 40.2);
  util.param("source", "the driver's utilization samples inside each interval");
  Telemetry t = telemetry(1980, 1980, 236, std::nullopt, 44, 0);
  t.samples = 300;
  t.power_w_max = 402;
  t.pcie_gen_min = 5;
  t.pcie_gen_max = 5;
  t.pcie_width_min = 16;
  t.pcie_width_max = 16;
  util.telemetry = t;
  run.results.push_back(util);
  add("watch.gpu.util.p10.pct", "GPU utilization, 10th percentile", "%", 31);
  add("watch.gpu.util.below95.share.pct", "share of time GPU utilization < 95 %", "%", 98.7);
  add("watch.gpu.mem_util.pct", "GPU memory-controller utilization, mean", "%", 14.8);
  add("watch.gpu.sm_active.pct", "SM active (GPM), mean", "%", 35.1);
  add("watch.gpu.sm_occupancy.pct", "SM occupancy (GPM), mean", "%", 12.4);
  add("watch.gpu.tensor_active.pct", "tensor-core activity (GPM), mean", "%", 3.1);
  add("watch.gpu.dram_bw.pct", "DRAM bandwidth utilization (GPM), mean", "%", 9.2);
  add("watch.gpu.power.w", "GPU power, mean", "W", 236);
  add("watch.gpu.memory_used.gib", "GPU memory used, max", "GiB", 31.4);
  add("watch.gpu.temp.c", "GPU temperature, max", "°C", 44);
  add("watch.gpu.sm_clock.mhz", "SM clock, mean", "MHz", 1980);
  add("watch.gpu.pcie.rx.gbps", "PCIe host to GPU, mean", "GB/s", 0.41);
  add("watch.gpu.pcie.tx.gbps", "PCIe GPU to host, mean", "GB/s", 0.05);
  add("watch.gpu.job.sm.pct", "the job's share of the GPU (per-process), mean", "%", 38.6);
  add("watch.gpu.other_processes", "other processes using the GPU, max", "processes", 0);

  add("watch.host.cores", "online CPU cores", "cores", 16);
  add("watch.cpu.busiest_core.pct", "busiest core's busy share, mean over intervals", "%", 99.1)
      ->param("core", "cpu7 (busiest in 283 of 300 intervals)");
  add("watch.cpu.hottest_core.pct", "hottest core's mean busy share", "%", 98.4)
      ->param("core", "cpu7");
  add("watch.cpu.mean_core.pct", "CPU busy, machine average", "%", 8.6);
  add("watch.cpu.saturated_cores", "cores >= 90 % busy, mean", "cores", 1.0);
  add("watch.cpu.iowait.pct", "CPU I/O wait, mean", "%", 0.3);
  add("watch.cpu.steal.pct", "CPU steal (hypervisor), mean", "%", 0);
  add("watch.cpu.system.pct", "CPU system time, mean", "%", 1.9);
  add("watch.cpu.ctx_switches.per_s", "context switches, machine", "/s", 21400);
  add("watch.cpu.run_queue", "runnable tasks, mean", "tasks", 2.1);
  add("watch.cpu.blocked", "tasks blocked on I/O, mean", "tasks", 0.02);

  add("watch.job.cpu.pct", "job CPU (100 % = one core), mean", "%", 137);
  add("watch.job.processes", "job processes, max", "processes", 2);
  add("watch.job.active_processes", "job processes using >= 10 % of a core, mean", "processes",
      2);
  add("watch.job.saturated_processes", "job processes using >= 90 % of a core, mean",
      "processes", 1);
  add("watch.job.threads", "job threads, max", "threads", 71);
  add("watch.job.voluntary_cs.per_s", "job voluntary context switches", "/s", 3900);
  add("watch.job.involuntary_cs.per_s", "job involuntary context switches", "/s", 45);
  add("watch.job.involuntary_cs_per_process.per_s",
      "involuntary context switches per active process", "/s", 22);
  add("watch.job.rss.gib", "job resident memory, max", "GiB", 9.8);
  Result* busiest = add("watch.job.busiest_process.cpu.pct",
                        "busiest job process (100 % = one core), mean", "%", 99.2);
  busiest->param("pid", "48213");
  busiest->param("comm", "pt_data_worker");

  add("watch.mem.available.gib", "memory available, min", "GiB", 231);
  add("watch.mem.available.pct", "memory available, min (share of total)", "%", 91.8);
  add("watch.mem.page_cache.gib", "page cache, mean", "GiB", 120);
  add("watch.disk.util.pct", "busiest disk's %util, mean", "%", 3.1)->param("device", "nvme0n1");
  add("watch.disk.await.ms", "busiest disk's read await, mean", "ms", 0.21)
      ->param("device", "nvme0n1");
  add("watch.disk.queue", "busiest disk's queue size (aqu-sz), mean", "requests", 0.02)
      ->param("device", "nvme0n1");
  add("watch.disk.read.mbps", "disk reads, all disks", "MB/s", 38);
  add("watch.disk.write.mbps", "disk writes, all disks", "MB/s", 0.4);

  const std::string no_perf =
      "perf_event_open: permission denied (kernel.perf_event_paranoid is 4; needs <= 2 or "
      "CAP_PERFMON)";
  const std::pair<const char*, const char*> perf[] = {
      {"watch.perf.ipc", "instructions per cycle (perf)"},
      {"watch.perf.task_clock.cores", "CPUs utilized by the job (perf task-clock)"},
      {"watch.perf.context_switches.per_s", "job context switches (perf)"},
      {"watch.perf.migrations.per_s", "job CPU migrations (perf)"},
      {"watch.perf.page_faults.per_s", "job page faults (perf)"},
      {"watch.perf.cache_misses.per_s", "job cache misses (perf)"},
  };
  for (const auto& [key, label] : perf)
    run.results.push_back(Result::skipped(key, label, "", no_perf));
  add("watch.sampler.cpu.pct", "gpubase's own CPU (100 % = one core)", "%", 0.9);
  add("watch.samples", "samples taken", "samples", 300);

  place_in_sections(run, watch::watch_section_rules());
  diagnose::apply_verdicts(run);
  run.findings = diagnose::diagnose_watch(run);
  run.checklist = diagnose::build_checklist(run);
  return run;
}

}  // namespace gb::test
