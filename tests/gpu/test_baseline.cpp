// tests/gpu/test_baseline.cpp: `gpubase baseline`'s training stage on a GPU: the in-process
// watch sampler (watch/background) reads NVML while the engine trains ResNet-50 BF16 from a
// tiny JPEG set through the loader, for a time bound instead of a step count
// (TrainBenchOptions::max_timed_s). The GPU row's figure is measured and shows the GPU busy;
// the data-wait share is reported; the time bound ends the timed steps. And the inference
// stage's pass (Trainer::infer_synthetic) against an eager forward pass.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>

#include "../unit/test_cli_util.hpp"
#include "bench/train.hpp"
#include "cli/output.hpp"
#include "data/synth.hpp"
#include "nn/trainer_impl.hpp"
#include "watch/background.hpp"

namespace {

const gb::Result* find(const std::vector<gb::Result>& results, const std::string& key) {
  for (const gb::Result& r : results)
    if (r.key == key) return &r;
  return nullptr;
}

TEST(BaselineGpu, TrainingUnderTheInProcessWatchFillsTheGpuRow) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) GTEST_SKIP() << "no CUDA device";
  const auto dir = std::filesystem::temp_directory_path() /
                   ("gb-baseline-gpu-" + std::to_string(reinterpret_cast<std::uintptr_t>(&count)));
  std::filesystem::remove_all(dir);
  gb::data::SynthOptions synth;
  synth.output = dir;
  synth.images = 64;
  synth.classes = 4;
  synth.size_scale = 0.5;
  gb::data::synth_dataset(synth);

  gb::bench::TrainBenchOptions t;
  t.models = {"resnet50"};
  t.precisions = {"bf16"};
  t.batch = 64;
  t.warmup = 5;
  t.steps = 100000;
  t.max_timed_s = 6;
  t.report_environment = false;
  t.data = dir.string();
  t.data_workers = 4;

  gb::watch::BackgroundWatch w({.device = 0, .interval_s = 0.5});
  w.start();
  t.on_timed_start = [&w] { w.judge_from_now(); };
  gb::bench::ResultSink sink;
  const auto t0 = std::chrono::steady_clock::now();
  const gb::bench::TrainBenchOutcome o = gb::bench::run_train_bench(t, sink);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const gb::watch::WatchOutcome seen = w.stop();
  std::filesystem::remove_all(dir);

  ASSERT_TRUE(o.gpu_found);
  EXPECT_EQ(o.failed, 0u);
  const gb::Result* ips = find(sink.results(), "train.resnet50.bf16.b64.images_per_s");
  ASSERT_TRUE(ips && ips->value) << (ips ? ips->reason : "no result");
  const auto steps = ips->number_param("steps");
  ASSERT_TRUE(steps);
  EXPECT_LT(*steps, 100000.0);  // the time bound ended the timed steps
  EXPECT_LT(seconds, 120.0);
  const gb::Result* wait = find(sink.results(), "train.resnet50.bf16.b64.data_wait_pct");
  ASSERT_TRUE(wait && wait->value);
  EXPECT_GE(*wait->value, 0.0);
  EXPECT_LE(*wait->value, 100.0);

  ASSERT_TRUE(seen.gpu_available) << seen.gpu_unavailable;
  const gb::Result* util = find(seen.results, "watch.gpu.util.pct");
  ASSERT_TRUE(util && util->value) << (util ? util->reason : "no result");
  EXPECT_GT(*util->value, 10.0);  // the GPU trained while the sampler ran
  const gb::Result* core = find(seen.results, "watch.cpu.busiest_core.pct");
  ASSERT_TRUE(core && core->value);
  // The figures cover the timed steps, not the build and warm-up before them.
  const gb::Result* window = find(seen.results, "watch.window.s");
  ASSERT_TRUE(window && window->value);
  EXPECT_NE(window->text_param("over").value_or("").find("the measured work alone"),
            std::string::npos)
      << window->text_param("over").value_or("");
  EXPECT_LE(*window->value, t.max_timed_s + 1.5);
}

// The README's main command, shortened: `gpubase baseline --quick` from a cold home answers
// every row of the checklist with a measured figure.
TEST(BaselineGpu, TheQuickRunAnswersEveryRowWithMeasuredFigures) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) GTEST_SKIP() << "no CUDA device";
  const auto home = std::filesystem::temp_directory_path() /
                    ("gb-baseline-quick-" + std::to_string(reinterpret_cast<std::uintptr_t>(&count)));
  std::filesystem::remove_all(home);
  std::filesystem::create_directories(home);
  ::setenv("GPUBASE_HOME", home.c_str(), 1);
  const auto json = home / "quick.json";
  const auto t0 = std::chrono::steady_clock::now();
  const auto o = gb::test::run_gpubase({"baseline", "--quick", "--json", "-o", json.string()});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ::unsetenv("GPUBASE_HOME");
  EXPECT_TRUE(o.code == 0 || o.code == 1) << "exit " << o.code << "\n" << o.err;
  const gb::Run run = gb::cli::load_run(json);
  std::filesystem::remove_all(home);
  EXPECT_LT(seconds, 300.0);
  ASSERT_EQ(run.checklist.size(), 5u);
  for (const gb::ChecklistRow& row : run.checklist) {
    SCOPED_TRACE(row.id);
    EXPECT_NE(row.status, gb::Status::skipped) << row.evidence;
    EXPECT_TRUE(row.measured) << row.evidence;
    EXPECT_FALSE(row.evidence.empty());
  }
  for (const char* stage : {"card", "loader", "train", "amp", "infer"}) {
    const gb::Result* r = find(run.results, std::string("baseline.stage.") + stage + ".s");
    ASSERT_TRUE(r && r->value) << stage;
    EXPECT_EQ(r->text_param("state").value_or(""), "ran") << stage;
  }
  const gb::Result* window = find(run.results, "watch.window.s");
  ASSERT_TRUE(window);
  EXPECT_NE(window->text_param("over").value_or("").find("the measured work alone"),
            std::string::npos);
  for (const char* p : {"fp32", "fp16", "bf16"}) {
    const gb::Result* r = find(run.results, std::string("infer.resnet50.") + p + ".b64.images_per_s");
    ASSERT_TRUE(r && r->value) << p;
    EXPECT_GT(*r->value, 0.0);
  }
}

}  // namespace

// Trainer::infer_synthetic, the inference stage's pass: eager, then captured, then replayed, it
// gives the logits of an eager forward pass in inference mode.
TEST(BaselineGpu, InferenceGraphReplayMatchesTheEagerForwardPass) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) GTEST_SKIP() << "no CUDA device";
  gb::nn::TrainerOptions o;
  o.model = gb::Model::resnet50;
  o.precision = gb::Precision::fp32;
  o.batch = 8;
  o.input = gb::nn::default_input(o.model);
  o.cuda_graph = true;
  gb::nn::Trainer::Impl impl(o);
  impl.make_synthetic_batch(3);
  auto logits = [&] {
    const gb::nn::Value* out = impl.net.output();
    std::vector<float> host(out->shape.elements());
    EXPECT_EQ(out->dtype, gb::ElementType::f32);
    EXPECT_EQ(cudaMemcpyAsync(host.data(), out->data, host.size() * sizeof(float),
                              cudaMemcpyDeviceToHost, impl.stream.get()),
              cudaSuccess);
    EXPECT_EQ(cudaStreamSynchronize(impl.stream.get()), cudaSuccess);
    return host;
  };
  impl.net.input_value()->data = impl.synthetic_images.data();
  impl.net.forward(impl.ctx, false);
  const std::vector<float> eager = logits();
  for (int i = 0; i < 4; ++i) impl.infer_synthetic();  // eager, capture + launch, replays
  const std::vector<float> replayed = logits();
  ASSERT_EQ(eager.size(), replayed.size());
  ASSERT_FALSE(eager.empty());
  double worst = 0, scale = 0;
  for (std::size_t i = 0; i < eager.size(); ++i) {
    ASSERT_TRUE(std::isfinite(replayed[i]));
    worst = std::max(worst, static_cast<double>(std::fabs(eager[i] - replayed[i])));
    scale = std::max(scale, static_cast<double>(std::fabs(eager[i])));
  }
  EXPECT_LE(worst, 1e-4 * std::max(1.0, scale));
  EXPECT_EQ(impl.infers_enqueued, 4u);
}
