// tests/unit/test_cli_suite_run.cpp: the suite runner is the one place Ctrl-C ends a suite
// (core/cancel): Cancelled thrown inside the suite becomes an interrupted run with every result
// already reported, the sink's end summaries still run, and exit code 130.
#include <gtest/gtest.h>

#include "cli/suite_run.hpp"
#include "core/cancel.hpp"
#include "test_data_util.hpp"

namespace gb {
namespace {

struct SuiteRunner : ::testing::Test {
  test::TempDir dir;
  cli::OutputOptions out{.json = true, .output_file = (dir / "run.json").string(), .quiet = true};
  void TearDown() override { reset_cancel(); }
};

TEST_F(SuiteRunner, CtrlCEndsTheRunInterruptedWithWhatWasReported) {
  cli::SuiteRun suite("probe");
  bench::ResultSink sink;
  const gb::Run& run = suite.run_suite(sink, out, [&] {
    sink.add(Result::measured("probe.gemm.bf16.tflops", "BF16", "TFLOP/s", {800}));
    request_cancel();
    throw_if_cancelled();
    sink.add(Result::measured("probe.memory.read.gbps", "read", "GB/s", {4000}));
    return cli::SuiteEnd{};
  });
  ASSERT_EQ(run.results.size(), 1u);
  EXPECT_EQ(run.results[0].key, "probe.gemm.bf16.tflops");
  EXPECT_TRUE(run.fact("run.interrupted").has_value());
  EXPECT_EQ(suite.finish(out, false), 130);
}

TEST_F(SuiteRunner, EndSummariesRunAndAreToldTheRunWasInterrupted) {
  cli::SuiteRun suite("amp");
  bench::ResultSink sink;
  std::optional<bool> told;
  const gb::Run& run = suite.run_suite(sink, out, [&] {
    sink.at_end([&](bench::ResultSink& s, bool interrupted) {
      told = interrupted;
      s.add(Result::measured("amp.seed_spread.points", "spread", "points", {0.1}, false));
    });
    request_cancel();
    throw_if_cancelled();
    return cli::SuiteEnd{};
  });
  EXPECT_EQ(told, true);
  ASSERT_EQ(run.results.size(), 1u);
  EXPECT_EQ(run.results[0].key, "amp.seed_spread.points");
}

TEST_F(SuiteRunner, ASuiteThatEndsNormallyRunsItsSummariesOnce) {
  cli::SuiteRun suite("amp");
  bench::ResultSink sink;
  int calls = 0;
  suite.run_suite(sink, out, [&] {
    sink.at_end([&](bench::ResultSink&, bool interrupted) {
      ++calls;
      EXPECT_FALSE(interrupted);
    });
    return cli::SuiteEnd{};
  });
  sink.end(false);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(suite.finish(out, false), 0);
}

TEST_F(SuiteRunner, OtherErrorsAreNotMistakenForCtrlC) {
  cli::SuiteRun suite("train");
  bench::ResultSink sink;
  EXPECT_THROW(suite.run_suite(sink, out,
                               []() -> cli::SuiteEnd {
                                 throw Error(ErrorKind::runtime, "cuBLASLt refused");
                               }),
               Error);
}

}  // namespace
}  // namespace gb
