// tests/unit/test_bench_devices.cpp: every GPU of a node without a GPU here: --devices is
// parsed and validated like -d, a machine without GPUs answers one run saying why (exit 3),
// -o's %g names the GPU, and the alone-vs-together comparison of --concurrent on hand-made
// measurements.
#include <gtest/gtest.h>

#include <filesystem>

#include "bench/devices.hpp"
#include "cli/output.hpp"
#include "core/error.hpp"
#include "sys/identity.hpp"
#include "test_cli_util.hpp"
#include "test_data_util.hpp"

namespace gb {
namespace {

TEST(SelectDevices, MalformedListsAreUsageErrors) {
  std::string reason;
  for (const char* bad : {"", "x", "0,,1", "1;2", "-1", "0,-3", "all,0"}) {
    try {
      bench::select_devices(bad, reason);
      FAIL() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::usage) << bad;
    }
  }
}

TEST(SelectDevices, WithoutAGpuNoDeviceAndTheReason) {
  std::string reason;
  EXPECT_TRUE(bench::select_devices("all", reason).empty());
  EXPECT_FALSE(reason.empty());
  reason.clear();
  EXPECT_TRUE(bench::select_devices("0,2", reason).empty());
  EXPECT_FALSE(reason.empty());
}

TEST(OutputPatternGpu, PercentGNamesTheGpuWhereThereIsOne) {
  sys::RunIdentity id;
  id.host = "n1";
  EXPECT_EQ(sys::expand_output_pattern("%N-gpu%g.json", id, 5), "n1-gpu5.json");
  EXPECT_THROW(sys::expand_output_pattern("%N-gpu%g.json", id), Error);
  EXPECT_TRUE(sys::has_gpu_placeholder("runs/%N-%g.json"));
  EXPECT_FALSE(sys::has_gpu_placeholder("runs/%N-%%g.json"));
  EXPECT_FALSE(sys::has_gpu_placeholder("runs/%N.json"));
}

Result measured(const std::string& key, double v, bool higher_is_better = true) {
  return Result::measured(key, key, "GB/s", {v, v, v}, higher_is_better);
}

TEST(ConcurrentComparison, AFigureThatDropsTogetherIsNamedWithItsGpus) {
  bench::ResultSink alone;
  alone.add(measured("probe.gemm.bf16.tflops", 800));
  alone.add(measured("probe.memory.copy.gbps", 4200));
  alone.add(measured("probe.pcie.h2d.pinned.gbps", 55));
  alone.add(measured("probe.pcie.h2d.pinned.64KiB.gbps", 17));
  alone.add(measured("probe.latency.launch_host.us", 3.6, false));
  const std::vector<Result> together = {
      measured("probe.gemm.bf16.tflops", 796),
      measured("probe.memory.copy.gbps", 4190),
      measured("probe.pcie.h2d.pinned.gbps", 44),       // -20 %: a shared PCIe switch
      measured("probe.pcie.h2d.pinned.64KiB.gbps", 5),  // a sweep row: reported, not the worst
      measured("probe.latency.launch_host.us", 3.7, false),
  };
  bench::add_concurrent_comparison(alone, together, {0, 1, 2, 3});
  const Result* h2d = find_result(alone.results(), "probe.concurrent.pcie.h2d.pinned.gbps");
  ASSERT_NE(h2d, nullptr);
  EXPECT_DOUBLE_EQ(*h2d->value, 44);
  EXPECT_DOUBLE_EQ(*h2d->number_param("alone"), 55);
  EXPECT_NEAR(*h2d->number_param("change_pct"), -20, 1e-9);
  EXPECT_EQ(h2d->section, "probe.concurrent");
  const Result* lat = find_result(alone.results(), "probe.concurrent.latency.launch_host.us");
  ASSERT_NE(lat, nullptr);
  EXPECT_LT(*lat->number_param("change_pct"), 0);  // lower is better: slower is negative
  const Result* worst = find_result(alone.results(), "probe.concurrent.worst_change.pct");
  ASSERT_NE(worst, nullptr);
  EXPECT_NEAR(*worst->value, 20, 1e-9);
  EXPECT_EQ(worst->text_param("figure"), "probe.pcie.h2d.pinned.gbps");
  EXPECT_NE(worst->reason.find("slowed together"), std::string::npos) << worst->reason;
  EXPECT_NE(worst->reason.find("0,1,2,3"), std::string::npos) << worst->reason;
}

TEST(ConcurrentComparison, NothingDroppingSaysSo) {
  bench::ResultSink alone;
  alone.add(measured("probe.memory.copy.gbps", 4200));
  bench::add_concurrent_comparison(alone, {measured("probe.memory.copy.gbps", 4195)}, {0});
  const Result* worst = find_result(alone.results(), "probe.concurrent.worst_change.pct");
  ASSERT_NE(worst, nullptr);
  EXPECT_NE(worst->reason.find("no headline figure dropped"), std::string::npos) << worst->reason;
}

TEST(ConcurrentComparison, NoFigureInBothIsASkippedResult) {
  bench::ResultSink alone;
  alone.add(Result::skipped("probe.gemm", "GEMM", "", "no GPU"));
  bench::add_concurrent_comparison(alone, {}, {0});
  const Result* worst = find_result(alone.results(), "probe.concurrent.worst_change.pct");
  ASSERT_NE(worst, nullptr);
  EXPECT_EQ(worst->status, Status::skipped);
}

TEST(ProbeDevicesCli, WithoutAGpuOneRunSaysWhyAndExitsThree) {
  test::TempDir dir;
  const auto o = test::run_gpubase({"probe", "--devices", "all", "--only", "env", "--json", "-q",
                                    "-o", (dir / "run.json").string()});
  EXPECT_EQ(o.code, 3) << o.err;
  EXPECT_TRUE(std::filesystem::exists(dir / "run.json"));
}

TEST(ProbeDevicesCli, ConcurrentWithoutDevicesAndDevicesWithDeviceAreUsageErrors) {
  EXPECT_EQ(test::run_gpubase({"probe", "--concurrent", "-q"}).code, 2);
  EXPECT_EQ(test::run_gpubase({"probe", "-d", "0", "--devices", "all", "-q"}).code, 2);
  EXPECT_EQ(test::run_gpubase({"probe", "--devices", "0,x", "-q"}).code, 2);
}

TEST(ProbeDevicesCli, PercentGInAProbesFileNameIsItsDevice) {
  test::TempDir dir;
  const auto o = test::run_gpubase({"probe", "--only", "env", "--json", "-q", "-o",
                                    (dir / "gpu%g.json").string()});
  EXPECT_EQ(o.code, 3) << o.err;
  EXPECT_TRUE(std::filesystem::exists(dir / "gpu0.json")) << o.err;
}

TEST(ProbeDevicesCli, PercentGWhereThereIsNoGpuIsAUsageError) {
  test::TempDir dir;
  const auto o = test::run_gpubase(
      {"fleet", "merge", "-q", "-o", (dir / "m%g.txt").string(), dir.path().string()});
  EXPECT_EQ(o.code, 2) << o.err;
  EXPECT_NE(o.err.find("%g"), std::string::npos) << o.err;
}

}  // namespace
}  // namespace gb
