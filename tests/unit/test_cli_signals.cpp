// tests/unit/test_cli_signals.cpp: what gpubase does with the signals a terminal, a pipe or a
// process manager sends: SIGHUP (a closed terminal) stops a run like Ctrl-C, so the report is
// still made and saved; SIGPIPE (a closed pipe) is ignored, so a failed write is an error the
// run reports; a suite stuck after the signal (a wait that never returns) is ended by the
// watchdog with the report of what it measured, exit 130, after the stop timeout or at once on
// a second signal.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "bench/suite.hpp"
#include "cli/signals.hpp"
#include "cli/suite_run.hpp"
#include "core/cancel.hpp"
#include "core/json.hpp"
#include "test_data_util.hpp"

namespace gb {
namespace {

TEST(Signals, AClosedTerminalStopsTheRunLikeCtrlC) {
  reset_cancel();
  cli::install_signal_handlers();
  ASSERT_EQ(::raise(SIGHUP), 0);
  EXPECT_TRUE(cancel_requested());
  reset_cancel();
}

TEST(Signals, AClosedPipeIsAFailedWriteNotADeath) {
  cli::install_signal_handlers();
  struct sigaction now {};
  ASSERT_EQ(::sigaction(SIGPIPE, nullptr, &now), 0);
  EXPECT_EQ(now.sa_handler, SIG_IGN);
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A suite that measures one figure, then waits on something that never comes, deaf to Ctrl-C
// (as a wait on a GPU that hangs would be) until `release`.
cli::SuiteEnd stuck_suite(bench::ResultSink& sink, const std::atomic<bool>& release,
                          std::atomic<bool>& measured) {
  sink.add(Result::measured("probe.stuck.figure", "a figure measured before the hang", "s", {1.5}));
  measured = true;
  while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return {};
}

bool has_figure_and_interrupted(const std::string& text) {
  const Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.contains("results") || j["results"].empty()) return false;
  bool interrupted = false;
  for (const auto& f : j["environment"]) interrupted = interrupted || f.value("key", "") == "run.interrupted";
  return j["results"][0].value("key", "") == "probe.stuck.figure" && interrupted;
}

TEST(Signals, TheStopReportHoldsWhatAStuckSuiteMeasured) {
  reset_cancel();
  test::TempDir dir;
  cli::OutputOptions out;
  out.json = true;
  out.quiet = true;
  out.output_file = (dir / "run.json").string();
  cli::SuiteRun suite("probe");
  bench::ResultSink sink;
  std::atomic<bool> release{false}, measured{false};
  std::thread runner(
      [&] { suite.run_suite(sink, out, [&] { return stuck_suite(sink, release, measured); }); });
  while (!measured) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_TRUE(cli::make_stop_report());
  release = true;
  runner.join();
  EXPECT_TRUE(has_figure_and_interrupted(read_text(out.output_file))) << read_text(out.output_file);
  EXPECT_FALSE(cli::make_stop_report());  // the suite ended: nothing left to report for it
}

// gpubase's signal handling in a child process running a stuck suite; `signals` SIGTERMs are
// sent to it, `gap` apart. Returns the child's exit code (-1: it had to be killed) and its report.
std::pair<int, std::string> stop_a_stuck_child(const char* stop_timeout_s, int signals,
                                               std::chrono::milliseconds gap, double& took_s) {
  test::TempDir dir;
  const std::string report = (dir / "run.json").string();
  const std::string ready = (dir / "ready").string();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setenv("GPUBASE_STOP_TIMEOUT_S", stop_timeout_s, 1);
    reset_cancel();
    cli::install_signal_handlers();
    const cli::RunningCommand running;  // as cli::main does
    cli::OutputOptions out;
    out.json = true;
    out.quiet = true;
    out.output_file = report;
    cli::SuiteRun suite("probe");
    bench::ResultSink sink;
    std::atomic<bool> release{false}, measured{false};
    std::thread marker([&] {
      while (!measured) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      std::ofstream(ready) << "1";
    });
    marker.detach();
    suite.run_suite(sink, out, [&] { return stuck_suite(sink, release, measured); });
    ::_exit(0);  // not reached: the suite never ends
  }
  for (int i = 0; i < 1000 && !std::ifstream(ready); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const auto t0 = std::chrono::steady_clock::now();
  for (int k = 0; k < signals; ++k) {
    if (k > 0) std::this_thread::sleep_for(gap);
    ::kill(pid, SIGTERM);
  }
  int status = 0;
  pid_t done = 0;
  for (int i = 0; i < 1000 && done == 0; ++i) {
    done = ::waitpid(pid, &status, WNOHANG);
    if (done == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (done == 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    return {-1, read_text(report)};
  }
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), read_text(report)};
}

TEST(Signals, AStuckRunEndsWith130AndItsReportAfterTheStopTimeout) {
  double took = 0;
  const auto [code, report] = stop_a_stuck_child("0.5", 1, std::chrono::milliseconds(0), took);
  EXPECT_EQ(code, 130);
  EXPECT_GE(took, 0.4);
  EXPECT_TRUE(has_figure_and_interrupted(report)) << report;
}

TEST(Signals, ASecondSignalEndsAStuckRunAtOnceWithItsReport) {
  double took = 0;
  const auto [code, report] = stop_a_stuck_child("600", 2, std::chrono::milliseconds(1200), took);
  EXPECT_EQ(code, 130);
  EXPECT_LT(took, 8.0);  // the second signal, not the ten-minute timeout
  EXPECT_TRUE(has_figure_and_interrupted(report)) << report;
}

}  // namespace
}  // namespace gb
