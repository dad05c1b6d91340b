// diagnose/thresholds.cpp: the tables of thresholds.hpp. Each achievable fraction names the
// measurement behind it and whether it was quoted, measured by gpubase or assumed;
// docs/thresholds.md gives the arithmetic.
#include "diagnose/thresholds.hpp"

#include <array>

namespace gb::diagnose {

namespace {

// The PyTorch figures: cuBLAS through PyTorch 2.11 (CUDA 13.0) on an H200 SXM at its 700 W cap.
// The gpubase figures: `gpubase probe` on an H200 SXM, bench/results/h200-probe-v3.json.
constexpr std::array<AchievableRule, 15> kAchievable{{
    {"probe.gemm.fp64.tflops", Basis::gemm_peak, GemmPrecision::fp64, 0.82,
     "HPL on H100/H200 reaches 55-59 of 67 TFLOP/s per GPU; DGEMM alone does no worse",
     Area::compute, Origin::quoted},
    {"probe.gemm.fp32.tflops", Basis::gemm_peak, GemmPrecision::fp32, 0.76,
     "PyTorch SGEMM 8192^3 on an H200 SXM: 51 of 67 TFLOP/s", Area::compute, Origin::quoted},
    {"probe.gemm.tf32.tflops", Basis::gemm_peak, GemmPrecision::tf32, 0.78,
     "PyTorch TF32 GEMM 8192^3 on an H200 SXM: 388 of 495 TFLOP/s", Area::compute,
     Origin::quoted},
    {"probe.gemm.fp16.tflops", Basis::gemm_peak, GemmPrecision::fp16, 0.77,
     "PyTorch FP16 GEMM 8192^3 on an H200 SXM: 762 of 989 TFLOP/s", Area::compute,
     Origin::quoted},
    {"probe.gemm.bf16.tflops", Basis::gemm_peak, GemmPrecision::bf16, 0.80,
     "PyTorch BF16 GEMM 8192^3 on an H200 SXM: 793 of 989 TFLOP/s", Area::compute,
     Origin::quoted},
    {"probe.gemm.fp8.tflops", Basis::gemm_peak, GemmPrecision::fp8, 0.73,
     "PyTorch FP8 GEMM 8192^3 (torch._scaled_mm) on an H200 SXM: 1446 of 1979 TFLOP/s",
     Area::compute, Origin::quoted},
    {"probe.gemm.int8.tflops", Basis::gemm_peak, GemmPrecision::int8, 0.76,
     "gpubase INT8 GEMM 8192^3 on an H200 SXM: 1511 of 1979 TOP/s", Area::compute,
     Origin::measured},
    // HBM, bytes counted as docs/results.md states (copy: read + write).
    {"probe.memory.read.gbps", Basis::memory_peak, GemmPrecision::fp32, 0.94,
     "gpubase read-only streaming on an H200 SXM: 4527 of 4800 GB/s", Area::memory,
     Origin::measured},
    {"probe.memory.write.gbps", Basis::memory_peak, GemmPrecision::fp32, 0.96,
     "gpubase write-only streaming on an H200 SXM: 4636 of 4800 GB/s", Area::memory,
     Origin::measured},
    {"probe.memory.copy.gbps", Basis::memory_peak, GemmPrecision::fp32, 0.885,
     "PyTorch device copy on an H200 SXM: 4.25 of 4.8 TB/s, read + write counted",
     Area::memory, Origin::quoted},
    {"probe.memory.triad.gbps", Basis::memory_peak, GemmPrecision::fp32, 0.885,
     "STREAM triad: as copy (same read/write mix within 2:1)", Area::memory, Origin::assumed},
    {"probe.memory.memcpy_d2d.gbps", Basis::memory_peak, GemmPrecision::fp32, 0.885,
     "cudaMemcpy device-to-device: as copy", Area::memory, Origin::assumed},
    // PCIe, pinned host memory, 256 MiB copies.
    {"probe.pcie.h2d.pinned.gbps", Basis::pcie_one_way, GemmPrecision::fp32, 0.87,
     "PyTorch pinned H2D on an H200 SXM, Gen5 x16: 55.3 of 63.0 GB/s (TLP headers, flow "
     "control)",
     Area::pcie, Origin::quoted},
    {"probe.pcie.d2h.pinned.gbps", Basis::pcie_one_way, GemmPrecision::fp32, 0.87,
     "PyTorch pinned D2H on an H200 SXM, Gen5 x16: 55.3 of 63.0 GB/s", Area::pcie,
     Origin::quoted},
    {"probe.pcie.bidir.pinned.gbps", Basis::pcie_both_ways, GemmPrecision::fp32, 0.78,
     "gpubase H2D + D2H at once on an H200 SXM, Gen5 x16: 98.6 of 126 GB/s", Area::pcie,
     Origin::measured},
}};

constexpr std::array<LatencyLimit, 4> kLatency{{
    {"probe.latency.launch_host.us", 3.0, 20.0,
     "CPU-side launch is slow: check for a busy or power-saving CPU (governor), CPU "
     "oversubscription, a debugger/profiler/sanitizer attached, or a VM without CPU pinning"},
    {"probe.latency.launch_e2e.us", 8.0, 50.0,
     "launch round trip is slow: same checks as the host launch, plus the GPU's NUMA affinity "
     "(run on the CPUs near the GPU)"},
    {"probe.latency.graph_per_kernel.us", 1.0, 5.0,
     "kernels inside a CUDA graph run far apart: check for other processes on the GPU (MPS, "
     "time slicing) and the clocks"},
    {"probe.latency.event_roundtrip.us", 8.0, 50.0,
     "event synchronisation is slow: check the CPU governor and the driver's sync mode"},
}};

// docs/thresholds.md "Watch" gives the reasoning behind each figure.
constexpr WatchThresholds kWatch{
    .gpu_busy_pct = 95.0,
    .gpu_starved_fail_pct = 85.0,
    .saturated_pct = 90.0,
    .loader_busy_pct = 60.0,
    .host_saturated_share = 0.75,
    .idle_cores_min = 2.0,
    .iowait_pct = 10.0,
    .disk_busy_pct = 80.0,
    .involuntary_cs_per_busy = 100.0,
    .run_queue_per_core = 1.5,
    .efficiency_min_util_pct = 80.0,
    .sm_active_low_pct = 50.0,
    .tensor_unused_pct = 1.0,
    .job_no_gpu_pct = 1.0,
    .mem_available_min_pct = 5.0,
    .steal_pct = 10.0,
    .short_run_s = 30.0,
};

// Causes of a starved GPU, in the order diagnose_watch ranks them.
constexpr std::string_view kGpuUtilCauses[] = {
    "job_not_using_gpu", "input_wait", "workers_oversubscribed", "host_sync", "tiny_kernels",
    "input_bound_cpu",  "storage_bound", "main_process_bound",
    "one_process_bound", "too_many_workers", "too_many_threads", "launch_bound",
    "small_kernels",     "memory_pressure",  "cpu_steal",     "gpu_shared"};
// Causes of a saturated core.
constexpr std::string_view kCpuUtilCauses[] = {"input_bound_cpu",   "main_process_bound",
                                               "one_process_bound", "too_many_workers",
                                               "too_many_threads",  "cpu_steal"};

constexpr AmpThresholds kAmp{
    .min_useful_speedup = 1.10,
    .pays_speedup = 1.5,
    .max_seed_spread_points = 0.3,
    .accuracy_warn_points = 1.0,
    .accuracy_fail_points = 2.0,
    .max_skipped_step_share = 0.01,
    .min_loss_scale = 1.0,
};

constexpr std::array<MetricRowSpec, 4> kMetricRows{{
    {"gpu_util", "GPU utilization during training", "> 95 %", "watch.gpu.util.pct",
     "`gpubase watch -- CMD`", true, kWatch.gpu_busy_pct, kWatch.gpu_starved_fail_pct,
     "the GPU waits on the host: profile a step (nsys), add loader workers and prefetch, pin "
     "memory, and batch or graph-capture small kernels",
     kGpuUtilCauses},
    {"cpu_util", "CPU utilization per core", "< 80 %", "watch.cpu.busiest_core.pct",
     "`gpubase watch -- CMD`", false, 80.0, 95.0,
     "a core is saturated: balance loader workers against cores, move decode to the GPU "
     "(nvJPEG/DALI), set OMP_NUM_THREADS, check context switches and I/O wait",
     kCpuUtilCauses},
    {"data_loading", "data-loading time as a share of step time", "< 10 %",
     "loader.data_wait_share.pct", "`gpubase loader` or `gpubase train --data`", false, 10.0,
     25.0,
     "the input pipeline is the bottleneck: faster storage or packed shards, cheaper "
     "decode/augment, prefetch, pinned memory, and the worker count at the knee `gpubase "
     "loader` finds",
     {}, ".data_wait_pct", "watch.cuda.data_wait.pct"},
    {"amp_accuracy", "AMP accuracy loss vs FP32", "< 1 %", "amp.accuracy_loss.pct",
     "`gpubase amp`", false, kAmp.accuracy_warn_points, kAmp.accuracy_fail_points,
     "mixed precision costs accuracy: use dynamic loss scaling, keep softmax, norms and the "
     "loss in FP32, prefer BF16 over FP16, or stay in FP32/TF32 for small models",
     {}},
}};

}  // namespace

std::span<const AchievableRule> achievable_rules() { return kAchievable; }

const AchievableRule* find_achievable_rule(std::string_view key) {
  for (const auto& rule : kAchievable)
    if (rule.key == key) return &rule;
  return nullptr;
}

std::span<const LatencyLimit> latency_limits() { return kLatency; }

const LatencyLimit* find_latency_limit(std::string_view key) {
  for (const auto& limit : kLatency)
    if (limit.key == key) return &limit;
  return nullptr;
}

std::string_view area_advice(Area area) {
  switch (area) {
    case Area::compute:
      return "check the clocks and power limit (nvidia-smi -q -d CLOCK,POWER,PERFORMANCE), "
             "other processes on the GPU, and the throttle reasons; rerun on an idle GPU";
    case Area::memory:
      return "check the memory clock (nvidia-smi -q -d CLOCK), ECC errors and row remapping "
             "(nvidia-smi -q -d ECC,ROW_REMAPPER), and other processes on the GPU";
    case Area::pcie:
      return "check the PCIe link rows above, run on the GPU's NUMA node (numactl "
             "--cpunodebind=N --membind=N), and the IOMMU/ACS settings of the platform";
  }
  return "";
}

const WatchThresholds& watch_thresholds() { return kWatch; }

const AmpThresholds& amp_thresholds() { return kAmp; }

std::span<const MetricRowSpec> metric_rows() { return kMetricRows; }

const MetricRowSpec* find_metric_row(std::string_view id) {
  for (const auto& row : kMetricRows)
    if (row.id == id) return &row;
  return nullptr;
}

std::span<const RegressionThreshold> regression_thresholds() {
  static constexpr RegressionThreshold kRules[] = {
      {"", 5.0, "default: run-to-run spread of throughput figures on one card is 1-3 %"},
      {"probe.gemm.", 3.0, "GEMM at a fixed shape repeats within 1 % on an H200 (CV column)"},
      {"probe.memory.", 3.0, "HBM bandwidth repeats within 1 %"},
      {"probe.pcie.", 5.0, "PCIe copies move 2-3 % with host load"},
      {"probe.latency.", 15.0, "microsecond latencies move 5-10 % with CPU frequency and load"},
      {"probe.host.", 10.0, "host memory bandwidth moves with other processes on the host"},
      {"loader.", 7.0, "the loader sweep's CV is 4-8 % per point (bench/results/h200-loader-v5)"},
      {"watch.", 10.0, "a watched job's figures depend on the job's phase and its inputs"},
  };
  return kRules;
}

const RegressionThreshold& find_regression_threshold(std::string_view key) {
  const RegressionThreshold* best = &regression_thresholds()[0];
  for (const RegressionThreshold& t : regression_thresholds())
    if (key.starts_with(t.key_prefix) && t.key_prefix.size() > best->key_prefix.size()) best = &t;
  return *best;
}

}  // namespace gb::diagnose

namespace gb::diagnose {

// docs/thresholds.md "Watch: inside the job" gives the reasoning behind each figure.
constexpr CudaWatchThresholds kCudaWatch{
    .data_wait_warn_pct = 10.0,
    .data_wait_fail_pct = 25.0,
    .pageable_share_pct = 20.0,
    .pageable_min_gb = 0.05,
    .syncs_min_per_s = 1.0,
    .sync_idle_min_pct = 5.0,
    .sync_blocked_min_pct = 10.0,
    .tiny_time_pct = 30.0,
    .tiny_count_pct = 50.0,
    .process_io_wait_pct = 30.0,
    .process_io_disk_pct = 50.0,
    .process_io_disk_ratio = 0.8,
    .process_io_disk_share_pct = 50.0,
    .workers_per_core = 2.0,
};

const CudaWatchThresholds& cuda_watch_thresholds() { return kCudaWatch; }

}  // namespace gb::diagnose
