// tests/unit/test_cli_train.cpp: `gpubase train` end to end through the same parse-and-run path
// as the binary (cli::run_train_args) on the CI machine, which has no GPU: the run is written
// as JSON with -o, every configuration asked for is there as a skipped result with the reason,
// the exit code is 3 (no GPU) as for the probe; bad options exit 2 before anything runs.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "bench/train.hpp"
#include "cli/train_cmd.hpp"
#include "core/json.hpp"
#include "core/result.hpp"
#include "test_data_util.hpp"

namespace gb {
namespace {

struct TrainCommand : ::testing::Test {
  test::TempDir dir;

  // Runs `gpubase train ARGS... --json -q -o FILE` and returns the exit code.
  int run(std::vector<std::string> args) {
    args.insert(args.end(), {"--json", "-q", "-o", (dir / "run.json").string()});
    return cli::run_train_args(args);
  }

  gb::Run written() {
    std::ifstream in(dir / "run.json");
    std::stringstream text;
    text << in.rdbuf();
    return run_from_json(Json::parse(text.str()));
  }

};

// Asked before running: on a GPU host these runs would train.
bool has_gpu() {
#ifdef GPUBASE_WITH_CUDA
  std::string why;
  return bench::cuda_device_count(why) > 0;
#else
  return false;
#endif
}

std::set<std::string> keys(const Run& run) {
  std::set<std::string> out;
  for (const Result& r : run.results) out.insert(r.key);
  return out;
}

TEST_F(TrainCommand, WithoutAGpuExits3AndReportsEveryConfigurationSkipped) {
  if (has_gpu()) GTEST_SKIP() << "this machine has a GPU: the run would train";
  ASSERT_EQ(run({}), 3);
  const gb::Run r = written();
  EXPECT_EQ(r.command, "train");
  ASSERT_EQ(r.results.size(), 4u);
  for (const Result& res : r.results) {
    EXPECT_EQ(res.status, Status::skipped) << res.key;
    EXPECT_FALSE(res.reason.empty());
  }
  const auto gpu = r.fact("gpu.available");
  ASSERT_TRUE(gpu.has_value());
  EXPECT_EQ(gpu->rfind("none: ", 0), 0u) << *gpu;
  ASSERT_TRUE(r.gpu.unavailable.has_value());
  EXPECT_FALSE(r.gpu.unavailable->empty());
}

TEST_F(TrainCommand, ModelAndPrecisionTakeCommaListsAndRepeats) {
  if (has_gpu()) GTEST_SKIP() << "this machine has a GPU: the run would train";
  ASSERT_EQ(run({"--model", "resnet50,mobilenet_v2", "--model", "small_resnet", "--precision",
                 "fp16", "--precision", "bf16,fp32", "--batch", "64"}),
            3);
  EXPECT_EQ(keys(written()), (std::set<std::string>{
                                 "train.resnet50.fp32.b64.images_per_s",
                                 "train.resnet50.fp16.b64.images_per_s",
                                 "train.resnet50.bf16.b64.images_per_s",
                                 "train.mobilenet_v2.fp32.b64.images_per_s",
                                 "train.mobilenet_v2.fp16.b64.images_per_s",
                                 "train.mobilenet_v2.bf16.b64.images_per_s",
                                 "train.small_resnet.fp32.b64.images_per_s",
                                 "train.small_resnet.fp16.b64.images_per_s",
                                 "train.small_resnet.bf16.b64.images_per_s",
                             }));
}

TEST_F(TrainCommand, GraphIsAParamOfEveryResult) {
  if (has_gpu()) GTEST_SKIP() << "this machine has a GPU: the run would train";
  ASSERT_EQ(run({"--precision", "tf32", "--graph"}), 3);
  const gb::Run r = written();
  ASSERT_EQ(r.results.size(), 1u);
  EXPECT_EQ(r.results[0].text_param("graph"), "yes");
}

TEST_F(TrainCommand, UnknownModelExits2WithoutWritingARun) {
  EXPECT_EQ(run({"--model", "vgg16"}), 2);
  EXPECT_FALSE(std::filesystem::exists(dir / "run.json"));
}

TEST_F(TrainCommand, UnknownPrecisionExits2) { EXPECT_EQ(run({"--precision", "fp8"}), 2); }

TEST_F(TrainCommand, BatchOfZeroExits2) { EXPECT_EQ(run({"--batch", "0"}), 2); }

TEST_F(TrainCommand, NonNumericStepsExit2) { EXPECT_EQ(run({"--steps", "many"}), 2); }

TEST_F(TrainCommand, GraphWithoutWarmupExits2) {
  EXPECT_EQ(run({"--graph", "--warmup", "1"}), 2);
  EXPECT_EQ(run({"--warmup", "1"}), 2);  // the graph is the default
}

TEST_F(TrainCommand, MissingDataExits2) {
  EXPECT_EQ(run({"--data", "/no/such/dataset"}), 2);
  EXPECT_FALSE(std::filesystem::exists(dir / "run.json"));
}

TEST_F(TrainCommand, DataForTheSmallResnetExits2) {
  EXPECT_EQ(run({"--data", (dir / "").string(), "--model", "small_resnet"}), 2);
}

TEST_F(TrainCommand, AnUnknownDecodeModeExits2WithoutWritingARun) {
  EXPECT_EQ(run({"--data", "x", "--decode", "bogus"}), 2);
  EXPECT_FALSE(std::filesystem::exists(dir / "run.json"));
}

TEST_F(TrainCommand, DecodeWithoutDataExits2) {
  EXPECT_EQ(run({"--decode", "gpu"}), 2);
}

TEST_F(TrainCommand, GpuShareOutsideZeroToOneOrWithoutTheSplitExits2) {
  const std::string data = (dir / "").string();
  EXPECT_EQ(run({"--data", data, "--decode", "both", "--gpu-share", "1.5"}), 2);
  EXPECT_EQ(run({"--data", data, "--decode", "both", "--gpu-share", "-0.2"}), 2);
  EXPECT_EQ(run({"--data", data, "--decode", "gpu", "--gpu-share", "0.5"}), 2);
  EXPECT_EQ(run({"--data", data, "--gpu-share", "0.5"}), 2);  // cpu is the default
}

TEST_F(TrainCommand, DecodeGpuWithoutAGpuIsSkippedWithTheReason) {
  if (has_gpu()) GTEST_SKIP() << "this machine has a GPU: the run would train";
  ASSERT_EQ(run({"--data", (dir / "").string(), "--decode", "gpu", "--precision", "bf16"}), 3);
  const gb::Run r = written();
  ASSERT_EQ(r.results.size(), 1u);
  EXPECT_EQ(r.results[0].status, Status::skipped);
  EXPECT_FALSE(r.results[0].reason.empty());
  EXPECT_FALSE(r.results[0].value);
}

TEST_F(TrainCommand, NoGraphLaunchesEagerly) {
  if (has_gpu()) GTEST_SKIP() << "this machine has a GPU: the run would train";
  ASSERT_EQ(run({"--precision", "tf32", "--no-graph", "--warmup", "0"}), 3);
  const gb::Run r = written();
  ASSERT_EQ(r.results.size(), 1u);
  EXPECT_EQ(r.results[0].text_param("graph"), "no");
}

}  // namespace
}  // namespace gb
