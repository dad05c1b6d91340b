// core/result.hpp: the result model. Every measured figure is a Result with a stable key
// (e.g. "probe.gemm.bf16.tflops"), a unit, raw samples and their statistics, the references it
// is judged against, a status, and the telemetry seen while it ran. Suites produce Results,
// diagnose sets verdicts, printers only format them. Keys and field names are API: see
// docs/results.md.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/stats.hpp"

namespace gb {

inline constexpr int kSchemaVersion = 1;

// pass/warn/fail: a verdict against a reference. info: measured, nothing to judge against.
// skipped: could not run here (reason says why). invalid: ran, but the number cannot be trusted
// (reason says why, e.g. thermal slowdown during the test).
enum class Status { pass, warn, fail, skipped, invalid, info };

std::string_view to_string(Status s);
std::optional<Status> parse_status(std::string_view s);
// Order of severity for roll-ups: fail > invalid > warn > pass > info > skipped.
int severity(Status s);

// A figure the measurement is compared with. kind is one of:
//   "datasheet"       vendor peak from the spec table (core/gpu_specs)
//   "clock_adjusted"  peak computed from the device: units x rate x observed clock
//   "achievable"      what a well-tuned run reaches on this card (documented per key)
//   "baseline"        a previously saved run of this machine
struct Reference {
  std::string kind;
  double value = 0;
  std::string source;  // where the number comes from, for a person to check
  double ratio = 0;    // measured / value (0 when either is missing)
};

// NVML samples summarised over the interval a measurement ran. Every field is optional:
// a field the device or driver does not report stays empty and prints as "N/A".
struct Telemetry {
  std::size_t samples = 0;
  std::optional<double> sm_clock_mhz_min;
  std::optional<double> sm_clock_mhz_max;
  std::optional<double> sm_clock_mhz_mean;
  std::optional<double> mem_clock_mhz_mean;
  std::optional<double> power_w_mean;
  std::optional<double> power_w_max;
  std::optional<double> power_limit_w;
  std::optional<double> temp_c_max;
  std::optional<std::uint64_t> throttle_reasons;  // OR of NVML clock-event reason bits seen
  std::optional<int> pcie_gen_min;
  std::optional<int> pcie_gen_max;
  std::optional<int> pcie_width_min;
  std::optional<int> pcie_width_max;
  std::optional<std::uint64_t> pcie_replay_delta;
};

struct Result {
  std::string key;
  std::string label;
  std::string unit;
  bool higher_is_better = true;
  std::optional<double> value;  // empty when skipped
  SampleStats stats;
  std::vector<double> samples;
  std::vector<Reference> references;
  Status status = Status::info;
  std::string reason;  // why skipped/invalid, or the evidence behind the verdict
  std::string advice;  // what to do about a warn/fail
  std::optional<Telemetry> telemetry;
  std::vector<std::pair<std::string, std::string>> params;  // shape, algorithm, bytes moved...

  // A measured figure: value is the median of samples.
  static Result measured(std::string key, std::string label, std::string unit,
                         std::vector<double> samples, bool higher_is_better = true);
  static Result skipped(std::string key, std::string label, std::string unit, std::string reason);

  Result& param(std::string name, std::string text);
  Result& reference(std::string kind, double value, std::string source);
  const Reference* find_reference(std::string_view kind) const;
  std::optional<std::string> find_param(std::string_view name) const;
};

// One environment fact: "gpu.name" = "NVIDIA H200". Values are text; numbers keep their unit
// in the label or the value ("141 GB").
struct Fact {
  std::string key;
  std::string label;
  std::string value;
};

// A row of the baseline checklist (docs/thresholds.md "Checklist").
struct ChecklistRow {
  std::string id;      // stable: gpu_util, cpu_util, data_loading, amp_accuracy, card_speed...
  std::string check;   // "GPU utilization during training"
  std::string target;  // "> 95 %"
  std::optional<std::string> measured;
  Status status = Status::skipped;
  std::string evidence;
  std::string advice;
};

// One diagnosis of a monitored job (gpubase watch): what holds it back, the measured evidence
// and what to do. id is stable ("input_bound_cpu", "storage_bound", "too_many_workers",
// "tensor_cores_unused", ...); status pass says the job looks healthy in that respect.
struct Finding {
  std::string id;
  Status status = Status::info;
  std::string title;     // "input-bound on CPU"
  std::string evidence;  // "GPU busy 41 % while 8 loader processes hold 8 of 8 cores at 97 %"
  std::string advice;    // "add loader workers ..."
};

struct Run {
  int schema_version = kSchemaVersion;
  std::string tool_version;
  std::string command;     // "probe", "baseline", ...
  std::string started_at;  // ISO 8601, UTC
  double duration_s = 0;
  std::vector<Fact> environment;
  std::vector<Result> results;
  std::vector<ChecklistRow> checklist;
  std::vector<Finding> findings;  // most important first; empty for suites without diagnosis

  const Result* find(std::string_view key) const;
  std::optional<std::string> fact(std::string_view key) const;
  // Worst status over results and checklist (ignores info and skipped).
  Status worst_status() const;
};

// The result with this key in a list of them, or nullptr.
const Result* find_result(std::span<const Result> results, std::string_view key);

}  // namespace gb
