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

// 2: params and environment facts carry numbers with units; the run's typed GPU facts
// ("gpu": availability, PCIe link maxima). 1: every param and fact was text.
inline constexpr int kSchemaVersion = 2;

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
//   "pytorch", "torch_compile", "torchvision"  a peer's figure (core/references)
// origin says how much to trust it: "quoted" (measured elsewhere, on the device and software
// the source names), "measured" (in this run), "assumed" (a fraction nobody measured yet); empty
// for datasheet and computed peaks, which say what they are in their kind.
struct Reference {
  std::string kind;
  double value = 0;
  std::string source;  // where the number comes from, for a person to check
  double ratio = 0;    // measured / value (0 when either is missing)
  std::string origin;
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

// A parameter of a measurement: a text ("algorithm" = "cublasLt heuristic 0") or a number with
// its unit ("burst_tflops" = 829.3 TFLOP/s). Numbers stay numbers: printers format them (to
// `decimals` digits after the point when it is set, else at three significant digits).
struct Param {
  std::string name;
  std::string text;               // a text param; empty for a number
  std::optional<double> number;   // a numeric param
  std::string unit;               // the number's unit ("" for a count)
  int decimals = -1;              // display hint for printers; -1: automatic

  bool is_number() const { return number.has_value(); }
  friend bool operator==(const Param&, const Param&) = default;
};

// How a printer lays out a section's results; the suite that makes them chooses.
//   benchmark       figures judged against references: value, CV, % of datasheet and of
//                   achievable, status, evidence
//   monitor         figures seen while watching a job, or a study's outcomes: value and what
//                   each belongs to (a process, a core, a disk), no reference columns
//   configurations  one row per configuration (results sharing a key up to the last segment),
//                   named by its model, precision and batch params: throughput, step time,
//                   memory, ratio to a peer
enum class Layout { benchmark, monitor, configurations };
std::string_view to_string(Layout l);
std::optional<Layout> parse_layout(std::string_view s);

// A group of results a printer shows under one title, in the order sections first appear.
struct SectionSpec {
  std::string id;  // "probe.gemm"
  std::string title;
  Layout layout = Layout::benchmark;
};

// Where a suite's results print: every key starting with key_prefix goes to the section id
// (the longest matching prefix wins), shown under title with the given layout. Each suite keeps
// its table next to its code; the printers know none of them.
struct SectionRule {
  std::string_view key_prefix;  // "probe.gemm"
  std::string_view id;          // "probe.gemm"
  std::string_view title;       // "GEMM (cuBLASLt, dense)"
  Layout layout = Layout::benchmark;
};
// The rule the key falls under, or nullptr.
const SectionRule* find_section_rule(std::span<const SectionRule> rules, std::string_view key);

struct Result {
  std::string key;
  std::string section;  // SectionSpec::id; empty: the printer groups it by its key
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
  std::vector<Param> params;  // shape, algorithm, bytes moved...

  // A measured figure: value is the median of samples.
  static Result measured(std::string key, std::string label, std::string unit,
                         std::vector<double> samples, bool higher_is_better = true);
  static Result skipped(std::string key, std::string label, std::string unit, std::string reason);

  Result& param(std::string name, std::string text);
  Result& param(std::string name, const char* text) { return param(std::move(name), std::string(text)); }
  // A numeric param: `decimals` is how many digits a printer shows (-1: automatic).
  Result& param(std::string name, double number, std::string unit = {}, int decimals = -1);
  Result& reference(std::string kind, double value, std::string source, std::string origin = {});
  const Reference* find_reference(std::string_view kind) const;
  const Param* find_param(std::string_view name) const;
  // The param's text (text params only) / number (numeric params only); empty otherwise.
  std::optional<std::string> text_param(std::string_view name) const;
  std::optional<double> number_param(std::string_view name) const;
};

// One environment fact: "gpu.name" = "NVIDIA H200" (text), or "gpu.memory" = 139.8 GiB (a
// number with its unit; printers format it).
struct Fact {
  std::string key;
  std::string label;
  std::string value;  // a text fact; empty for a number
  std::optional<double> number;
  std::string unit;
  int decimals = -1;  // display hint, as Param::decimals

  static Fact text(std::string key, std::string label, std::string value);
  static Fact numeric(std::string key, std::string label, double number, std::string unit,
                      int decimals = -1);
};

// A PCIe link's generation and width, each missing when not known.
struct PcieLink {
  std::optional<int> gen;
  std::optional<int> width;
  bool known() const { return gen.has_value() || width.has_value(); }
};

// What the run knows of its GPU as typed values, for the rules (the environment facts say the
// same to people).
struct GpuState {
  // Set when the run needed a GPU and could not use one: why ("no NVIDIA driver found").
  std::optional<std::string> unavailable;
  PcieLink link_max_slot;  // what slot and GPU together allow (NVML)
  PcieLink link_max_gpu;   // what the GPU alone supports
};

// A row of the baseline checklist: the four questions (GPU busy, CPU per core, data-loading
// share, mixed-precision accuracy) and the card-speed roll-up.
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
  GpuState gpu;
  std::vector<SectionSpec> sections;  // declared by the suites; results name theirs
  std::vector<Result> results;
  std::vector<ChecklistRow> checklist;
  std::vector<Finding> findings;  // most important first; empty for suites without diagnosis

  const Result* find(std::string_view key) const;
  const Fact* find_fact(std::string_view key) const;
  const SectionSpec* find_section(std::string_view id) const;
  // A text fact's value / a numeric fact's number; empty when absent or of the other kind.
  std::optional<std::string> fact(std::string_view key) const;
  std::optional<double> fact_number(std::string_view key) const;
  // Gives every result without a section the one its key falls under in `rules`, and declares
  // the sections used that the run does not have yet (a sink does this as results arrive).
  void place_in_sections(std::span<const SectionRule> rules);
  // Worst status over results and checklist (ignores info and skipped).
  Status worst_status() const;
};

// The result with this key in a list of them, or nullptr.
const Result* find_result(std::span<const Result> results, std::string_view key);

// Gives r the section its key falls under in `rules` and adds that section to `sections` when
// it is not there yet; leaves both alone when no rule matches.
void place_in_section(Result& r, std::span<const SectionRule> rules,
                      std::vector<SectionSpec>& sections);

}  // namespace gb
