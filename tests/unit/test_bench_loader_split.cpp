// test_bench_loader_split.cpp: the CPU/GPU split's reporting in `gpubase loader`: the results
// of a split run and of one that could not run, the --gpu-share bounds, and `--decode both` on a
// machine without a GPU reporting the split as skipped. The split's rule and share:
// test_pipeline_split.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "bench/loader.hpp"
#include "core/error.hpp"
#include "data/open.hpp"
#include "data/synth.hpp"
#include "test_data_util.hpp"

namespace gb::bench {
namespace {

TEST(LoaderSplit, ResultsOfARunAndOfOneThatCouldNotRun) {
  GpuDecodeMeasurement m;
  m.batch_images_per_s = {24000, 26000, 25000};
  m.gpu_share = 0.7;
  m.gpu_decoded = 700;
  m.cpu_decoded = 300;
  m.workers = 15;
  m.backend = "hardware";
  m.cpu_cores_used = 14.2;
  m.cpu_decode_ms = 1.5;
  m.check_images = 5;
  m.check_psnr_db = 50;
  const std::vector<Result> results = split_results(m, "");
  const Result* r = find_result(results, "loader.split.images_per_s");
  ASSERT_TRUE(r && r->value);
  EXPECT_DOUBLE_EQ(*r->value, 25000);
  EXPECT_EQ(r->number_param("gpu_share_pct"), 70.0);
  EXPECT_EQ(r->number_param("workers"), 15);
  EXPECT_EQ(r->number_param("target_images_per_s"), 10000);
  const Result* share = find_result(results, "loader.split.gpu_share.pct");
  ASSERT_TRUE(share && share->value);
  EXPECT_DOUBLE_EQ(*share->value, 70);
  const Result* cores = find_result(results, "loader.split.cpu_cores");
  ASSERT_TRUE(cores && cores->value);
  EXPECT_DOUBLE_EQ(*cores->value, 14.2);

  const std::vector<Result> skipped = split_results(std::nullopt, "no GPU found");
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_EQ(skipped[0].key, "loader.split.images_per_s");
  EXPECT_EQ(skipped[0].status, Status::skipped);
  EXPECT_EQ(skipped[0].reason, "no GPU found");
}

class LoaderSplitRun : public ::testing::Test {
 protected:
  void SetUp() override {
    data::SynthOptions o;
    o.output = dir / "set";
    o.images = 16;
    o.classes = 2;
    o.size_scale = 0.2;
    o.threads = 2;
    data::synth_dataset(o);
    dataset = data::open_dataset({.path = dir / "set"});
  }
  LoaderBenchOptions options() const {
    LoaderBenchOptions o;
    o.batch_size = 8;
    o.image_size = 64;
    o.workers = {1};
    o.prefetch_depth = 2;
    o.seconds_per_point = 0.2;
    o.decode = pipeline::DecodeMode::both;
    return o;
  }
  test::TempDir dir;
  std::unique_ptr<data::Dataset> dataset;
};

TEST_F(LoaderSplitRun, ShareOutsideZeroToOneIsAUsageError) {
  for (const double bad : {-0.1, 1.5, std::nan("")}) {
    LoaderBenchOptions o = options();
    o.gpu_share = bad;
    ResultSink sink;
    try {
      run_loader_bench(*dataset, o, sink);
      ADD_FAILURE() << "accepted --gpu-share " << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::usage);
      EXPECT_NE(std::string(e.what()).find("--gpu-share"), std::string::npos);
    }
  }
}

TEST_F(LoaderSplitRun, WithoutAGpuBothPathsRunTheCpuSweepAndSkipTheSplitWithTheReason) {
  ResultSink sink;
  const LoaderBenchOutcome out = run_loader_bench(*dataset, options(), sink);
  EXPECT_EQ(out.points.size(), 1u);
  const Result* gpu = find_result(sink.results(), "loader.gpu_decode.images_per_s");
  ASSERT_NE(gpu, nullptr);
  if (gpu->status != Status::skipped) GTEST_SKIP() << "this machine decodes on a GPU";
  const Result* split = find_result(sink.results(), "loader.split.images_per_s");
  ASSERT_NE(split, nullptr);
  EXPECT_EQ(split->status, Status::skipped);
  EXPECT_EQ(split->reason, "the GPU decode path did not run");
}

}  // namespace
}  // namespace gb::bench
