// report/text.hpp: what the printers share: number and status formatting, grouping results
// into sections by key, telemetry in one line, and width-aware padding and wrapping of UTF-8
// text (labels such as "8192³" or units such as "µs" are one column per code point).
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace gb::report::detail {

// Three significant digits, integers from 100 up, trailing zeros dropped: 989.4 -> "989",
// 55.31 -> "55.3", 0.834 -> "0.834".
std::string format_number(double v);
// "791 TFLOP/s"; "-" without a value.
std::string value_text(const Result& r);
// A number and its unit as a person reads it: `decimals` digits after the point when >= 0 (and
// thousands grouped from 10,000 up at 0 decimals), else format_number's; "1 cores" -> "1 core".
std::string number_text(double v, const std::string& unit, int decimals = -1);
// A param's text, or its number formatted with its unit.
std::string param_text(const Param& p);
// The named param of r as text (param_text), or empty when r has none of that name.
std::optional<std::string> param_string(const Result& r, std::string_view name);
// A fact's text ("N/A" when empty), or its number formatted with its unit.
std::string fact_text(const Fact& f);
// "0.4 %" (coefficient of variation); empty with fewer than two samples.
std::string cv_text(const Result& r);
// "80 %" = value / reference of that kind; empty when the result has no such reference.
std::string ratio_text(const Result& r, std::string_view kind);
// "pass", "WARN", "FAIL", "INVALID", "skipped", "info": problems stand out without colour.
std::string status_word(Status s);
// ANSI SGR code for a status ("32" green ...); empty for none.
std::string_view status_color(Status s);
// "SM 1755-1980 MHz, 690 of 700 W, 64 C max, throttle: power cap, PCIe Gen5 x16";
// every missing field reads N/A; "N/A (no NVML)" without telemetry.
std::string telemetry_text(const std::optional<Telemetry>& t);
// Names of NVML clock-event reason bits: "power cap, HW thermal"; "none" for 0.
std::string throttle_text(std::uint64_t bits);
// "gpubase 0.1.0, started ..., took 41.7 s"
std::string run_subtitle(const Run& run);
// True when some result or checklist row carries pass/warn/fail/invalid.
bool has_verdict(const Run& run);
// "12 pass, 1 warn, 2 fail, 1 invalid, 2 skipped, 4 info" (zero counts left out).
std::string status_counts(const Run& run);

// A section as printed: the run's declared SectionSpec (title, layout; core/result.hpp) and its
// results in run order.
struct Section {
  std::string id;     // "probe.gemm"
  std::string title;  // "GEMM (cuBLASLt, dense)"
  Layout layout = Layout::benchmark;
  std::vector<const Result*> results;
};
// Results grouped by the section each names, sections in order of first appearance. A result
// without one (an older run file) groups by the first two segments of its key, titled by them,
// in the benchmark layout.
std::vector<Section> group_sections(const Run& run);

// One configuration of a training section: the results train.<model>.<precision>.b<batch>.*
// (images_per_s, step_ms, memory_gib; any may be missing), model/precision/batch/graph from
// their params. `main` is images_per_s when present (status, reason, telemetry, references),
// else the configuration's first result. Rows in order of first appearance.
struct TrainingRow {
  std::string model;      // "resnet50"
  std::string precision;  // "BF16"
  std::string batch;      // "256"
  bool graph = false;
  const Result* main = nullptr;
  const Result* images = nullptr;
  const Result* step = nullptr;
  const Result* memory = nullptr;
  const Result* data_wait = nullptr;  // fed by the loader (gpubase train --data)
};
std::vector<TrainingRow> training_rows(const Section& s);
// "fed by the loader (<data>): the GPU waited for data 3.2 % of step time"; empty for a
// synthetic-batch row.
std::string data_wait_text(const TrainingRow& row);
// Step time: "44.1 (43.9-45.2)" median (min-max) with range, "44.1" without; "-" when missing.
std::string step_text(const TrainingRow& row, bool range);
// "101 %": images/s against PyTorch's figure (reference kind "pytorch"); empty without one.
std::string torch_ratio_text(const TrainingRow& row);
// Under a table with a "vs torch" column whose figures are quoted: says so. Empty otherwise.
std::string torch_column_note(const std::vector<TrainingRow>& rows);
// "loss 6.93 -> 6.91, 25,557,032 parameters, input NHWC bf16, loss scale 65536 (0 skipped)":
// what a training row's params say, for verbose output and notes.
std::string training_notes(const TrainingRow& row);
// What a watch figure belongs to, from its params: "pt_data_worker, pid 4711", "nvme0n1",
// "cpu3 (busiest in 290 of 300 intervals)", "pids 5012,5013". Empty when none is set.
std::string subject_text(const Result& r);

// A long reason printed again and again (every GPU figure of a run without a GPU says why)
// reads once in full: a reason seen before is shortened to its first clause and "(as above)",
// also inside a longer one ("no GPU: <reason seen>" -> "no GPU: <first clause> (as above)").
class RepeatedReasons {
 public:
  static constexpr std::size_t kMinChars = 40;  // shorter ones are printed as they are
  std::string text(std::string_view reason);

 private:
  std::vector<std::string> seen_;
};

// Columns a UTF-8 string takes (one per code point).
std::size_t display_width(std::string_view s);
std::string pad_right(std::string_view s, std::size_t width);
std::string pad_left(std::string_view s, std::size_t width);
// Greedy word wrap to `width` columns; words longer than a line are split. Never empty.
std::vector<std::string> wrap(std::string_view text, std::size_t width);

}  // namespace gb::report::detail
