// tests/gpu/test_nn_trainer.cpp: the Trainer end to end: parameter counts equal torchvision's
// (a check of the architectures), the small ResNet's loss falls on a fixed random batch in every
// precision, a CUDA-graph step gives the loss of an eager step, ResNet-50 and MobileNetV2 take
// steps with a sane first loss in every precision, an impossible batch is an out-of-memory
// gb::Error naming the bytes and a batch that fits (not a crash), and options are validated.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/error.hpp"
#include "nn/models.hpp"
#include "nn/trainer.hpp"
#include "nn/trainer_impl.hpp"
#include "nn/kernels.hpp"
#include "test_nn_util.hpp"

namespace gb::nn {
namespace {

std::size_t count_parameters(Model m) {
  Network net(ElementType::f32, false, 1);
  build_model(net, m, default_input(m));
  return net.params().count();
}

TEST(NnModels, ParameterCountsMatchTorchvision) {
  EXPECT_EQ(count_parameters(Model::resnet50), 25557032u);     // torchvision.models.resnet50()
  EXPECT_EQ(count_parameters(Model::mobilenet_v2), 3504872u);  // torchvision.models.mobilenet_v2()
  EXPECT_EQ(count_parameters(Model::small_resnet), 174970u);   // documented in nn/models.hpp
}

TEST(NnModels, NamesAndParsingRoundTrip) {
  for (Model m : {Model::resnet50, Model::mobilenet_v2, Model::small_resnet})
    EXPECT_EQ(parse_model(to_string(m)), m);
  for (Precision p : {Precision::fp32, Precision::tf32, Precision::fp16, Precision::bf16})
    EXPECT_EQ(parse_precision(to_string(p)), p);
  EXPECT_FALSE(parse_model("vgg16").has_value());
  EXPECT_FALSE(parse_precision("fp8").has_value());
}

TrainerOptions small_options(Precision p, int batch) {
  TrainerOptions o;
  o.model = Model::small_resnet;
  o.input = default_input(Model::small_resnet);
  o.precision = p;
  o.batch = batch;
  o.seed = 7;
  o.learning_rate = 0.05f;
  return o;
}

class NnTrainerPrecision : public ::testing::TestWithParam<Precision> {};

// A batch the test owns, in the trainer's input format.
struct OwnBatch {
  OwnBatch(const Trainer& t, std::uint64_t seed) {
    const TrainerOptions& o = t.options();
    const InputFormat f = t.input_format();
    const ElementType dt = f.dtype;
    const std::size_t n = static_cast<std::size_t>(o.batch) * o.input.channels *
                          o.input.height * o.input.width;
    images = gpu::DeviceBuffer(n * element_bytes(dt));
    labels = gpu::DeviceBuffer(static_cast<std::size_t>(o.batch) * sizeof(std::int32_t));
    fill_normal(images.data(), n, dt, seed, t.stream());
    fill_labels(labels.as<std::int32_t>(), static_cast<std::size_t>(o.batch), o.input.classes,
                seed, t.stream());
    GB_CHECK_CUDA(cudaStreamSynchronize(t.stream()));
  }
  DeviceBatch batch() const { return DeviceBatch{images.data(), labels.as<std::int32_t>()}; }
  gpu::DeviceBuffer images, labels;
};

TEST_P(NnTrainerPrecision, SmallResnetLossFallsOnAFixedBatch) {
  GB_NN_REQUIRE_GPU();
  Trainer t(small_options(GetParam(), 64));
  const OwnBatch b(t, 3);
  t.train_step(b.batch());
  const StepResult first = t.last_step();
  ASSERT_TRUE(std::isfinite(first.loss));
  EXPECT_NEAR(first.loss, std::log(10.f), 1.0f);  // ~ln(classes) at initialisation
  const std::size_t correct_before = t.evaluate(b.batch(), 64);
  for (int i = 1; i < 50; ++i) t.train_step(b.batch());
  const StepResult last = t.last_step();
  EXPECT_LT(last.loss, 0.75f * first.loss) << "first " << first.loss << ", last " << last.loss;
  // Random labels on random images get memorised: evaluation on the same batch improves.
  const std::size_t correct_after = t.evaluate(b.batch(), 64);
  EXPECT_LE(correct_after, 64u);
  EXPECT_GT(correct_after, correct_before);
  const std::vector<float> grads = t.gradients();
  EXPECT_EQ(grads.size(), t.parameter_count());
  if (!last.skipped) {
    std::size_t nonfinite = 0, nonzero = 0;
    for (float g : grads) nonfinite += std::isfinite(g) ? 0 : 1, nonzero += g != 0.f ? 1 : 0;
    EXPECT_EQ(nonfinite, 0u);
    EXPECT_GT(nonzero, grads.size() / 2);
  }
  if (GetParam() == Precision::fp16) {
    // GradScaler semantics: a few early steps may overflow at 2^16 and be skipped, each halving
    // the scale; no growth within 2000 clean steps.
    const Trainer::ScalerStats s = t.scaler_stats();
    EXPECT_EQ(s.steps, 50u);
    EXPECT_LT(s.skipped, 10u);
    EXPECT_EQ(s.scale, std::ldexp(65536.f, -static_cast<int>(s.skipped)));
    EXPECT_EQ(last.loss_scale, last.skipped ? 2 * s.scale : s.scale);
  } else {
    EXPECT_EQ(last.loss_scale, 1.f);
    EXPECT_EQ(t.scaler_stats().steps, 0u);
  }
}

TEST_P(NnTrainerPrecision, CudaGraphStepsGiveTheLossesOfEagerSteps) {
  GB_NN_REQUIRE_GPU();
  TrainerOptions o = small_options(GetParam(), 32);
  // The heuristic picks the same convolution algorithms for both trainers (measuring could pick
  // different ones), so only the execution mode differs.
  setenv("GPUBASE_NN_CONV_ALGO", "heuristic", 1);
  Trainer eager(o);
  o.cuda_graph = true;
  Trainer graphed(o);
  unsetenv("GPUBASE_NN_CONV_ALGO");
  // Left: atomics in some backward kernels (summation order), amplified by 16-bit rounding.
  const bool reduced = GetParam() == Precision::fp16 || GetParam() == Precision::bf16;
  const double tol = reduced ? 5e-3 : 1e-3;
  eager.make_synthetic_batch(5);
  graphed.make_synthetic_batch(5);
  // Step 1 eager in both; step 2 is captured then launched; steps 3-5 replay.
  for (int step = 1; step <= 5; ++step) {
    eager.train_step_synthetic();
    graphed.train_step_synthetic();
    const float a = eager.last_step().loss, g = graphed.last_step().loss;
    ASSERT_TRUE(std::isfinite(a));
    EXPECT_NEAR(g, a, tol * std::fabs(a)) << "step " << step;
  }
  if (GetParam() == Precision::fp16) {
    EXPECT_EQ(graphed.scaler_stats().steps, 5u);
  }
}

TEST_P(NnTrainerPrecision, SetLearningRateReachesACapturedGraph) {
  GB_NN_REQUIRE_GPU();
  TrainerOptions o = small_options(GetParam(), 16);
  o.cuda_graph = true;
  Trainer t(o);
  t.make_synthetic_batch(9);
  t.train_step_synthetic();
  t.train_step_synthetic();  // captured
  t.set_learning_rate(0.f);  // with lr 0 (and momentum buffers applied with lr 0) nothing moves
  t.train_step_synthetic();
  const float a = t.last_step().loss;
  t.train_step_synthetic();
  const float b = t.last_step().loss;
  EXPECT_NEAR(a, b, 1e-3 * std::fabs(a));
}

INSTANTIATE_TEST_SUITE_P(AllPrecisions, NnTrainerPrecision,
                         ::testing::Values(Precision::fp32, Precision::tf32, Precision::fp16,
                                           Precision::bf16),
                         [](const ::testing::TestParamInfo<Precision>& i) {
                           return std::string(to_string(i.param));
                         });

struct ModelCase {
  Model model;
  Precision precision;
};

class NnTrainerModels : public ::testing::TestWithParam<ModelCase> {};

TEST_P(NnTrainerModels, TakesStepsWithASaneFirstLoss) {
  GB_NN_REQUIRE_GPU();
  TrainerOptions o;
  o.model = GetParam().model;
  o.precision = GetParam().precision;
  o.input = default_input(o.model);
  o.batch = 8;
  o.cuda_graph = true;
  if (std::getenv("GPUBASE_NN_VERBOSE")) {  // the layer list with algorithms and fusions
    Trainer::Impl described(o);
    std::printf("%s", described.describe().c_str());
  }
  Trainer t(o);
  EXPECT_EQ(t.input_format().nhwc, o.precision == Precision::fp16 || o.precision == Precision::bf16);
  EXPECT_GT(t.device_bytes(), t.parameter_bytes());
  t.make_synthetic_batch(1);
  t.train_step_synthetic();
  const StepResult first = t.last_step();
  // Cross-entropy of 1000 classes at initialisation is about ln(1000) = 6.9.
  EXPECT_GT(first.loss, 4.f);
  EXPECT_LT(first.loss, 10.f);
  for (int i = 0; i < 3; ++i) t.train_step_synthetic();
  const StepResult later = t.last_step();
  EXPECT_TRUE(std::isfinite(later.loss)) << later.loss;
  if (o.precision != Precision::fp16) {  // FP16 may skip early steps (scale 2^16 overflows)
    EXPECT_FALSE(later.skipped);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Imagenet, NnTrainerModels,
    ::testing::Values(ModelCase{Model::resnet50, Precision::fp32},
                      ModelCase{Model::resnet50, Precision::tf32},
                      ModelCase{Model::resnet50, Precision::fp16},
                      ModelCase{Model::resnet50, Precision::bf16},
                      ModelCase{Model::mobilenet_v2, Precision::fp32},
                      ModelCase{Model::mobilenet_v2, Precision::fp16},
                      ModelCase{Model::mobilenet_v2, Precision::bf16}),
    [](const ::testing::TestParamInfo<ModelCase>& i) {
      return std::string(to_string(i.param.model)) + "_" + std::string(to_string(i.param.precision));
    });

TEST(NnTrainer, AnImpossibleBatchIsAnOutOfMemoryErrorWithABatchThatFits) {
  GB_NN_REQUIRE_GPU();
  TrainerOptions o;
  o.model = Model::resnet50;
  o.precision = Precision::fp32;
  o.batch = 1 << 17;  // ~10 TB of activations
  try {
    Trainer t(o);
    FAIL() << "no error for batch " << o.batch;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::runtime);
    const std::string msg = e.what();
    EXPECT_NE(msg.find("out of device memory"), std::string::npos) << msg;
    EXPECT_NE(msg.find("needs about"), std::string::npos) << msg;
    EXPECT_NE(msg.find("a batch of "), std::string::npos) << msg;
    // The suggestion must really fit: build a trainer at the suggested batch.
    const std::size_t at = msg.find("a batch of ");
    const int suggested = std::stoi(msg.substr(at + 11));
    ASSERT_GE(suggested, 1);
    // (Heuristic algorithm choice: measuring every algorithm at that batch takes long.)
    o.batch = suggested;
    setenv("GPUBASE_NN_CONV_ALGO", "heuristic", 1);
    EXPECT_NO_THROW(Trainer fits(o)) << "suggested batch " << suggested;
    unsetenv("GPUBASE_NN_CONV_ALGO");
  }
  // The device is still usable afterwards.
  Trainer small(small_options(Precision::fp32, 8));
  small.train_step_synthetic();
  EXPECT_TRUE(std::isfinite(small.last_step().loss));
}

TEST(NnTrainer, AForwardOnlyTrainerEvaluatesLikeAFullOneAndRefusesToTrain) {
  GB_NN_REQUIRE_GPU();
  TrainerOptions o = small_options(Precision::fp32, 64);
  Trainer full(o);
  o.forward_only = true;
  Trainer inference(o);  // same seed: the same initial weights
  const OwnBatch b(full, 5);
  const std::size_t want = full.evaluate(b.batch(), 64);
  const std::size_t got = inference.evaluate(b.batch(), 64);
  // Each trainer times its own forward algorithms: a different winner may round differently,
  // flipping at most a near-tie.
  EXPECT_NEAR(static_cast<double>(got), static_cast<double>(want), 1.0);
  inference.make_synthetic_batch(1);
  inference.infer_synthetic();
  GB_CHECK_CUDA(cudaStreamSynchronize(inference.stream()));
  EXPECT_THROW(inference.train_step(b.batch()), Error);
}

TEST(NnTrainer, RejectsBadOptions) {
  TrainerOptions o = small_options(Precision::fp32, 0);
  EXPECT_THROW(Trainer t(o), Error);
  o.batch = 4;
  o.input.height = 0;
  EXPECT_THROW(Trainer t(o), Error);
  o.input = default_input(Model::small_resnet);
  o.input.classes = 1;
  EXPECT_THROW(Trainer t(o), Error);
}

}  // namespace
}  // namespace gb::nn
