// test_bench_loader_split.cpp: the CPU/GPU split's rule and reporting: which samples go to
// nvJPEG (a deterministic function of the dataset index that hits the asked share over the
// whole set and within a few samples over any batch-sized window), the share that balances two
// measured rates, the results of a split run and of one that could not run, the --gpu-share
// bounds, and `--decode both` on a machine without a GPU reporting the split as skipped.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "bench/loader.hpp"
#include "core/error.hpp"
#include "data/open.hpp"
#include "data/synth.hpp"
#include "test_data_util.hpp"

namespace gb::bench {
namespace {

std::size_t sent(std::size_t from, std::size_t count, double share) {
  std::size_t n = 0;
  for (std::size_t i = from; i < from + count; ++i) n += split_to_gpu(i, share) ? 1 : 0;
  return n;
}

TEST(LoaderSplit, NoShareSendsNothingAndAWholeShareSendsEverything) {
  EXPECT_EQ(sent(0, 1000, 0), 0u);
  EXPECT_EQ(sent(0, 1000, -1), 0u);
  EXPECT_EQ(sent(0, 1000, 1), 1000u);
  EXPECT_EQ(sent(0, 1000, 2), 1000u);
}

TEST(LoaderSplit, HitsTheShareOverTheSetAndWithinAFewSamplesPerBatchWindow) {
  for (const double share : {0.05, 0.29, 0.5, 0.714, 0.95}) {
    SCOPED_TRACE(share);
    EXPECT_NEAR(static_cast<double>(sent(0, 100000, share)) / 100000, share, 1e-3);
    // Any 256 consecutive indices (a shuffled batch draws from all over, this is the worst case
    // of an unshuffled one): the golden-ratio sequence stays within a few samples of the share.
    for (std::size_t from = 0; from < 20000; from += 997) {
      const double got = static_cast<double>(sent(from, 256, share));
      EXPECT_NEAR(got, 256 * share, 4.0) << "from " << from;
    }
  }
}

TEST(LoaderSplit, TheRuleDependsOnTheIndexOnly) {
  for (std::size_t i = 0; i < 5000; i += 7)
    EXPECT_EQ(split_to_gpu(i, 0.6), split_to_gpu(i, 0.6));
  // A larger share sends a superset: raising it never takes a sample back from the GPU.
  for (std::size_t i = 0; i < 5000; ++i) {
    if (split_to_gpu(i, 0.3)) {
      EXPECT_TRUE(split_to_gpu(i, 0.7)) << i;
    }
  }
}

TEST(LoaderSplit, BalancedShareIsGpuRateOverBothRates) {
  // R_gpu / (R_gpu + R_cpu) keeps both paths busy; inputs whose share lies inside the 5-100 %
  // clamp, so each value is the formula's own. nvJPEG at 20,000 and 16 CPU workers at 8,000
  // images/s: 5/7 to the GPU, 28,000 together.
  const std::vector<std::pair<double, double>> rates = {
      {20000, 8000}, {8000, 20000}, {1000, 1000}, {600, 9400}, {23253, 7459}, {99, 1}};
  for (const auto& [gpu, cpu] : rates) {
    const double share = gpu / (gpu + cpu);
    ASSERT_GT(share, 0.05) << gpu << " " << cpu;  // inside the clamp
    ASSERT_LT(share, 1.0) << gpu << " " << cpu;
    EXPECT_DOUBLE_EQ(balanced_gpu_share(gpu, cpu), share) << gpu << " vs " << cpu;
  }
  EXPECT_DOUBLE_EQ(balanced_gpu_share(20000, 8000), 5.0 / 7.0);
  EXPECT_DOUBLE_EQ(balanced_gpu_share(1000, 1000), 0.5);
}

TEST(LoaderSplit, BalancedShareIsClampedToFiveToHundredPercent) {
  // Below 5 %: at least a trickle to the GPU, so the split still measures both paths.
  ASSERT_LT(100 / (100 + 1e9), 0.05);
  EXPECT_DOUBLE_EQ(balanced_gpu_share(100, 1e9), 0.05);
  ASSERT_LT(400.0 / (400 + 9600), 0.05);
  EXPECT_DOUBLE_EQ(balanced_gpu_share(400, 9600), 0.05);
  // A path that measured nothing: no GPU rate sends the minimum, no CPU rate everything.
  EXPECT_DOUBLE_EQ(balanced_gpu_share(0, 8000), 0.05);
  EXPECT_DOUBLE_EQ(balanced_gpu_share(-1, 8000), 0.05);
  EXPECT_DOUBLE_EQ(balanced_gpu_share(20000, 0), 1.0);
  EXPECT_DOUBLE_EQ(balanced_gpu_share(20000, -1), 1.0);
}

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
  EXPECT_EQ(r->text_param("gpu_share_pct"), "70.0");
  EXPECT_EQ(r->text_param("workers"), "15");
  EXPECT_EQ(r->text_param("target_images_per_s"), "10000");
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
    o.decode = LoaderDecode::both;
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
