// tests/gpu/test_pipeline_train.cpp: `gpubase train --data --decode cpu|gpu|both`: the input
// pipeline feeds a real model into the trainer's fixed input buffers (CPU workers through pinned
// slots, H2D and normalization; nvJPEG and one resize kernel; or the two splitting the
// samples), with the step captured as a CUDA graph (the same pointers every step) and without
// it; the run reports images/s, a finite loss, the decode mode that fed it and the share of
// time the GPU waited for data. Without libnvjpeg the nvJPEG modes are skipped with the reason.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include "bench/train.hpp"
#include "data/synth.hpp"
#include "gpu/nvjpeg.hpp"

namespace gb::bench {
namespace {

using pipeline::DecodeMode;

// (CUDA graph, decode mode)
class TrainFromLoader : public ::testing::TestWithParam<std::tuple<bool, DecodeMode>> {
 protected:
  void SetUp() override {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) GTEST_SKIP() << "no CUDA device";
    std::string why;
    if (std::get<1>(GetParam()) != DecodeMode::cpu &&
        !gpu::NvjpegLibrary::load(gpu::default_nvjpeg_library_names(), why))
      GTEST_SKIP() << why;
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

TEST_P(TrainFromLoader, ReportsImagesLossTheDecodeModeAndTheDataWaitShare) {
  const auto [graph, decode] = GetParam();
  TrainBenchOptions o;
  o.models = {"mobilenet_v2"};
  o.precisions = {"bf16"};
  o.batch = 16;
  o.steps = 8;
  o.warmup = 4;  // more than one epoch of 3 batches: the feed crosses epoch boundaries
  o.cuda_graph = graph;
  o.data = (dir_ / "set").string();
  o.data_decode = decode;
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
  EXPECT_NE(ips->text_param("data")->find("2 "), std::string::npos) << *ips->text_param("data");
  EXPECT_EQ(ips->text_param("decode"), std::string(pipeline::to_string(decode)));
  ASSERT_TRUE(ips->number_param("final_loss"));
  EXPECT_TRUE(std::isfinite(*ips->number_param("final_loss")));
  if (decode == DecodeMode::both) {
    // No --gpu-share: balanced from the two paths measured alone.
    ASSERT_TRUE(ips->number_param("gpu_share_pct"));
    const double share = *ips->number_param("gpu_share_pct");
    EXPECT_GE(share, 5.0);
    EXPECT_LE(share, 100.0);
    EXPECT_NE(ips->text_param("gpu_share_source")->find("balanced"), std::string::npos);
  }
  if (decode != DecodeMode::cpu) {
    ASSERT_TRUE(ips->text_param("nvjpeg_backend"));
    EXPECT_FALSE(ips->text_param("nvjpeg_backend")->empty());
    EXPECT_EQ(ips->number_param("decode_failures"), 0);
  }
  const Result* wait = find_result(sink.results(), "train.mobilenet_v2.bf16.b16.data_wait_pct");
  ASSERT_TRUE(wait && wait->value);
  EXPECT_EQ(wait->text_param("decode"), std::string(pipeline::to_string(decode)));
  // The share is the unclamped formula of the step times the run reports: each step alone
  // (its own events) lies inside the interval between consecutive steps, so busy <= wall.
  const auto busy = wait->number_param("gpu_step_ms_sum");
  const auto wall = wait->number_param("step_ms_sum");
  ASSERT_TRUE(busy && wall);
  EXPECT_GT(*busy, 0);
  EXPECT_LE(*busy, *wall + 8e-3);  // 1 us of event resolution per step
  // Event resolution can put busy a hair above wall: the share is then 0, never negative.
  EXPECT_NEAR(*wait->value, std::max(0.0, 100.0 * (1.0 - *busy / *wall)), 1e-9);
}

// The split with --gpu-share given.
class TrainFromLoaderSplit : public TrainFromLoader {};

TEST_P(TrainFromLoaderSplit, AnAskedShareIsReported) {
  const auto [graph, decode] = GetParam();
  TrainBenchOptions o;
  o.models = {"mobilenet_v2"};
  o.precisions = {"bf16"};
  o.batch = 16;
  o.steps = 3;
  o.warmup = 3;
  o.cuda_graph = graph;
  o.data = (dir_ / "set").string();
  o.data_decode = decode;
  o.data_gpu_share = 0.25;
  o.data_workers = 2;
  o.report_environment = false;
  ResultSink sink;
  run_train_bench(o, sink);
  const Result* ips = find_result(sink.results(), "train.mobilenet_v2.bf16.b16.images_per_s");
  ASSERT_TRUE(ips && ips->value) << (ips ? ips->reason : "missing");
  EXPECT_EQ(ips->number_param("gpu_share_pct"), 25.0);
  EXPECT_EQ(ips->text_param("gpu_share_source"), "asked");
}

// The thread that launches the steps waits for the GPU asleep: with the GPU the bottleneck
// (ResNet-50 replayed as a graph, nothing else to do on the host), its CPU over the timed steps
// is a small part of a core, not the whole core of a spinning wait.
TEST(TrainLaunchThread, SleepsWhileTheGpuWorks) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) GTEST_SKIP() << "no CUDA device";
  TrainBenchOptions o;
  o.models = {"resnet50"};
  o.precisions = {"bf16"};
  o.batch = 128;
  o.steps = 60;
  o.warmup = 5;
  o.report_environment = false;
  ASSERT_EQ(o.max_in_flight, 2);  // the default
  ResultSink sink;
  run_train_bench(o, sink);
  const Result* step = find_result(sink.results(), "train.resnet50.bf16.b128.step_ms");
  ASSERT_TRUE(step && step->value) << (step ? step->reason : "missing");
  const auto cpu = step->number_param("launch_thread_cpu_pct");
  ASSERT_TRUE(cpu);
  EXPECT_GE(*cpu, 0.0);
  EXPECT_LT(*cpu, 25.0) << "the launching thread used " << *cpu << " % of a core";
}

INSTANTIATE_TEST_SUITE_P(GraphOrEagerPerDecodeMode, TrainFromLoader,
                         ::testing::Combine(::testing::Values(true, false),
                                            ::testing::Values(DecodeMode::cpu, DecodeMode::gpu,
                                                              DecodeMode::both)),
                         [](const ::testing::TestParamInfo<std::tuple<bool, DecodeMode>>& i) {
                           return std::string(std::get<0>(i.param) ? "Graph" : "Eager") + "_" +
                                  std::string(pipeline::to_string(std::get<1>(i.param)));
                         });

INSTANTIATE_TEST_SUITE_P(GraphOrEager, TrainFromLoaderSplit,
                         ::testing::Combine(::testing::Values(true, false),
                                            ::testing::Values(DecodeMode::both)),
                         [](const ::testing::TestParamInfo<std::tuple<bool, DecodeMode>>& i) {
                           return std::string(std::get<0>(i.param) ? "Graph" : "Eager");
                         });

}  // namespace
}  // namespace gb::bench
