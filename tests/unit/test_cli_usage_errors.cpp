// tests/unit/test_cli_usage_errors.cpp: bad command lines are usage errors (exit 2) that name
// what is wrong, before anything is allocated or a GPU is opened: `gpubase loader` sizes it
// cannot honour (a negative batch must not wrap around in an unsigned option, a ring of batch
// slots larger than any host must not become std::bad_alloc, "internal error", exit 4), an
// unknown command, a device node given as a dataset, a missing `amp --data`.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/suite.hpp"
#include "test_cli_util.hpp"
#include "test_data_util.hpp"

namespace gb {
namespace {

using Outcome = test::CliOutcome;

Outcome run(const std::vector<std::string>& args) { return test::run_gpubase(args); }

// `gpubase loader` on a tiny set made once, quick and quiet, with `extra` options.
Outcome loader(const std::vector<std::string>& extra) {
  static test::TempDir dir;
  static const std::string set = test::tiny_jpeg_set(dir / "set").string();
  std::vector<std::string> args = {"loader", "--data", set, "--seconds", "0.1", "-q"};
  args.insert(args.end(), extra.begin(), extra.end());
  return run(args);
}

TEST(LoaderLimits, ANegativeBatchIsAUsageErrorNotAWrappedNumber) {
  const Outcome o = loader({"--batch", "-5"});
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("--batch: Value -5 not in range 1 to 65536"), std::string::npos) << o.err;
}

TEST(LoaderLimits, AHugeBatchOrSizeIsAUsageError) {
  EXPECT_EQ(loader({"--batch", "100000000"}).code, 2);
  const Outcome size = loader({"--size", "100000"});
  EXPECT_EQ(size.code, 2);
  EXPECT_NE(size.err.find("--size"), std::string::npos) << size.err;
}

TEST(LoaderLimits, ARingOfSlotsNoHostHoldsIsRefusedNamingItsSize) {
  const Outcome o = loader({"--batch", "65536", "--size", "4096"});
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("12288 GiB of batch slots; at most 64 GiB"), std::string::npos) << o.err;
}

TEST(CommandLine, AnUnknownCommandIsNamedWithTheCommandsThereAre) {
  const Outcome o = run({"frobnicate"});
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("unknown command 'frobnicate'"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("probe"), std::string::npos) << o.err;
}

TEST(CommandLine, ADeviceNodeIsNotADatasetRatherThanMissing) {
  const Outcome o = run({"dataset", "info", "/dev/null"});
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("/dev/null: not a regular file or a folder"), std::string::npos) << o.err;
}

TEST(CommandLine, AmpChecksTheDatasetItIsGivenBeforeTheGpu) {
  const Outcome o = run({"amp", "--data", "/nonexistent/fashion", "-q"});
  EXPECT_EQ(o.code, 2);  // on every machine: a usage error, before "no GPU" (3) could be said
  EXPECT_NE(o.err.find("--data /nonexistent/fashion: not a folder"), std::string::npos) << o.err;
}

TEST(CommandLine, AReportThatCannotBeWrittenIsAnErrorNotSuccess) {
  // Standard output on /dev/full: every write fails with ENOSPC, as on a full disk.
  const std::string run_file =
      std::string(GPUBASE_FIXTURES_DIR) + "/../../bench/results/h200-probe-v3.json";
  std::fflush(stdout);
  const int saved = ::dup(STDOUT_FILENO);
  const int full = ::open("/dev/full", O_WRONLY);
  ASSERT_GE(saved, 0);
  ASSERT_GE(full, 0);
  ::dup2(full, STDOUT_FILENO);
  const Outcome o = run({"report", run_file});
  std::clearerr(stdout);
  ::dup2(saved, STDOUT_FILENO);
  ::close(full);
  ::close(saved);
  EXPECT_EQ(o.code, 4);
  EXPECT_NE(o.err.find("writing the report to standard output failed"), std::string::npos)
      << o.err;
}

TEST(CommandLine, ForceNeverReplacesADeviceNode) {
  static test::TempDir dir;
  const std::string set = test::tiny_jpeg_set(dir / "set").string();
  const Outcome o = run({"dataset", "pack", "--data", set, "--out", "/dev/null", "--force"});
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("/dev/null (--out): exists and is not a regular file"), std::string::npos)
      << o.err;
  EXPECT_FALSE(std::filesystem::is_regular_file("/dev/null"));
}

TEST(CommandLine, AnUnwritableOutputIsRefusedBeforeTheJobRuns) {
  const auto t0 = std::chrono::steady_clock::now();
  const Outcome o = run({"watch", "-q", "-o", "/nonexistent/dir/run.txt", "--", "sleep", "5"});
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));  // not after it
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("-o /nonexistent/dir/run.txt: cannot be written"), std::string::npos)
      << o.err;
}

TEST(CommandLine, ACaptureFolderThatCannotBeMadeIsAUsageError) {
  static test::TempDir dir;
  test::write_bytes(dir / "file", {1, 2, 3});
  const std::string capture = (dir / "file" / "sub").string();
  const Outcome o = run({"watch", "-q", "--no-save", "--capture", capture, "--", "true"});
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("--capture " + capture + ": cannot make the folder"), std::string::npos)
      << o.err;
}

TEST(CommandLine, ARunFileWithATextSchemaVersionIsAUsageError) {
  static test::TempDir dir;
  const std::string text = R"({"schema": "gpubase.run", "schema_version": "2", "results": []})";
  test::write_bytes(dir / "run.json", std::vector<std::uint8_t>(text.begin(), text.end()));
  const Outcome o = run({"report", (dir / "run.json").string()});
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("\"schema_version\" must be an integer"), std::string::npos) << o.err;
}

TEST(CommandLine, TheLoaderAskedForTheGpuPathExits3WithoutAGpu) {
  std::string why;
  if (bench::cuda_device_count(why) > 0) GTEST_SKIP() << "this machine has a GPU";
  static test::TempDir dir;
  const std::string set = test::tiny_jpeg_set(dir / "set").string();
  const Outcome o = run({"loader", "--data", set, "--decode", "gpu",
                         "--seconds", "0.1", "-q", "--json", "-o", (dir / "run.json").string()});
  EXPECT_EQ(o.code, 3);
  EXPECT_FALSE(o.err.empty());
}

}  // namespace
}  // namespace gb
