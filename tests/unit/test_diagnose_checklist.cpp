// tests/unit/test_diagnose_checklist.cpp: the baseline checklist. "card speed" rolls up the probe
// verdicts; the four questions (docs/thresholds.md "Checklist") name the command that measures
// them until it has.
#include <gtest/gtest.h>

#include <string>

#include "diagnose/diagnose.hpp"
#include "test_report_fixture.hpp"

namespace {

const gb::ChecklistRow* row(const std::vector<gb::ChecklistRow>& rows, const std::string& id) {
  for (const auto& r : rows)
    if (r.id == id) return &r;
  return nullptr;
}

gb::Run with_result(const std::string& key, double value, const std::string& unit = "%") {
  gb::Run run;
  run.results.push_back(gb::Result::measured(key, key, unit, {value}));
  return run;
}

}  // namespace

TEST(Checklist, MissingSuitesSayWhichCommandMeasuresThem) {
  const auto rows = gb::diagnose::build_checklist(gb::Run{});
  const gb::ChecklistRow* gpu = row(rows, "gpu_util");
  const gb::ChecklistRow* cpu = row(rows, "cpu_util");
  const gb::ChecklistRow* loading = row(rows, "data_loading");
  const gb::ChecklistRow* amp = row(rows, "amp_accuracy");
  ASSERT_TRUE(gpu && cpu && loading && amp);
  EXPECT_EQ(gpu->status, gb::Status::skipped);
  EXPECT_FALSE(gpu->measured.has_value());
  EXPECT_EQ(gpu->evidence, "measured by `gpubase watch -- CMD` (not run)");
  EXPECT_EQ(cpu->evidence, "measured by `gpubase watch -- CMD` (not run)");
  EXPECT_EQ(loading->evidence,
            "measured by `gpubase loader` or `gpubase train --data` (not run)");
  EXPECT_EQ(amp->evidence, "measured by `gpubase amp` (not run)");
}

TEST(Checklist, RowsFollowDesignTargets) {
  const auto rows = gb::diagnose::build_checklist(gb::Run{});
  EXPECT_EQ(row(rows, "gpu_util")->target, "> 95 %");
  EXPECT_EQ(row(rows, "cpu_util")->target, "< 80 %");
  EXPECT_EQ(row(rows, "data_loading")->target, "< 10 %");
  EXPECT_EQ(row(rows, "amp_accuracy")->target, "< 1 %");
}

TEST(Checklist, NoCardSpeedRowWithoutProbeResults) {
  EXPECT_EQ(row(gb::diagnose::build_checklist(gb::Run{}), "card_speed"), nullptr);
}

TEST(Checklist, CardSpeedRollsUpTheWorstProbeVerdict) {
  const gb::Run run = gb::test::h200_degraded_link_run();
  const gb::ChecklistRow* card = row(run.checklist, "card_speed");
  ASSERT_NE(card, nullptr);
  EXPECT_EQ(card->status, gb::Status::fail);
  ASSERT_TRUE(card->measured.has_value());
  EXPECT_NE(card->measured->find("PCIe 12 %"), std::string::npos) << *card->measured;
  EXPECT_NE(card->advice.find("PCIe link is Gen3 x8 under load"), std::string::npos)
      << card->advice;
}

TEST(Checklist, CardSpeedPassesWhenEveryFigurePasses) {
  gb::Run run;
  run.environment = {{"gpu.name", "GPU", "NVIDIA H200"}};
  run.results.push_back(
      gb::Result::measured("probe.gemm.bf16.tflops", "BF16 GEMM", "TFLOP/s", {791}));
  run.results.push_back(
      gb::Result::measured("probe.memory.copy.gbps", "HBM copy", "GB/s", {4250}));
  gb::diagnose::apply_verdicts(run);
  const auto rows = gb::diagnose::build_checklist(run);
  const gb::ChecklistRow* card = row(rows, "card_speed");
  ASSERT_NE(card, nullptr);
  EXPECT_EQ(card->status, gb::Status::pass);
  EXPECT_EQ(*card->measured, "compute 100 %, HBM 100 % of achievable");
  EXPECT_TRUE(card->advice.empty());
}

TEST(Checklist, CardSpeedIsSkippedWhenTheProbeCouldNotRun) {
  const gb::Run run = gb::test::no_gpu_run();
  const gb::ChecklistRow* card = row(run.checklist, "card_speed");
  ASSERT_NE(card, nullptr);
  EXPECT_EQ(card->status, gb::Status::skipped);
  EXPECT_NE(card->evidence.find("no NVIDIA driver"), std::string::npos);
}

TEST(Checklist, GpuUtilizationAbove95Passes) {
  const auto rows = gb::diagnose::build_checklist(with_result("watch.gpu.util.pct", 97));
  EXPECT_EQ(row(rows, "gpu_util")->status, gb::Status::pass);
  EXPECT_EQ(*row(rows, "gpu_util")->measured, "97 %");
}

TEST(Checklist, GpuUtilizationFarBelowTargetFailsWithAdvice) {
  const auto rows = gb::diagnose::build_checklist(with_result("watch.gpu.util.pct", 60));
  EXPECT_EQ(row(rows, "gpu_util")->status, gb::Status::fail);
  EXPECT_FALSE(row(rows, "gpu_util")->advice.empty());
}

TEST(Checklist, BusiestCoreAbove80PercentWarns) {
  const auto rows = gb::diagnose::build_checklist(with_result("watch.cpu.busiest_core.pct", 88));
  EXPECT_EQ(row(rows, "cpu_util")->status, gb::Status::warn);
}

TEST(Checklist, DataLoadingShareUnderTenPercentPasses) {
  const auto rows = gb::diagnose::build_checklist(with_result("loader.data_wait_share.pct", 4));
  EXPECT_EQ(row(rows, "data_loading")->status, gb::Status::pass);
}

TEST(Checklist, DataLoadingComesFromTheWorstTrainingRunFedByTheLoader) {
  gb::Run run;
  run.results.push_back(gb::Result::measured("train.resnet50.fp32.b256.data_wait_pct", "fp32",
                                             "%", {2.0}));
  run.results.push_back(gb::Result::measured("train.resnet50.bf16.b256.data_wait_pct", "bf16",
                                             "%", {18.0}));
  run.results.push_back(gb::Result::measured("train.resnet50.bf16.b256.images_per_s", "rate",
                                             "images/s", {5000.0}));
  const auto rows = gb::diagnose::build_checklist(run);
  const gb::ChecklistRow* loading = row(rows, "data_loading");
  ASSERT_TRUE(loading);
  EXPECT_EQ(loading->status, gb::Status::warn);  // 18 %: between 10 and 25
  EXPECT_NE(loading->evidence.find("train.resnet50.bf16.b256.data_wait_pct"), std::string::npos);
  // The loader's own figure, when the run has it, is the row's source.
  run.results.push_back(
      gb::Result::measured("loader.data_wait_share.pct", "loader", "%", {0.2}));
  const auto again = gb::diagnose::build_checklist(run);
  EXPECT_EQ(row(again, "data_loading")->status, gb::Status::pass);
}

TEST(Checklist, AmpAccuracyLossAboveTwoPointsFails) {
  const auto rows = gb::diagnose::build_checklist(with_result("amp.accuracy_loss.pct", 3.1));
  EXPECT_EQ(row(rows, "amp_accuracy")->status, gb::Status::fail);
}

TEST(Checklist, SkippedSuiteResultCarriesItsReason) {
  gb::Run run;
  run.results.push_back(gb::Result::skipped("watch.gpu.util.pct", "GPU util", "%",
                                            "NVML unavailable: libnvidia-ml.so.1 not found"));
  const auto rows = gb::diagnose::build_checklist(run);
  EXPECT_EQ(row(rows, "gpu_util")->status, gb::Status::skipped);
  EXPECT_EQ(row(rows, "gpu_util")->evidence,
            "skipped: NVML unavailable: libnvidia-ml.so.1 not found");
}

TEST(Checklist, DataLoadingFromASkippedTrainingRunSaysWhy) {
  gb::Run run;
  run.results.push_back(gb::Result::skipped("train.resnet50.bf16.b256.data_wait_pct", "wait",
                                            "%", "no GPU: no NVIDIA driver found"));
  const auto rows = gb::diagnose::build_checklist(run);
  EXPECT_EQ(row(rows, "data_loading")->status, gb::Status::skipped);
  EXPECT_EQ(row(rows, "data_loading")->evidence, "skipped: no GPU: no NVIDIA driver found");
  // A measured figure beside it wins.
  run.results.push_back(gb::Result::measured("train.resnet50.fp32.b256.data_wait_pct", "fp32",
                                             "%", {2.0}));
  EXPECT_EQ(row(gb::diagnose::build_checklist(run), "data_loading")->status, gb::Status::pass);
}
