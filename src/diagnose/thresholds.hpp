// diagnose/thresholds.hpp: the numbers diagnose judges with, as data. Every entry is explained
// and justified in docs/thresholds.md; change both together. Adding a rule for a new key is one
// row here, not new code.
#pragma once
#include <optional>
#include <span>
#include <string_view>

#include "core/gpu_specs.hpp"

namespace gb::diagnose {

// A measurement passes at >= pass_at x achievable, warns at >= warn_at, fails below.
inline constexpr double kPassAtAchievable = 0.90;
inline constexpr double kWarnAtAchievable = 0.75;

// GPU-to-GPU links (probe.p2p.gpu<j>.unidir_gbps / bidir_gbps, the probe.nccl.<c>.busbw_gbps
// headlines) against the theoretical rate of the link NVML names: pass at >= kPassAtLinkTheory
// of it, warn at >= kWarnAtLinkTheory, fail below. Assumed fractions (docs/thresholds.md): a
// healthy link delivers ~80-90 % of its signalling rate in large copies and NCCL rings.
inline constexpr double kPassAtLinkTheory = 0.70;
inline constexpr double kWarnAtLinkTheory = 0.50;

// What the "achievable" figure of a key is a fraction of.
enum class Basis {
  gemm_peak,        // datasheet peak of `precision` (spec table), or the result's own reference
  memory_peak,      // datasheet memory bandwidth
  pcie_one_way,     // theoretical per-direction bandwidth of the link's maximum gen x width
  pcie_both_ways,   // twice that (H2D + D2H at once)
};

// Which advice a warn/fail gets.
enum class Area { compute, memory, pcie };

// Where an achievable fraction comes from, said in the output beside it: quoted (a peer's figure
// measured elsewhere: PyTorch, HPL), measured (gpubase itself on the card the `why` names, in a
// committed result file), assumed (reasoned from a neighbour; nobody has measured it).
enum class Origin { quoted, measured, assumed };

struct AchievableRule {
  std::string_view key;
  Basis basis;
  GemmPrecision precision;  // gemm_peak only
  double fraction;         // achievable = fraction x basis
  std::string_view why;    // the measurement the fraction comes from (goes into Reference.source)
  Area area;
  Origin origin;
};

std::span<const AchievableRule> achievable_rules();
const AchievableRule* find_achievable_rule(std::string_view key);

// Latencies (lower is better) stay "info" unless far off a healthy host; then "warn".
struct LatencyLimit {
  std::string_view key;
  double typical_us;     // what a healthy, idle host shows
  double warn_above_us;  // "far off": several times typical
  std::string_view advice;
};

std::span<const LatencyLimit> latency_limits();
const LatencyLimit* find_latency_limit(std::string_view key);

// probe.host.h2d_slowdown.pct: pinned H2D loses this much while the CPUs stream memory.
inline constexpr double kHostContentionWarnPct = 25.0;

// gpubase amp: what diagnose/amp.cpp judges the mixed-precision study by (docs/thresholds.md
// "Mixed precision").
struct AmpThresholds {
  double min_useful_speedup;     // below this speedup over FP32, mixed precision does not pay
  double pays_speedup;           // from this speedup on, it pays (the speed comparison's words)
  double max_seed_spread_points; // FP32 accuracy std over seeds above this: too noisy to judge
  double accuracy_warn_points;   // accuracy lost vs FP32 at or above this: warn
  double accuracy_fail_points;   // at or above this: fail
  double max_skipped_step_share; // FP16 steps skipped for inf/NaN above this share: warn
  double min_loss_scale;         // an FP16 loss scale below this collapsed: warn
};

const AmpThresholds& amp_thresholds();

// Advice for a warn/fail in an area (what to check first).
std::string_view area_advice(Area area);

// gpubase watch: what diagnose_watch() judges a monitored job by (docs/thresholds.md "Watch").
// Percentages are of one core for processes and cores, of the machine for iowait and steal.
struct WatchThresholds {
  double gpu_busy_pct;             // the 95 % target: GPU-bound above, starvation rules below
  double gpu_starved_fail_pct;     // starvation findings fail below this, warn up to the target
  double saturated_pct;            // a core or a process at or above this is saturated
  double loader_busy_pct;          // a loader worker this busy while the GPU waits is the limit
  double host_saturated_share;     // the job holds at least this share of all cores: host full
  double idle_cores_min;           // idle cores needed to suggest more loader workers
  double iowait_pct;               // storage-bound at or above (with a busy disk)
  double disk_busy_pct;            // busiest disk %util at or above
  double involuntary_cs_per_busy;  // involuntary switches/s per busy process: preempted
  double run_queue_per_core;       // runnable tasks per core at or above: more threads than cores
  double efficiency_min_util_pct;  // small-kernel and tensor-core rules judge only above this
  double sm_active_low_pct;        // SMs active below this while the GPU is busy: small kernels
  double tensor_unused_pct;        // tensor activity below this while the GPU is busy
  double job_no_gpu_pct;           // job SM share (else GPU util) at or below: GPU unused
  double mem_available_min_pct;    // MemAvailable minimum below this share of RAM: pressure
  double steal_pct;                // steal at or above: the hypervisor takes the CPUs
  double short_run_s;              // watched for less than this: start-up weighs on everything
};

const WatchThresholds& watch_thresholds();

// Checklist rows measured by other suites: one row of data each.
struct MetricRowSpec {
  std::string_view id;
  std::string_view check;
  std::string_view target;
  std::string_view key;    // result the suite produces
  std::string_view suite;  // how to measure it, e.g. "`gpubase watch -- CMD`"
  bool higher_is_better;
  double pass_limit;  // pass beyond this (strictly)
  double warn_limit;  // warn between pass_limit and this (inclusive); fail beyond
  std::string_view advice;
  // Findings (diagnose_watch ids) that explain a warn/fail of this row, most specific first:
  // the row names the first one present and gives its advice instead of `advice`.
  std::span<const std::string_view> causes;
  // Where `key` is absent: the worst of the results whose key starts with "train." and ends with
  // this (a figure `gpubase train --data` gives per configuration); empty: none.
  std::string_view train_suffix = {};
  // Where neither gives a measured figure: a watched job's own figure (the data-loading row:
  // watch.cuda.data_wait.pct, from the CUDA-activity library); empty: none.
  std::string_view job_key = {};
};

std::span<const MetricRowSpec> metric_rows();
// The checklist row of that id, or nullptr.
const MetricRowSpec* find_metric_row(std::string_view id);

// compare: the smallest change of a key, in % of the older run's value, that can be a
// regression (it must also exceed both runs' spread). Longest matching key prefix wins.
struct RegressionThreshold {
  std::string_view key_prefix;  // "" matches every key
  double pct;
  std::string_view why;
};
std::span<const RegressionThreshold> regression_thresholds();
const RegressionThreshold& find_regression_threshold(std::string_view key);

}  // namespace gb::diagnose

namespace gb::diagnose {

// The rules on what the CUDA-activity library saw inside a watched job (watch_cuda.cpp) and on
// per-process thread states; docs/thresholds.md "Watch: inside the job" gives the reasoning.
struct CudaWatchThresholds {
  double data_wait_warn_pct;      // GPU idle waiting for data, share of wall time: warn from
  double data_wait_fail_pct;      // ... fail from (the checklist's data-loading limits)
  double pageable_share_pct;      // share of H2D bytes from pageable memory: warn from
  double pageable_min_gb;         // ... when at least this much was copied that way
  double syncs_min_per_s;         // host syncs per second worth a finding
  double sync_idle_min_pct;       // GPU idle after/inside syncs (host + sync causes), share
  double sync_blocked_min_pct;    // host time blocked in syncs that makes them worth a finding
  double tiny_time_pct;           // share of kernel time in kernels < 10 µs: launch-bound
  double tiny_count_pct;          // ... with this share of the kernels that small
  double process_io_wait_pct;     // a job process in disk wait this share of the time
  double process_io_disk_pct;     // ... while the busiest disk is at least this busy
  double process_io_disk_ratio;   // ... or busy at least this multiple of that wait share
  double process_io_disk_share_pct;  // ... and the job read at least this share of its bytes
  double workers_per_core;        // loader processes per core at or above: oversubscribed
};

const CudaWatchThresholds& cuda_watch_thresholds();

}  // namespace gb::diagnose
