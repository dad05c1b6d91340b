// tests/unit/test_cli_hostile_input.cpp: command lines and files a hostile or careless user
// hands gpubase end as usage errors (exit 2) that say what is wrong in the option's own terms:
// a negative number in any unsigned option (it would wrap to 2^64 - n), CLI11's range errors
// (which print 300-digit limits), an nvJPEG backend that does not exist (found only after the
// CPU sweep otherwise), and a run file that is a FIFO (read forever, deaf to Ctrl-C).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>
#include <vector>

#include "test_cli_util.hpp"
#include "test_data_util.hpp"

namespace gb {
namespace {

using test::run_gpubase;

TEST(HostileCommandLine, ANegativeNumberInAnUnsignedOptionIsAUsageErrorNotAWrap) {
  test::TempDir dir;
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"dataset", "synth", "--out", (dir / "a").string(), "--threads",
                                 "-1", "--images", "2"},
        std::vector<std::string>{"loader", "--prefetch", "-3", "-q"},
        std::vector<std::string>{"loader", "--gpu-workers", "-2", "-q"}}) {
    const test::CliOutcome o = run_gpubase(args);
    EXPECT_EQ(o.code, 2) << args[0] << " " << args[args.size() > 4 ? 4 : 1] << ": " << o.err;
    EXPECT_NE(o.err.find("is negative"), std::string::npos) << o.err;
  }
}

TEST(HostileCommandLine, ACountOutOfRangeIsNamedWithoutAThreeHundredDigitLimit) {
  test::TempDir dir;
  const test::CliOutcome o =
      run_gpubase({"dataset", "synth", "--out", (dir / "a").string(), "--images", "0"});
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("--images"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("whole number >= 1"), std::string::npos) << o.err;
  EXPECT_LT(o.err.size(), 200u) << o.err;
}

TEST(HostileCommandLine, AnUnknownNvjpegBackendIsAUsageErrorBeforeAnythingRuns) {
  const test::CliOutcome o =
      run_gpubase({"loader", "--decode", "cpu", "--nvjpeg-backend", "bogus", "-q"});
  EXPECT_EQ(o.code, 2) << o.err;
  EXPECT_NE(o.err.find("bogus"), std::string::npos) << o.err;
}

TEST(HostileCommandLine, AReportOfAFifoIsAUsageErrorAtOnceNotAHang) {
  test::TempDir dir;
  const std::string fifo = (dir / "run.json").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const test::CliOutcome o = run_gpubase({"report", fifo});
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("not a regular file"), std::string::npos) << o.err;
}

}  // namespace
}  // namespace gb
