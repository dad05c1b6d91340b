// cli/suite_run.hpp: what every suite command (probe, baseline, loader, train, amp) does around
// its suite, in one place: the output options, a Run stamped with the command and start time,
// the sink's facts and results moved in with the no-GPU and Ctrl-C facts, verdicts and the
// checklist, then printing, saving and the exit code (docs: exit codes in `gpubase --help`).
#pragma once
#include <chrono>
#include <optional>
#include <string>

#include "bench/probe.hpp"
#include "cli/output.hpp"
#include "core/result.hpp"

namespace CLI {
class App;
}

namespace gb::cli {

// --json, --md, -o FILE, -q, --no-color; and --save when `save` is given.
void add_output_options(CLI::App& cmd, OutputOptions& out, bool* save = nullptr);

// How a suite ended, beyond its results.
struct SuiteEnd {
  bool gpu_found = true;
  std::string no_gpu_reason;  // when !gpu_found
  bool interrupted = false;   // Ctrl-C: what was measured is kept and reported
  // The exit code when the suite decides it itself (watch: the job's, like `time CMD`).
  std::optional<int> exit_code;
};

class SuiteRun {
 public:
  explicit SuiteRun(std::string command);
  // Takes the sink's facts, sections and results, adds gpu.available / run.interrupted facts as
  // `end` says, and lets diagnose set verdicts, the findings of a watched job and the
  // checklist.
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
