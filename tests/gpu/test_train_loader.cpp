// tests/gpu/test_train_loader.cpp: `gpubase train --data`: the loader feeds a real model through
// pinned slots, the H2D copy and the normalization into the trainer's fixed input buffers, with
// the step captured as a CUDA graph (the same pointers every step) and without it; the run
// reports images/s, a finite loss and the share of time the GPU waited for data, which must be
// 1 - sum(step alone) / sum(step to step) of the measured step times, each step alone no longer
// than its interval.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/probe.hpp"
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
#ifndef GPUBASE_WITH_NN
  GTEST_SKIP() << "built without the training engine";
#else
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
  // One configuration measured as run_train_bench measures it, so the test sees the step times
  // the share is computed from.
  const std::vector<TrainConfig> configs = train_configs(o);
  ASSERT_EQ(configs.size(), 1u);
  ProbeOptions probe_options;
  probe_options.device = o.device;
  const ProbeContext ctx = probe_context(probe_options);
  ResultSink progress;
  const TrainMeasurement m = measure_train(configs[0], o, ctx, progress);
  ASSERT_TRUE(m.error.empty()) << m.error;
  ASSERT_EQ(m.step_ms.size(), 8u);
  ASSERT_EQ(m.gpu_step_ms.size(), m.step_ms.size());
  double busy = 0, wall = 0;
  for (std::size_t i = 0; i < m.step_ms.size(); ++i) {
    // The step alone (its own events) lies inside the interval between consecutive steps;
    // 1 us of slack for the events' resolution.
    EXPECT_GT(m.gpu_step_ms[i], 0) << "step " << i;
    EXPECT_LE(m.gpu_step_ms[i], m.step_ms[i] + 1e-3) << "step " << i;
    busy += m.gpu_step_ms[i];
    wall += m.step_ms[i];
  }
  const double expected_pct = 100.0 * (1.0 - busy / wall);
  ResultSink sink;
  for (Result& r : train_results(m)) sink.add(std::move(r));

  const Result* ips = find_result(sink.results(), "train.mobilenet_v2.bf16.b16.images_per_s");
  ASSERT_TRUE(ips && ips->value) << (ips ? ips->reason : "missing");
  EXPECT_GT(*ips->value, 0);
  ASSERT_TRUE(ips->text_param("data"));
  EXPECT_NE(ips->text_param("data")->find("2 workers"), std::string::npos);
  ASSERT_TRUE(ips->number_param("final_loss"));
  EXPECT_TRUE(std::isfinite(*ips->number_param("final_loss")));
  const Result* wait = find_result(sink.results(), "train.mobilenet_v2.bf16.b16.data_wait_pct");
  ASSERT_TRUE(wait && wait->value);
  // Unclamped: the formula itself, not a value forced into 0-100 (1e-6 points for rounding).
  EXPECT_NEAR(*wait->value, expected_pct, 1e-6)
      << "sum of the steps alone " << busy << " ms, of the intervals " << wall << " ms";
#endif
}

INSTANTIATE_TEST_SUITE_P(GraphOrEager, TrainFromLoader, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& i) {
                           return std::string(i.param ? "Graph" : "Eager");
                         });

}  // namespace
}  // namespace gb::bench
