// test_watch_signals.cpp: what `gpubase watch` does when it is interrupted twice, and what its
// job's prints do to a JSON report: a second Ctrl-C ends the job at once (no grace) and still
// reports, exit 130; with --json the job's stdout goes to stderr, so stdout is one document.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <string>
#include <thread>

#include "core/cancel.hpp"
#include "core/json.hpp"
#include "core/stop_now.hpp"
#include "test_cli_util.hpp"
#include "watch/watch.hpp"

namespace gb::watch {
namespace {

class WatchSignals : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("GPUBASE_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
    reset_cancel();
  }
  void TearDown() override {
    unsetenv("GPUBASE_NVML_LIBRARY");
    reset_cancel();
  }
};

TEST_F(WatchSignals, ASecondInterruptKillsTheJobAtOnceAndStillReports) {
  // The job ignores SIGINT and SIGTERM: only the second interrupt's SIGKILL ends it, long
  // before its 30 s grace would.
  WatchOptions o;
  o.command = {"/bin/sh", "-c", "trap '' INT TERM; sleep 60"};
  o.interval_s = 0.1;
  o.stop_grace_s = 30;
  std::thread user([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    request_cancel();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    request_stop_now();
  });
  const auto t0 = std::chrono::steady_clock::now();
  const WatchOutcome out = run_watch(o);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  user.join();
  EXPECT_LT(took, 10.0);
  EXPECT_TRUE(out.interrupted);
  EXPECT_TRUE(out.stopped_at_once);
  ASSERT_TRUE(out.exit.has_value());
  EXPECT_EQ(out.exit->shell_code(), 128 + SIGKILL) << out.exit->describe();
  EXPECT_NE(out.end_reason.find("interrupted twice"), std::string::npos) << out.end_reason;
  EXPECT_FALSE(out.results.empty());
}

TEST_F(WatchSignals, JsonOnStdoutStaysOneDocumentWhenTheJobPrints) {
  testing::internal::CaptureStdout();
  const test::CliOutcome o = test::run_gpubase(
      {"watch", "--json", "--no-save", "--no-perf", "-i", "0.1", "--", "/bin/sh", "-c",
       "echo job-says-hello; echo job-warns >&2"});
  const std::string out = testing::internal::GetCapturedStdout();
  EXPECT_EQ(o.code, 0) << o.err;
  const Json j = Json::parse(out, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded()) << out;
  EXPECT_EQ(j.value("schema", ""), "gpubase.run");
  EXPECT_NE(o.err.find("job-says-hello"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("job-warns"), std::string::npos) << o.err;
}

}  // namespace
}  // namespace gb::watch
