// tests/unit/test_diagnose_references.cpp: peers' figures are quoted beside our results only on
// the device they were measured on, and say so; the data-wait share is judged with the
// checklist's limits; every achievable reference says whether its fraction is quoted or assumed.
#include <gtest/gtest.h>

#include <string>

#include "diagnose/diagnose.hpp"

namespace {

gb::Run run_on(const std::string& gpu_name, double memory_gib) {
  gb::Run run;
  run.environment = {gb::Fact::text("gpu.name", "GPU", gpu_name),
                     gb::Fact::numeric("gpu.memory", "memory", memory_gib, "GiB", 1)};
  return run;
}

gb::Result images(const std::string& key, double value) {
  return gb::Result::measured(key, key, "images/s", {value});
}

constexpr const char* kBf16 = "train.resnet50.bf16.b256.images_per_s";

}  // namespace

TEST(QuotedReferences, PytorchsFiguresStandBesideAnH200SxmRunAndSayQuoted) {
  gb::Run run = run_on("NVIDIA H200", 139.8);
  run.results.push_back(images(kBf16, 7000));
  gb::diagnose::apply_verdicts(run);
  const gb::Result& r = run.results.front();
  const gb::Reference* eager = r.find_reference("pytorch");
  ASSERT_NE(eager, nullptr);
  EXPECT_EQ(eager->value, 4727);
  EXPECT_EQ(eager->origin, "quoted");
  EXPECT_EQ(eager->source.rfind("quoted: ", 0), 0u) << eager->source;
  EXPECT_NE(eager->source.find("NVIDIA H200 SXM 141GB"), std::string::npos) << eager->source;
  EXPECT_NEAR(eager->ratio, 7000.0 / 4727, 1e-12);
  ASSERT_NE(r.find_reference("torch_compile"), nullptr);
  EXPECT_EQ(r.find_reference("torch_compile")->value, 6815);
  // A peer's figure is a comparison, not a verdict.
  EXPECT_EQ(r.status, gb::Status::info);
}

TEST(QuotedReferences, AnH200NvlIsNotTheCardTheyWereMeasuredOn) {
  gb::Run run = run_on("NVIDIA H200 NVL", 139.8);
  run.results.push_back(images(kBf16, 6000));
  gb::diagnose::apply_verdicts(run);
  EXPECT_TRUE(run.results.front().references.empty());
}

TEST(QuotedReferences, OtherCardsAndUnlistedBatchesGetNone) {
  gb::Run a100 = run_on("NVIDIA A100-SXM4-80GB", 79.2);
  a100.results.push_back(images(kBf16, 3000));
  gb::diagnose::apply_verdicts(a100);
  EXPECT_TRUE(a100.results.front().references.empty());

  gb::Run batch128 = run_on("NVIDIA H200", 139.8);
  batch128.results.push_back(images("train.resnet50.bf16.b128.images_per_s", 6500));
  gb::diagnose::apply_verdicts(batch128);
  EXPECT_TRUE(batch128.results.front().references.empty());
}

TEST(QuotedReferences, ALoaderFedRunIsNotComparedWithASyntheticBatchFigure) {
  gb::Run run = run_on("NVIDIA H200", 139.8);
  run.results.push_back(images(kBf16, 6900));
  run.results.back().param("data", "ImageFolder /data (2,000 samples), 15 workers");
  gb::diagnose::apply_verdicts(run);
  EXPECT_EQ(run.results.front().find_reference("pytorch"), nullptr);
}

TEST(QuotedReferences, TheNvjpegRateOfTorchvisionIsQuotedNotAnAchievableTarget) {
  gb::Run run = run_on("NVIDIA H200", 139.8);
  run.results.push_back(images("loader.gpu_decode.images_per_s", 19000));
  gb::diagnose::apply_verdicts(run);
  const gb::Result& r = run.results.front();
  ASSERT_NE(r.find_reference("torchvision"), nullptr);
  EXPECT_EQ(r.find_reference("torchvision")->origin, "quoted");
  EXPECT_EQ(r.find_reference("achievable"), nullptr);
  EXPECT_EQ(r.status, gb::Status::info);
}

TEST(DataWaitRule, FifteenPercentWaitingWarnsWithTheLoadersAdvice) {
  gb::Run run;
  run.results.push_back(gb::Result::measured("train.resnet50.bf16.b256.data_wait_pct", "wait",
                                             "%", {15.0}, false));
  gb::diagnose::apply_verdicts(run);
  EXPECT_EQ(run.results.front().status, gb::Status::warn);
  EXPECT_NE(run.results.front().reason.find("15 %"), std::string::npos);
  EXPECT_NE(run.results.front().advice.find("--workers"), std::string::npos);
}

TEST(DataWaitRule, UnderTenPercentPassesAndOverTheChecklistsFailLimitFails) {
  gb::Run run;
  run.results.push_back(gb::Result::measured("train.resnet50.bf16.b256.data_wait_pct", "wait",
                                             "%", {0.5}, false));
  run.results.push_back(gb::Result::measured("train.mobilenet_v2.bf16.b256.data_wait_pct",
                                             "wait", "%", {40.0}, false));
  gb::diagnose::apply_verdicts(run);
  EXPECT_EQ(run.results[0].status, gb::Status::pass);
  EXPECT_EQ(run.results[1].status, gb::Status::fail);
}

TEST(AchievableOrigin, AFractionGpubaseMeasuredIsQuotedWithTheCardItCameFrom) {
  gb::Run run = run_on("NVIDIA H200", 139.8);
  run.results.push_back(
      gb::Result::measured("probe.memory.write.gbps", "write", "GB/s", {4600}));
  gb::diagnose::apply_verdicts(run);
  const gb::Reference* a = run.results.front().find_reference("achievable");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->origin, "quoted");
  EXPECT_EQ(a->source.rfind("quoted: ", 0), 0u) << a->source;
  EXPECT_NE(a->source.find("gpubase"), std::string::npos) << a->source;
  EXPECT_EQ(run.results.front().status, gb::Status::pass);
}

TEST(AchievableOrigin, AFractionNobodyMeasuredSaysAssumed) {
  gb::Run run = run_on("NVIDIA H200", 139.8);
  run.results.push_back(gb::Result::measured("probe.memory.triad.gbps", "triad", "GB/s", {4100}));
  gb::diagnose::apply_verdicts(run);
  const gb::Reference* a = run.results.front().find_reference("achievable");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->origin, "assumed");
  EXPECT_EQ(a->source.rfind("assumed: ", 0), 0u) << a->source;
}
