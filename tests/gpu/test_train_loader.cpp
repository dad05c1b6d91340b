// tests/gpu/test_train_loader.cpp: `gpubase train --data`: the loader feeds a real model through
// pinned slots, the H2D copy and the normalization into the trainer's fixed input buffers, with
// the step captured as a CUDA graph (the same pointers every step) and without it; the run
// reports images/s, a finite loss and the share of time the GPU waited for data.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/train.hpp"
#include "data/synth.hpp"

namespace gb::bench {
namespace {

class TrainFromLoader : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) GTEST_SKIP() << "no CUDA device";
    dir_ = std::filesystem::temp_directory_path() /
           ("gb-train-data-" + std::to_string(reinterpret_cast<std::uintptr_t>(this)));
    data::SynthOptions o;
    o.output = dir_ / "set";
    o.images = 48;
    o.classes = 4;
    o.size_scale = 0.3;
    o.threads = 2;
    data::synth_dataset(o);
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::filesystem::path dir_;
};

TEST_P(TrainFromLoader, ReportsImagesLossAndTheDataWaitShare) {
  TrainBenchOptions o;
  o.models = {"mobilenet_v2"};
  o.precisions = {"bf16"};
  o.batch = 16;
  o.steps = 8;
  o.warmup = 4;  // more than one epoch of 3 batches: the feed crosses epoch boundaries
  o.cuda_graph = GetParam();
  o.data = (dir_ / "set").string();
  o.data_workers = 2;
  o.report_environment = false;
  ResultSink sink;
  const TrainBenchOutcome out = run_train_bench(o, sink);
  ASSERT_TRUE(out.gpu_found);
  EXPECT_EQ(out.failed, 0u);
  const Result* ips = find_result(sink.results(), "train.mobilenet_v2.bf16.b16.images_per_s");
  ASSERT_TRUE(ips && ips->value) << (ips ? ips->reason : "missing");
  EXPECT_GT(*ips->value, 0);
  ASSERT_TRUE(ips->text_param("data"));
  EXPECT_NE(ips->text_param("data")->find("2 workers"), std::string::npos);
  ASSERT_TRUE(ips->number_param("final_loss"));
  EXPECT_TRUE(std::isfinite(*ips->number_param("final_loss")));
  const Result* wait = find_result(sink.results(), "train.mobilenet_v2.bf16.b16.data_wait_pct");
  ASSERT_TRUE(wait && wait->value);
  EXPECT_GE(*wait->value, 0);
  EXPECT_LE(*wait->value, 100);
}

INSTANTIATE_TEST_SUITE_P(GraphOrEager, TrainFromLoader, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& i) {
                           return std::string(i.param ? "Graph" : "Eager");
                         });

}  // namespace
}  // namespace gb::bench
