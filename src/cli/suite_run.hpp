// cli/suite_run.hpp: what every suite command (probe, baseline, loader, train, amp) does around
// its suite, in one place: the output options, a Run stamped with the command and start time,
// Ctrl-C (the one catch of core/cancel's Cancelled), the sink's facts and results moved in with
// the no-GPU and Ctrl-C facts, verdicts and the checklist, then printing, saving and the exit
// code (docs: exit codes in `gpubase --help`).
#pragma once
#include <chrono>
#include <optional>
#include <functional>
#include <string>

#include "bench/suite.hpp"
#include "cli/output.hpp"
#include "core/result.hpp"

namespace CLI {
class App;
}

namespace gb::cli {

// --json, --md, --csv, --html, -o FILE, -q, --no-color; and --save when `save` is given.
void add_output_options(CLI::App& cmd, OutputOptions& out, bool* save = nullptr);

// -d/--device INDEX, the same for every command that touches a GPU. The suite validates it
// (bench::open_device): a negative index, or one past the machine's devices, is a usage error
// (exit 2) naming the valid range.
void add_device_option(CLI::App& cmd, int& device);

// How a suite ended, beyond its results.
struct SuiteEnd {
  bool gpu_found = true;
  std::string no_gpu_reason;  // when !gpu_found
  bool interrupted = false;   // Ctrl-C: what was measured is kept and reported
  // The exit code when the suite decides it itself (watch: the job's, like `time CMD`).
  std::optional<int> exit_code;
};

// Runs `work`; Ctrl-C inside it (gb::Cancelled) ends it: returns true when it did, after a
// progress line. The one place Cancelled is caught: SuiteRun::run_suite and the several-GPU
// probe (cli/probe_devices) go through it.
bool run_cancellable(const OutputOptions& out, const std::function<void()>& work);

class SuiteRun {
 public:
  explicit SuiteRun(std::string command);
  // Runs the suite: `suite` reports into `sink` and says how it ended. Ctrl-C inside it
  // (gb::Cancelled, from throw_if_cancelled()) is caught here and nowhere else: the run ends
  // interrupted with every result the sink holds. Then the sink's end summaries run, its facts
  // and results move into the run with the gpu.available / run.interrupted facts, and diagnose
  // sets verdicts, the findings of a watched job and the checklist.
  Run& run_suite(bench::ResultSink& sink, const OutputOptions& out,
                 const std::function<SuiteEnd()>& suite);
  // The same without running anything: for a command whose suite has already ended as `end`
  // says (watch, where Ctrl-C starts the job's grace and never throws).
  Run& complete(bench::ResultSink& sink, const SuiteEnd& end);
  // Prints (and with save, saves) the run; the exit code: end.exit_code when set, else 130
  // interrupted, 3 no GPU (the reason on stderr), 1 when a verdict failed, else 0.
  int finish(const OutputOptions& out, bool save) const;
  Run& run() { return run_; }

 private:
  Run run_;
  SuiteEnd end_;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace gb::cli
