// test_bench_amp.cpp: the amp study's CPU half: the learning-rate schedule, option checks, and
// the results made from per-run records (no GPU needed). The verdicts on them are diagnose's:
// test_diagnose_amp.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "bench/amp.hpp"
#include "core/error.hpp"
#include "diagnose/diagnose.hpp"

namespace gb::bench {
namespace {

AmpRunRecord record(const std::string& p, std::uint64_t seed, double acc, double rate,
                    double scale = 1, std::size_t skipped = 0) {
  AmpRunRecord r;
  r.precision = p;
  r.seed = seed;
  r.steps = 1000;
  for (int e = 1; e <= 3; ++e) {
    AmpEpoch ep;
    ep.epoch = e;
    ep.test_accuracy_pct = acc - (3 - e);  // improves over epochs; the last one counts
    ep.train_loss = 0.5 / e;
    ep.images_per_s = e == 1 ? rate / 10 : rate;  // the first epoch (warm-up) is left out
    ep.loss_scale = scale;
    ep.skipped_steps = skipped;
    if (p == "fp32") {
      ep.underflow_unscaled_pct = 12.0;
      ep.underflow_scaled_pct = 0.5;
    }
    r.epochs.push_back(ep);
  }
  return r;
}

const Result* find(ResultSink& sink, const std::string& key) {
  for (const Result& r : sink.results())
    if (r.key == key) return &r;
  return nullptr;
}

std::vector<AmpRunRecord> study(double fp16_delta, double bf16_delta, double fp16_rate = 2000) {
  std::vector<AmpRunRecord> v;
  const double fp32_acc[] = {92.0, 92.2, 91.9};
  for (std::uint64_t s = 1; s <= 3; ++s) {
    const double a = fp32_acc[s - 1];
    v.push_back(record("fp32", s, a, 1000));
    v.push_back(record("tf32", s, a + 0.05, 1500));
    v.push_back(record("fp16", s, a + fp16_delta + 0.02 * static_cast<double>(s), fp16_rate,
                       32768, 3));
    v.push_back(record("bf16", s, a + bf16_delta, 1900));
  }
  return v;
}

TEST(AmpSchedule, WarmsUpLinearlyThenFollowsACosineToZero) {
  EXPECT_DOUBLE_EQ(amp_learning_rate(0.2, 0, 10, 110), 0.02);
  EXPECT_DOUBLE_EQ(amp_learning_rate(0.2, 9, 10, 110), 0.2);
  EXPECT_DOUBLE_EQ(amp_learning_rate(0.2, 10, 10, 110), 0.2);  // cosine starts at the peak
  EXPECT_NEAR(amp_learning_rate(0.2, 10 + 50, 10, 111), 0.1, 1e-3);  // halfway
  EXPECT_NEAR(amp_learning_rate(0.2, 109, 10, 110), 0.0, 1e-12);     // last step
  for (std::size_t s = 10; s + 1 < 110; ++s)
    EXPECT_GE(amp_learning_rate(0.2, s, 10, 110), amp_learning_rate(0.2, s + 1, 10, 110));
}

TEST(AmpOptionsCheck, NamesTheBadOption) {
  AmpOptions o;
  o.precisions = {"fp32", "fp8"};
  try {
    validate_amp_options(o);
    FAIL() << "fp8 accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
    EXPECT_NE(std::string(e.what()).find("'fp8'"), std::string::npos);
  }
  o = AmpOptions{};
  o.seeds = 0;
  EXPECT_THROW(validate_amp_options(o), Error);
  o = AmpOptions{};
  o.model = "vgg";
  EXPECT_THROW(validate_amp_options(o), Error);
  EXPECT_NO_THROW(validate_amp_options(AmpOptions{}));
}

TEST(AmpResults, PairsSeedsAgainstFp32) {
  ResultSink sink;
  AmpOptions o;
  add_amp_results(study(-0.3, -0.1), o, sink);

  const Result* acc = find(sink, "amp.fp32.test_accuracy.pct");
  ASSERT_TRUE(acc && acc->value);
  EXPECT_NEAR(*acc->value, (92.0 + 92.2 + 91.9) / 3, 1e-9);  // mean over seeds, last epoch
  EXPECT_EQ(acc->number_param("seeds"), 3);

  const Result* change = find(sink, "amp.fp16.accuracy_change.points");
  ASSERT_TRUE(change && change->value);
  EXPECT_NEAR(*change->value, -0.3 + 0.04, 1e-9);  // mean of -0.28, -0.26, -0.24
  const auto band = change->number_param("noise band");
  ASSERT_TRUE(band.has_value());
  EXPECT_NEAR(*band, 2.0 * 0.02 / std::sqrt(3.0), 1e-9);  // two standard errors
}

TEST(AmpResults, TheAccuracyLossIsTheWorseMixedPrecision) {
  ResultSink sink;
  add_amp_results(study(-0.3, -0.1), AmpOptions{}, sink);
  const Result* loss = find(sink, "amp.accuracy_loss.pct");
  ASSERT_TRUE(loss && loss->value);
  EXPECT_NEAR(*loss->value, 0.26, 1e-9);  // the worse of fp16 (0.26) and bf16 (0.1)
  EXPECT_EQ(loss->text_param("precision"), "fp16");
  EXPECT_EQ(loss->number_param("seeds"), 3);
  EXPECT_TRUE(loss->number_param("noise band").has_value());

  ResultSink other;
  add_amp_results(study(-0.1, -1.5), AmpOptions{}, other);
  EXPECT_EQ(find(other, "amp.accuracy_loss.pct")->text_param("precision"), "bf16");
}

TEST(AmpResults, SpeedupLeavesTheWarmUpEpochOut) {
  ResultSink sink;
  add_amp_results(study(-0.3, -0.1), AmpOptions{}, sink);
  const Result* speed = find(sink, "amp.fp16.speedup");
  ASSERT_TRUE(speed && speed->value);
  EXPECT_NEAR(*speed->value, 2.0, 1e-9);  // first (warm-up) epoch left out
  EXPECT_EQ(speed->text_param("precision"), "fp16");
}

TEST(AmpResults, SeedSpreadIsTheFp32StandardDeviation) {
  ResultSink sink;
  add_amp_results(study(-0.3, -0.1), AmpOptions{}, sink);
  const Result* spread = find(sink, "amp.seed_spread.points");
  ASSERT_TRUE(spread && spread->value);
  EXPECT_NEAR(*spread->value, std::sqrt(((0.0333) * (0.0333) + 0.1667 * 0.1667 + 0.1333 * 0.1333) / 2),
              1e-3);
  EXPECT_EQ(spread->number_param("seeds"), 3);
}

TEST(AmpResults, LossScalingFiguresCarryTheStepsTheRulesNeed) {
  ResultSink sink;
  add_amp_results(study(-0.3, -0.1), AmpOptions{}, sink);
  const Result* scale = find(sink, "amp.fp16.loss_scale");
  ASSERT_TRUE(scale && scale->value);
  EXPECT_DOUBLE_EQ(*scale->value, 32768);
  const Result* skipped = find(sink, "amp.fp16.skipped_steps");
  ASSERT_TRUE(skipped && skipped->value);
  EXPECT_DOUBLE_EQ(*skipped->value, 9);  // 3 per seed
  EXPECT_EQ(skipped->number_param("steps"), 3000);
  EXPECT_NEAR(skipped->number_param("share").value_or(0), 0.3, 1e-9);  // % of the steps
  const Result* under = find(sink, "amp.fp16.grad_underflow.unscaled.pct");
  ASSERT_TRUE(under && under->value);
  EXPECT_DOUBLE_EQ(*under->value, 12.0);
}

TEST(AmpResults, TheSuiteJudgesNothing) {
  ResultSink sink;
  add_amp_results(study(-2.5, -0.1, 800), AmpOptions{}, sink);
  for (const Result& r : sink.results()) {
    EXPECT_EQ(r.status, Status::info) << r.key;
    EXPECT_TRUE(r.advice.empty()) << r.key;
  }
}

TEST(AmpResults, ADivergedPrecisionHasNoValueAndCountsItsRuns) {
  auto v = study(0, 0);
  for (AmpRunRecord& r : v)
    if (r.precision == "fp16") r.diverged = true;
  ResultSink sink;
  add_amp_results(v, AmpOptions{}, sink);
  const Result* acc = find(sink, "amp.fp16.test_accuracy.pct");
  ASSERT_TRUE(acc);
  EXPECT_FALSE(acc->value.has_value());
  EXPECT_EQ(acc->number_param("seeds"), 3);
  EXPECT_EQ(acc->number_param("diverged"), 3);
  EXPECT_EQ(find(sink, "amp.fp16.accuracy_change.points"), nullptr);
}

// The figures through diagnose read as the suite's own verdicts did: one end-to-end check of
// the hand-over (the rules alone: test_diagnose_amp.cpp).
TEST(AmpResults, DiagnoseJudgesTheStudysFigures) {
  ResultSink sink;
  add_amp_results(study(-2.5, -0.1), AmpOptions{}, sink);
  gb::Run run;
  run.results = sink.results();
  diagnose::apply_verdicts(run);
  const Result* loss = run.find("amp.accuracy_loss.pct");
  ASSERT_TRUE(loss);
  EXPECT_EQ(loss->status, Status::fail);
  EXPECT_NE(loss->reason.find("fp16 loses 2.46 points"), std::string::npos) << loss->reason;
  EXPECT_NE(loss->advice.find("BF16"), std::string::npos);
  EXPECT_EQ(run.find("amp.seed_spread.points")->status, Status::pass);
}

Result train_rate(const std::string& key, double v) {
  Result r = Result::measured(key, key, "images/s", {v});
  return r;
}

TEST(AmpSpeed, SpeedupsPerModelAndBatchBesideFp32) {
  std::vector<Result> train{
      train_rate("train.resnet50.fp32.b256.images_per_s", 1000),
      train_rate("train.resnet50.fp16.b256.images_per_s", 5500),
      train_rate("train.resnet50.bf16.b256.images_per_s", 4500),
      train_rate("train.mobilenet_v2.fp32.b64.images_per_s", 2000),
      train_rate("train.mobilenet_v2.fp16.b64.images_per_s", 2100),
      train_rate("train.mobilenet_v2.tf32.b64.images_per_s", 2600),
      train_rate("train.resnet50.fp16.b64.images_per_s", 3000),  // no FP32 beside it: nothing
      train_rate("watch.gpu.util.pct", 50),
  };
  Result skipped = Result::skipped("train.resnet50.tf32.b256.images_per_s", "x", "images/s", "oom");
  train.push_back(skipped);
  ResultSink sink;
  add_amp_speed_results(train, sink);
  ASSERT_EQ(sink.results().size(), 4u);
  const Result* r = find(sink, "amp.speed.resnet50.b256.fp16.speedup");
  ASSERT_TRUE(r && r->value);
  EXPECT_DOUBLE_EQ(*r->value, 5.5);
  EXPECT_EQ(r->number_param("images/s"), 5500);
  EXPECT_EQ(r->number_param("fp32 images/s"), 1000);
  const Result* m = find(sink, "amp.speed.mobilenet_v2.b64.fp16.speedup");
  ASSERT_TRUE(m && m->value);
  EXPECT_DOUBLE_EQ(*m->value, 1.05);
  EXPECT_EQ(m->text_param("model"), "mobilenet_v2");
  EXPECT_EQ(m->number_param("batch"), 64);
  EXPECT_EQ(m->text_param("precision"), "fp16");
  EXPECT_EQ(m->status, Status::info);  // the words are diagnose's
  EXPECT_EQ(m->find_param("verdict"), nullptr);
  EXPECT_EQ(find(sink, "amp.speed.resnet50.b64.fp16.speedup"), nullptr);
}

TEST(AmpSpeed, WithoutAGpuTheCommandSaysSoInsteadOfMeasuring) {
#ifdef GPUBASE_WITH_CUDA
  std::string why;
  if (cuda_device_count(why) > 0) GTEST_SKIP() << "this machine has a GPU: the run would train";
#endif
  AmpOptions o;
  o.speed = true;
  o.speed_batches = {64};
  ResultSink sink;
  const AmpOutcome out = run_amp(o, sink);
  EXPECT_FALSE(out.gpu_found);
  EXPECT_FALSE(out.no_gpu_reason.empty());
  for (const Result& r : sink.results()) EXPECT_EQ(r.status, Status::skipped) << r.key;
}

TEST(AmpSkipped, TheChecklistFigureSaysWhyInOneLine) {
  ResultSink sink;
  add_amp_skipped(AmpOptions{}, "no NVIDIA GPU found", sink);
  const Result* loss = find(sink, "amp.accuracy_loss.pct");
  ASSERT_TRUE(loss);
  EXPECT_EQ(loss->status, Status::skipped);
  EXPECT_EQ(loss->reason, "no NVIDIA GPU found");
  EXPECT_EQ(sink.results().size(), 1u);
}

TEST(AmpData, DefaultDirectoryComesFromTheEnvironmentFirst) {
  const auto dir = std::filesystem::temp_directory_path() / "gb-amp-env-test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "train-images-idx3-ubyte.gz") << "x";
  ::setenv("GPUBASE_FASHION_MNIST", dir.c_str(), 1);
  EXPECT_EQ(default_fashion_mnist_dir(), dir.string());
  ::setenv("GPUBASE_FASHION_MNIST", "/nonexistent-gb-dir", 1);
  EXPECT_NE(default_fashion_mnist_dir(), "/nonexistent-gb-dir");
  ::unsetenv("GPUBASE_FASHION_MNIST");
  std::filesystem::remove_all(dir);
}

TEST(AmpData, DefaultDirectoryIsDebiansPackageWithoutTheEnvironment) {
  const std::filesystem::path debian = "/usr/share/datasets/fashion-mnist";
  if (!std::filesystem::exists(debian / "train-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "no " << debian << ": install Debian's dataset-fashion-mnist";
  const char* env = std::getenv("GPUBASE_FASHION_MNIST");
  const std::string saved = env ? env : "";
  ::unsetenv("GPUBASE_FASHION_MNIST");
  EXPECT_EQ(default_fashion_mnist_dir(), debian.string());
  if (env) ::setenv("GPUBASE_FASHION_MNIST", saved.c_str(), 1);
}

}  // namespace
}  // namespace gb::bench
