// cli/suite_run.cpp: see suite_run.hpp.
#include "cli/suite_run.hpp"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>

#include "bench/sink_snapshot.hpp"
#include "cli/signals.hpp"
#include "core/cancel.hpp"
#include "core/error.hpp"
#include "diagnose/diagnose.hpp"
#include "sys/identity.hpp"

namespace gb::cli {

namespace {

// Verdicts, a watched job's findings and the checklist.
void judge(Run& run) {
  diagnose::apply_verdicts(run);
  run.findings = diagnose::diagnose_watch(run);
  run.checklist = diagnose::build_checklist(run);
}

// The run as the watchdog reports it when the suite does not stop: what the sink holds now,
// judged, with a run.interrupted fact saying so.
Run stopped_run(const Run& started, std::chrono::steady_clock::time_point t0,
                bench::ResultSink& sink) {
  Run run = started;
  bench::SinkSnapshot s = bench::snapshot(sink);
  run.duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  run.environment = std::move(s.facts);
  run.sections = std::move(s.sections);
  run.results = std::move(s.results);
  run.environment.push_back({"run.interrupted", "run",
                             "interrupted by the user; the suite did not stop, so this report "
                             "holds what it had measured when gpubase exited"});
  judge(run);
  return run;
}

}  // namespace

void add_output_options(CLI::App& cmd, OutputOptions& out, bool* save) {
  if (save) cmd.add_flag("--save", *save, "also save the run under the data folder");
  cmd.add_flag("--json", out.json, "print the run as JSON (schema: docs/results.md)");
  cmd.add_flag("--md", out.markdown, "print the run as Markdown");
  cmd.add_flag("--csv", out.csv, "print the results as CSV (one row per result)");
  cmd.add_flag("--html", out.html,
               "write the run as one self-contained HTML page with charts (use with -o FILE)");
  cmd.add_option("-o,--output", out.output_file,
                 "write the output to FILE instead of stdout; %N host, %r rank, %j job id, %g GPU "
                 "(probe), %% '%'");
  cmd.add_flag("-q,--quiet", out.quiet, "no progress lines on stderr");
  cmd.add_flag("--no-color", out.no_color, "no ANSI colours (also: NO_COLOR=1)");
}

void add_device_option(CLI::App& cmd, int& device) {
  cmd.add_option("-d,--device", device, "CUDA device index")->capture_default_str();
}

SuiteRun::SuiteRun(std::string command) : t0_(std::chrono::steady_clock::now()) {
  run_.tool_version = GPUBASE_VERSION;
  run_.command = std::move(command);
  run_.started_at = utc_now_iso8601();
}

bool run_cancellable(const OutputOptions& out, const std::function<void()>& work) {
  try {
    work();
    return false;
  } catch (const Cancelled&) {
    progress_line(out, "interrupted: reporting what was measured so far");
    return true;
  }
}

Run& SuiteRun::run_suite(bench::ResultSink& sink, const OutputOptions& out,
                        const std::function<SuiteEnd()>& suite) {
  check_output_writable(out);
  SuiteEnd end;
  {
    // A suite stuck after Ctrl-C (a wait that never returns) is ended by the watchdog with
    // this report of what it measured until then (cli/signals).
    const StopReport stop_report([&] { emit_run(stopped_run(run_, t0_, sink), out); });
    if (run_cancellable(out, [&] { end = suite(); })) end = SuiteEnd{.interrupted = true};
  }
  return complete(sink, end);
}

Run& SuiteRun::complete(bench::ResultSink& sink, const SuiteEnd& end) {
  end_ = end;
  sink.end(end.interrupted);
  run_.duration_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  // Who and where ran it (host, launcher, rank, job) first: what `fleet merge` groups runs by.
  run_.environment = sys::identity_facts(sys::current_identity());
  for (Fact& f : sink.facts()) run_.environment.push_back(std::move(f));
  run_.sections = std::move(sink.sections());
  run_.results = std::move(sink.results());
  run_.gpu = sink.gpu();
  if (!end.gpu_found) {
    run_.gpu.unavailable = end.no_gpu_reason;
    run_.environment.push_back({"gpu.available", "GPU", "none: " + end.no_gpu_reason});
  }
  if (end.interrupted)
    run_.environment.push_back({"run.interrupted", "run", "interrupted by the user (Ctrl-C)"});
  judge(run_);
  return run_;
}

int SuiteRun::finish(const OutputOptions& out, bool save) const {
  // Saved before it is printed: a closed pipe or a full disk on the way out loses no run.
  const std::filesystem::path saved = save ? save_run(run_) : std::filesystem::path();
  emit_run(run_, out);
  if (save) progress_line(out, "saved " + saved.string());
  if (end_.exit_code) return *end_.exit_code;
  if (end_.interrupted) return static_cast<int>(ExitCode::interrupted);
  if (!end_.gpu_found) {
    std::fprintf(stderr, "gpubase: %s\n", end_.no_gpu_reason.c_str());
    return static_cast<int>(ExitCode::no_gpu);
  }
  return run_.worst_status() == Status::fail ? static_cast<int>(ExitCode::check_failed)
                                             : static_cast<int>(ExitCode::ok);
}

}  // namespace gb::cli
