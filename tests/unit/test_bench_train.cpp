// tests/unit/test_bench_train.cpp: the train suite's CPU half -- which configurations a set of
// options asks for (and the usage errors), the result keys, how a measurement becomes results
// (images/s from the median step, a failed configuration for an engine error or a NaN loss,
// Ctrl-C keeping the steps measured, PyTorch's figure on an H200), and the skipped results on a
// machine without a GPU (the CI machine).
#include <gtest/gtest.h>

#include <filesystem>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "bench/train.hpp"
#include "core/error.hpp"

namespace gb::bench {
namespace {

std::vector<std::string> names(const std::vector<TrainConfig>& configs) {
  std::vector<std::string> out;
  for (const TrainConfig& c : configs) out.push_back(c.model + "/" + c.precision);
  return out;
}

// The usage error's message, or "" when train_configs accepts the options.
std::string usage_error(const TrainBenchOptions& o) {
  try {
    (void)train_configs(o);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
    return e.what();
  }
  return "";
}

// A ResNet-50 BF16 batch-256 run on an H200: 50 steps around 54 ms (4,740 images/s).
TrainMeasurement h200_bf16() {
  TrainMeasurement m;
  m.config = {"resnet50", "bf16", 256, false};
  m.warmup = 20;
  m.steps_asked = 50;
  for (int i = 0; i < 50; ++i) m.step_ms.push_back(54.0 + 0.02 * (i % 7));
  m.first_loss = 6.94f;
  m.final_loss = 6.91f;
  m.parameter_count = 25557032;
  m.trainer_bytes = std::size_t(21) << 30;
  m.used_bytes = std::size_t(23) << 30;
  m.total_bytes = std::size_t(140) << 30;
  m.input_layout = "NHWC bf16";
  return m;
}

// Asked before running: on a GPU host run_train_bench would train.
bool has_gpu() {
#ifdef GPUBASE_WITH_CUDA
  std::string why;
  return cuda_device_count(why) > 0;
#else
  return false;
#endif
}

const Result* find(const std::vector<Result>& results, const std::string& key) {
  for (const Result& r : results)
    if (r.key == key) return &r;
  return nullptr;
}

TEST(TrainOptions, DefaultIsResNet50InAllFourPrecisionsAtBatch256WithCudaGraphs) {
  const auto configs = train_configs({});
  EXPECT_EQ(names(configs), (std::vector<std::string>{"resnet50/fp32", "resnet50/tf32",
                                                      "resnet50/fp16", "resnet50/bf16"}));
  for (const TrainConfig& c : configs) {
    EXPECT_EQ(c.batch, 256);
    EXPECT_TRUE(c.cuda_graph);
  }
}

TEST(TrainOptions, ModelsThenPrecisionsInCanonicalOrderEachOnce) {
  TrainBenchOptions o;
  o.models = {"small_resnet", "resnet50", "small_resnet"};
  o.precisions = {"bf16", "fp32", "bf16"};
  EXPECT_EQ(names(train_configs(o)),
            (std::vector<std::string>{"resnet50/fp32", "resnet50/bf16", "small_resnet/fp32",
                                      "small_resnet/bf16"}));
}

TEST(TrainOptions, NamesIgnoreCaseAndSurroundingBlanks) {
  TrainBenchOptions o;
  o.models = {" MobileNet_V2"};
  o.precisions = {"BF16 ", "Fp16"};
  EXPECT_EQ(names(train_configs(o)),
            (std::vector<std::string>{"mobilenet_v2/fp16", "mobilenet_v2/bf16"}));
}

TEST(TrainOptions, UnknownModelIsAUsageErrorListingTheModels) {
  TrainBenchOptions o;
  o.models = {"vgg16"};
  const std::string e = usage_error(o);
  EXPECT_NE(e.find("unknown model 'vgg16'"), std::string::npos) << e;
  EXPECT_NE(e.find("resnet50, mobilenet_v2, small_resnet"), std::string::npos) << e;
}

TEST(TrainOptions, UnknownPrecisionIsAUsageErrorListingThePrecisions) {
  TrainBenchOptions o;
  o.precisions = {"fp8"};
  const std::string e = usage_error(o);
  EXPECT_NE(e.find("unknown precision 'fp8'"), std::string::npos) << e;
  EXPECT_NE(e.find("fp32, tf32, fp16, bf16"), std::string::npos) << e;
}

TEST(TrainOptions, BatchStepsAndWarmupOutOfRangeAreUsageErrors) {
  TrainBenchOptions o;
  o.batch = 0;
  EXPECT_NE(usage_error(o).find("--batch 0"), std::string::npos);
  o = {};
  o.steps = 0;
  EXPECT_NE(usage_error(o).find("--steps 0"), std::string::npos);
  o = {};
  o.warmup = -1;
  EXPECT_NE(usage_error(o).find("--warmup -1"), std::string::npos);
  o = {};
  o.warmup = 0;
  o.cuda_graph = false;
  EXPECT_EQ(usage_error(o), "");  // no warm-up is allowed without a graph
}

TEST(TrainOptions, GraphCaptureNeedsWarmupSteps) {
  TrainBenchOptions o;
  o.cuda_graph = true;
  o.warmup = kTrainMinGraphWarmup - 1;
  EXPECT_NE(usage_error(o).find("--graph"), std::string::npos);
  EXPECT_NE(usage_error(o).find("--no-graph"), std::string::npos);
  o.warmup = kTrainMinGraphWarmup;
  EXPECT_EQ(usage_error(o), "");
  for (const TrainConfig& c : train_configs(o)) EXPECT_TRUE(c.cuda_graph);
}

TEST(TrainKeys, NameModelPrecisionBatchAndFigure) {
  EXPECT_EQ(train_key({"resnet50", "bf16", 256, false}, "images_per_s"),
            "train.resnet50.bf16.b256.images_per_s");
  EXPECT_EQ(train_key({"small_resnet", "fp32", 64, true}, "step_ms"),
            "train.small_resnet.fp32.b64.step_ms");
}

TEST(TrainResults, FedByTheLoaderAddsTheDataWaitShareAndDropsTheTorchRatio) {
  TrainMeasurement m = h200_bf16();
  m.data_source = "ImageFolder /data (2,000 samples), 15 workers";
  // Every step took 60 ms from one to the next, of which the step itself 51: 15 % waiting.
  m.step_ms.assign(50, 60.0);
  m.gpu_step_ms.assign(50, 51.0);
  const auto results = train_results(m);
  ASSERT_EQ(results.size(), 4u);
  const Result* wait = find(results, "train.resnet50.bf16.b256.data_wait_pct");
  ASSERT_TRUE(wait && wait->value);
  EXPECT_NEAR(*wait->value, 15.0, 1e-9);
  EXPECT_EQ(wait->status, Status::info);  // the verdict is diagnose's (test_diagnose_references)
  EXPECT_FALSE(wait->higher_is_better);
  EXPECT_EQ(wait->number_param("gpu_step_ms"), 51.0);
  EXPECT_EQ(wait->number_param("step_ms"), 60.0);
  const Result* ips = find(results, "train.resnet50.bf16.b256.images_per_s");
  ASSERT_TRUE(ips);
  EXPECT_EQ(ips->text_param("data"), m.data_source);
  EXPECT_TRUE(ips->references.empty());
}

TEST(TrainResults, WhereTheTimeWentIsAParamPerPhaseAndOneProgressLine) {
  TrainMeasurement m = h200_bf16();
  m.phases = {{"build", 6.14},
              {"model_alone", 2.0},
              {"feed_start", 9.3},
              {"warmup", 12.04},
              {"timed", 8.0}};
  const auto results = train_results(m);
  const Result* ips = find(results, "train.resnet50.bf16.b256.images_per_s");
  ASSERT_TRUE(ips);
  EXPECT_EQ(ips->number_param("phase_build_s"), 6.14);
  EXPECT_EQ(ips->number_param("phase_model_alone_s"), 2.0);
  EXPECT_EQ(ips->number_param("phase_warmup_s"), 12.04);
  EXPECT_EQ(ips->number_param("phase_timed_s"), 8.0);
  EXPECT_EQ(phases_text(m.phases),
            "build 6.1 s, model alone 2.0 s, feed start 9.3 s, warm-up 12.0 s, timed 8.0 s");
  EXPECT_EQ(phases_text({}), "");
}

TEST(TrainOptions, DataFeedsOnlyThe224ModelsFromAPathThatExists) {
  TrainBenchOptions o;
  o.data = std::filesystem::temp_directory_path().string();
  o.models = {"small_resnet"};
  EXPECT_NE(usage_error(o).find("--data"), std::string::npos);
  o.models = {"resnet50", "mobilenet_v2"};
  EXPECT_EQ(usage_error(o), "");
  o.data_prefetch = 1;
  EXPECT_NE(usage_error(o).find("--prefetch"), std::string::npos);
  o.data_prefetch = 4;
  o.data = "/no/such/dataset";
  EXPECT_NE(usage_error(o).find("no such file"), std::string::npos);
}

TEST(TrainOptions, DecodeAndGpuShareChooseHowTheDataIsDecoded) {
  TrainBenchOptions o;
  o.data_decode = pipeline::DecodeMode::gpu;
  EXPECT_NE(usage_error(o).find("--data"), std::string::npos);  // no data: nothing to decode
  o.data = std::filesystem::temp_directory_path().string();
  EXPECT_EQ(usage_error(o), "");
  o.data_gpu_share = 0.5;
  EXPECT_NE(usage_error(o).find("--decode both"), std::string::npos);
  o.data_decode = pipeline::DecodeMode::both;
  EXPECT_EQ(usage_error(o), "");
  o.data_gpu_share = 0;  // balanced from the two paths' rates
  EXPECT_EQ(usage_error(o), "");
  for (const double bad : {-0.1, 1.5, std::nan("")}) {
    o.data_gpu_share = bad;
    EXPECT_NE(usage_error(o).find("--gpu-share"), std::string::npos) << bad;
  }
}

TEST(TrainResults, AFedRunSaysWhichDecodeModeFedIt) {
  TrainMeasurement m = h200_bf16();
  m.data_source = "ImageFolder /data (2,000 samples), CPU/GPU split, 70 % to nvJPEG";
  m.step_ms.assign(50, 60.0);
  m.gpu_step_ms.assign(50, 58.0);
  m.data_decode = "both";
  m.data_gpu_share = 0.7;
  m.data_gpu_share_source = "asked";
  m.data_nvjpeg_backend = "hardware";
  m.data_decode_failures = 1;
  m.data_decode_host_ms = 8.8;
  m.data_decode_gpu_ms = 9.3;
  const auto results = train_results(m);
  for (const char* key :
       {"train.resnet50.bf16.b256.images_per_s", "train.resnet50.bf16.b256.data_wait_pct"}) {
    SCOPED_TRACE(key);
    const Result* r = find(results, key);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->text_param("decode"), "both");
    EXPECT_EQ(r->number_param("gpu_share_pct"), 70.0);
    EXPECT_EQ(r->text_param("gpu_share_source"), "asked");
    EXPECT_EQ(r->text_param("nvjpeg_backend"), "hardware");
    EXPECT_EQ(r->number_param("decode_failures"), 1);
    EXPECT_EQ(r->number_param("decode_host_ms_per_batch"), 8.8);
    EXPECT_EQ(r->number_param("decode_gpu_ms_per_batch"), 9.3);
  }
  m.data_decode = "cpu";
  m.data_gpu_share.reset();
  m.data_nvjpeg_backend.clear();
  m.data_decode_host_ms.reset();
  m.data_decode_gpu_ms.reset();
  const std::vector<Result> cpu_results = train_results(m);  // find() points into it
  const Result* cpu = find(cpu_results, "train.resnet50.bf16.b256.images_per_s");
  ASSERT_TRUE(cpu);
  EXPECT_EQ(cpu->text_param("decode"), "cpu");
  EXPECT_FALSE(cpu->find_param("gpu_share_pct"));
  EXPECT_FALSE(cpu->find_param("nvjpeg_backend"));
  EXPECT_FALSE(cpu->find_param("decode_host_ms_per_batch"));
}

TEST(TrainResults, APipelineThatCannotRunHereSkipsTheConfigurationWithTheReason) {
  TrainMeasurement m;
  m.config = {"resnet50", "bf16", 256, true};
  m.data_source = "ImageFolder /data (2,000 samples)";
  m.data_decode = "gpu";
  m.skipped_reason = "libnvjpeg not found (tried libnvjpeg.so.13: no such file)";
  const auto results = train_results(m);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].key, "train.resnet50.bf16.b256.images_per_s");
  EXPECT_EQ(results[0].status, Status::skipped);
  EXPECT_EQ(results[0].reason, m.skipped_reason);
  EXPECT_FALSE(results[0].value);
  EXPECT_EQ(results[0].text_param("decode"), "gpu");
}

TEST(TrainResults, AMeasuredConfigurationGivesImagesStepTimeAndMemory) {
  const auto results = train_results(h200_bf16());
  ASSERT_EQ(results.size(), 3u);
  const Result* ips = find(results, "train.resnet50.bf16.b256.images_per_s");
  const Result* step = find(results, "train.resnet50.bf16.b256.step_ms");
  const Result* mem = find(results, "train.resnet50.bf16.b256.memory_gib");
  ASSERT_TRUE(ips && step && mem);
  EXPECT_EQ(ips->status, Status::info);
  EXPECT_EQ(ips->unit, "images/s");
  ASSERT_TRUE(ips->value && step->value);
  EXPECT_DOUBLE_EQ(*ips->value, 256 * 1e3 / *step->value);  // from the median step
  EXPECT_EQ(ips->samples.size(), 50u);
  EXPECT_FALSE(step->higher_is_better);
  EXPECT_EQ(step->samples.size(), 50u);
  EXPECT_NEAR(*mem->value, 21.0, 1e-9);
  EXPECT_EQ(ips->text_param("model"), "resnet50");
  EXPECT_EQ(ips->text_param("precision"), "bf16");
  EXPECT_EQ(ips->number_param("batch"), 256);
  EXPECT_EQ(ips->text_param("graph"), "no");
  EXPECT_EQ(ips->number_param("parameters"), 25557032);
  EXPECT_NEAR(*ips->number_param("final_loss"), 6.91, 1e-6);
  EXPECT_EQ(ips->number_param("steps"), 50);
  EXPECT_NEAR(*mem->number_param("device_memory_total_gib"), 140.0, 0.05);
}

TEST(TrainResults, TheSuiteAttachesNoPeerFigures) {
  // PyTorch's quoted figures are attached by diagnose, on the device they were measured on.
  EXPECT_TRUE(train_results(h200_bf16()).front().references.empty());
}

TEST(TrainResults, ANanLossFailsTheConfigurationWithoutAFigure) {
  TrainMeasurement m = h200_bf16();
  m.final_loss = std::numeric_limits<float>::quiet_NaN();
  const auto results = train_results(m);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].key, "train.resnet50.bf16.b256.images_per_s");
  EXPECT_EQ(results[0].status, Status::fail);
  EXPECT_FALSE(results[0].value.has_value());
  EXPECT_NE(results[0].reason.find("loss is NaN"), std::string::npos) << results[0].reason;
  EXPECT_NE(results[0].reason.find("first loss 6.940"), std::string::npos) << results[0].reason;
}

TEST(TrainResults, AnInfiniteLossFailsToo) {
  TrainMeasurement m = h200_bf16();
  m.final_loss = std::numeric_limits<float>::infinity();
  const auto results = train_results(m);
  EXPECT_EQ(results.front().status, Status::fail);
  EXPECT_NE(results.front().reason.find("infinite"), std::string::npos);
}

TEST(TrainResults, AnEngineErrorFailsTheConfigurationWithItsMessage) {
  TrainMeasurement m;
  m.config = {"resnet50", "fp32", 4096, false};
  m.error =
      "out of memory: ResNet-50 fp32 at batch 4096 needs 301.2 GiB, the device has 139.8 "
      "GiB free; batch 1536 fits";
  const auto results = train_results(m);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].status, Status::fail);
  EXPECT_EQ(results[0].reason, m.error);
  EXPECT_EQ(results[0].number_param("batch"), 4096);
}

TEST(TrainResults, CtrlCDuringTheTimedStepsKeepsTheStepsMeasured) {
  TrainMeasurement m = h200_bf16();
  m.step_ms.resize(12);
  m.interrupted = true;
  const auto results = train_results(m);
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[0].status, Status::info);
  EXPECT_EQ(results[0].samples.size(), 12u);
  EXPECT_EQ(results[0].number_param("steps"), 12);
  EXPECT_EQ(results[0].number_param("steps_asked"), 50);
}

TEST(TrainResults, CtrlCBeforeAnyTimedStepIsSkippedNotFailed) {
  TrainMeasurement m;
  m.config = {"mobilenet_v2", "fp16", 256, false};
  m.interrupted = true;
  const auto results = train_results(m);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].status, Status::skipped);
  EXPECT_NE(results[0].reason.find("interrupted"), std::string::npos);
}

TEST(TrainResults, AfterCtrlCEveryConfigurationNotMeasuredIsSkipped) {
  const std::vector<TrainConfig> configs = {{"resnet50", "fp32", 256, true},
                                            {"resnet50", "bf16", 256, true},
                                            {"mobilenet_v2", "bf16", 256, true}};
  const std::vector<Result> reported = train_results(h200_bf16());  // resnet50 bf16 b256
  const auto rest = train_unmeasured_results(configs, reported);
  ASSERT_EQ(rest.size(), 2u);
  EXPECT_EQ(rest[0].key, "train.resnet50.fp32.b256.images_per_s");
  EXPECT_EQ(rest[1].key, "train.mobilenet_v2.bf16.b256.images_per_s");
  for (const Result& r : rest) {
    EXPECT_EQ(r.status, Status::skipped);
    EXPECT_NE(r.reason.find("interrupted"), std::string::npos);
  }
}

TEST(TrainResults, Fp16SkippedUpdatesAreNamed) {
  TrainMeasurement m = h200_bf16();
  m.config.precision = "fp16";
  m.loss_scale = 32768;
  m.skipped_steps = 2;
  const Result r = train_results(m).front();
  EXPECT_EQ(r.number_param("loss_scale"), 32768);
  EXPECT_EQ(r.number_param("skipped_steps"), 2);
  EXPECT_NE(r.reason.find("2 of the 50 timed steps skipped"), std::string::npos) << r.reason;
}

TEST(TrainResults, SkippedResultsOnePerConfigurationWithTheReason) {
  const auto results = train_skipped_results(train_configs({}), "no GPU here");
  ASSERT_EQ(results.size(), 4u);
  EXPECT_EQ(results[3].key, "train.resnet50.bf16.b256.images_per_s");
  for (const Result& r : results) {
    EXPECT_EQ(r.status, Status::skipped);
    EXPECT_EQ(r.reason, "no GPU here");
    EXPECT_FALSE(r.value.has_value());
  }
}

TEST(TrainWithoutGpu, EveryConfigurationIsSkippedWithTheReason) {
  if (has_gpu()) GTEST_SKIP() << "this machine has a GPU";
  ResultSink sink;
  TrainBenchOptions o;
  o.models = {"resnet50", "small_resnet"};
  const TrainBenchOutcome outcome = run_train_bench(o, sink);
  EXPECT_FALSE(outcome.gpu_found);
  EXPECT_EQ(outcome.configurations, 8u);
  ASSERT_EQ(sink.results().size(), 8u);
  for (const Result& r : sink.results()) {
    EXPECT_EQ(r.status, Status::skipped) << r.key;
    EXPECT_EQ(r.reason, outcome.no_gpu_reason) << r.key;
  }
  const std::string& why = outcome.no_gpu_reason;
  EXPECT_TRUE(why.find("no NVIDIA driver") != std::string::npos ||
              why.find("no NVIDIA GPU") != std::string::npos ||
              why.find("without CUDA") != std::string::npos)
      << why;
}

TEST(TrainWithoutGpu, BadOptionsAreUsageErrorsBeforeTheGpuIsLookedFor) {
  ResultSink sink;
  TrainBenchOptions o;
  o.models = {"resnet18"};
  EXPECT_THROW((void)run_train_bench(o, sink), Error);
  EXPECT_TRUE(sink.results().empty());
}

}  // namespace
}  // namespace gb::bench
