// tests/unit/test_diagnose_verdicts.cpp: the per-result verdicts, one behaviour per test.
// Runs are built on an H200 (datasheet BF16 989.4, achievable 0.80 x 989.4 = 791.5 TFLOP/s).
#include <gtest/gtest.h>

#include <string>

#include "diagnose/diagnose.hpp"
#include "diagnose/thresholds.hpp"

namespace {

gb::Run h200_run() {
  gb::Run run;
  run.command = "probe";
  run.environment = {{"gpu.name", "GPU", "NVIDIA H200"},
                     gb::Fact::numeric("gpu.memory", "memory", 139.8, "GiB", 1),
                     gb::Fact::numeric("gpu.sm_clock_max", "SM clock max", 1980, "MHz", 0)};
  return run;
}

gb::Telemetry clean_telemetry() {
  gb::Telemetry t;
  t.samples = 20;
  t.sm_clock_mhz_min = 1980;
  t.sm_clock_mhz_max = 1980;
  t.power_w_mean = 600;
  t.power_limit_w = 700;
  t.temp_c_max = 60;
  t.throttle_reasons = 0;
  return t;
}

gb::Result bf16(double tflops, std::optional<gb::Telemetry> t = clean_telemetry()) {
  gb::Result r = gb::Result::measured("probe.gemm.bf16.tflops", "BF16 GEMM 8192³", "TFLOP/s",
                                      {tflops, tflops, tflops});
  r.telemetry = t;
  return r;
}

gb::Result judged(gb::Run& run, gb::Result r) {
  run.results.push_back(std::move(r));
  gb::diagnose::apply_verdicts(run);
  return run.results.back();
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST(Verdicts, GemmAt80PercentOfDatasheetPasses) {
  gb::Run run = h200_run();
  const gb::Result r = judged(run, bf16(0.80 * 989.4));
  EXPECT_EQ(r.status, gb::Status::pass);
  EXPECT_EQ(r.reason, "792 TFLOP/s = 80 % of datasheet 989, 100 % of achievable 792");
  EXPECT_TRUE(r.advice.empty());
}

TEST(Verdicts, GemmAt40PercentOfDatasheetFailsWithAdvice) {
  gb::Run run = h200_run();
  const gb::Result r = judged(run, bf16(0.40 * 989.4));
  EXPECT_EQ(r.status, gb::Status::fail);
  EXPECT_TRUE(contains(r.reason, "40 % of datasheet 989, 50 % of achievable 792")) << r.reason;
  EXPECT_TRUE(contains(r.advice, "power limit")) << r.advice;
}

TEST(Verdicts, GemmBetween75And90PercentOfAchievableWarns) {
  gb::Run run = h200_run();
  const gb::Result r = judged(run, bf16(0.80 * 791.5));
  EXPECT_EQ(r.status, gb::Status::warn);
  EXPECT_FALSE(r.advice.empty());
}

TEST(Verdicts, AddsDatasheetAndAchievableReferencesFromTheSpecTable) {
  gb::Run run = h200_run();
  const gb::Result r = judged(run, bf16(791));
  const gb::Reference* ds = r.find_reference("datasheet");
  const gb::Reference* ach = r.find_reference("achievable");
  ASSERT_NE(ds, nullptr);
  ASSERT_NE(ach, nullptr);
  EXPECT_DOUBLE_EQ(ds->value, 989.4);
  EXPECT_DOUBLE_EQ(ach->value, 0.80 * 989.4);
  EXPECT_NEAR(ach->ratio, 791 / (0.80 * 989.4), 1e-12);
  EXPECT_TRUE(contains(ach->source, "docs/thresholds.md")) << ach->source;
}

TEST(Verdicts, UsesTheSuitesOwnDatasheetReference) {
  gb::Run run = h200_run();
  gb::Result r = bf16(500);
  r.reference("datasheet", 1000, "probe");
  const gb::Result& j = judged(run, std::move(r));
  EXPECT_DOUBLE_EQ(j.find_reference("achievable")->value, 800);
  EXPECT_EQ(j.references.size(), 2u);
}

TEST(Verdicts, UnknownGpuFallsBackToTheClockAdjustedPeak) {
  gb::Run run;
  run.environment = {{"gpu.name", "GPU", "NVIDIA Future GPU"}};
  gb::Result r = bf16(900);
  r.reference("clock_adjusted", 1000, "SMs x rate x clock");
  const gb::Result& j = judged(run, std::move(r));
  EXPECT_EQ(j.status, gb::Status::pass);
  EXPECT_TRUE(contains(j.reason, "of clock-adjusted peak 1000")) << j.reason;
}

TEST(Verdicts, UnknownGpuWithoutReferenceStaysInfo) {
  gb::Run run;
  run.environment = {{"gpu.name", "GPU", "NVIDIA Future GPU"}};
  EXPECT_EQ(judged(run, bf16(900)).status, gb::Status::info);
}

TEST(Verdicts, ThermalSlowdownMakesTheResultInvalid) {
  gb::Run run = h200_run();
  gb::Telemetry t = clean_telemetry();
  t.throttle_reasons = 0x40;  // HwThermalSlowdown
  t.sm_clock_mhz_min = 1290;
  t.temp_c_max = 91;
  const gb::Result r = judged(run, bf16(600, t));
  EXPECT_EQ(r.status, gb::Status::invalid);
  EXPECT_TRUE(contains(r.reason, "hardware thermal slowdown")) << r.reason;
  EXPECT_TRUE(contains(r.reason, "SM clock fell to 1290 MHz of 1980 MHz max (-35 %)"))
      << r.reason;
  EXPECT_TRUE(r.value.has_value());  // marked, not hidden
  EXPECT_FALSE(r.advice.empty());
}

TEST(Verdicts, EverySlowdownBitInvalidates) {
  for (const std::uint64_t bit : {0x8ull, 0x20ull, 0x40ull, 0x80ull}) {
    gb::Run run = h200_run();
    gb::Telemetry t = clean_telemetry();
    t.throttle_reasons = bit;
    EXPECT_EQ(judged(run, bf16(791, t)).status, gb::Status::invalid) << "bit " << bit;
  }
}

TEST(Verdicts, PowerBrakeIsNamedInTheReason) {
  gb::Run run = h200_run();
  gb::Telemetry t = clean_telemetry();
  t.throttle_reasons = 0x80;
  const gb::Result r = judged(run, bf16(700, t));
  EXPECT_TRUE(contains(r.reason, "power brake")) << r.reason;
  EXPECT_TRUE(contains(r.advice, "power supply")) << r.advice;
}

TEST(Verdicts, PowerCapIsANoteNotAnInvalidation) {
  gb::Run run = h200_run();
  gb::Telemetry t = clean_telemetry();
  t.throttle_reasons = 0x4;  // SwPowerCap
  t.power_w_mean = 690;
  const gb::Result r = judged(run, bf16(791, t));
  EXPECT_EQ(r.status, gb::Status::pass);
  EXPECT_TRUE(contains(r.reason, "ran at the power cap, 690 of 700 W")) << r.reason;
}

TEST(Verdicts, APowerCapHitInBurstsNamesThePeakAndTheMean) {
  // The burst protocol idles between its GEMMs: the mean sits far below the cap it hit (an H100
  // probe: 360 W on average at the 700-W cap).
  gb::Run run = h200_run();
  gb::Telemetry t = clean_telemetry();
  t.throttle_reasons = 0x4;
  t.power_w_mean = 360;
  t.power_w_max = 695;
  const gb::Result r = judged(run, bf16(769, t));
  EXPECT_TRUE(contains(r.reason, "ran at the power cap, up to 695 of 700 W (360 W on average"))
      << r.reason;
}

TEST(Verdicts, IdleAndSyncBoostReasonsChangeNothing) {
  gb::Run run = h200_run();
  gb::Telemetry t = clean_telemetry();
  t.throttle_reasons = 0x1 | 0x10;
  const gb::Result r = judged(run, bf16(791, t));
  EXPECT_EQ(r.status, gb::Status::pass);
  EXPECT_FALSE(contains(r.reason, "power cap"));
}

TEST(Verdicts, ResultWithoutTelemetryIsStillJudged) {
  gb::Run run = h200_run();
  EXPECT_EQ(judged(run, bf16(791, std::nullopt)).status, gb::Status::pass);
}

TEST(Verdicts, HbmCopyIsJudgedAgainstItsAchievableFraction) {
  gb::Run run = h200_run();
  const gb::Result& r =
      judged(run, gb::Result::measured("probe.memory.copy.gbps", "copy", "GB/s", {4250}));
  EXPECT_EQ(r.status, gb::Status::pass);
  EXPECT_EQ(r.reason, "4250 GB/s = 89 % of datasheet 4800, 100 % of achievable 4248");
}

TEST(Verdicts, PinnedCopyIsJudgedAgainstTheLinkMaximum) {
  gb::Run run = h200_run();
  run.gpu.link_max_slot = {5, 16};
  const gb::Result& r =
      judged(run, gb::Result::measured("probe.pcie.h2d.pinned.gbps", "H2D", "GB/s", {55.3}));
  EXPECT_EQ(r.status, gb::Status::pass);
  EXPECT_NEAR(r.find_reference("datasheet")->value, 63.0, 0.05);
  EXPECT_NEAR(r.find_reference("achievable")->value, 0.87 * 63.0, 0.05);
}

TEST(Verdicts, PageableCopyHasNoVerdict) {
  gb::Run run = h200_run();
  const gb::Result r = judged(
      run, gb::Result::measured("probe.pcie.h2d.pageable.gbps", "H2D pageable", "GB/s", {20.7}));
  EXPECT_EQ(r.status, gb::Status::info);
}

TEST(Verdicts, NormalLatencyStaysInfo) {
  gb::Run run = h200_run();
  const gb::Result r = judged(run, gb::Result::measured("probe.latency.launch_host.us",
                                                         "launch", "µs", {2.4}, false));
  EXPECT_EQ(r.status, gb::Status::info);
  EXPECT_TRUE(contains(r.reason, "on a healthy host")) << r.reason;
}

TEST(Verdicts, FarOffLatencyWarns) {
  gb::Run run = h200_run();
  const gb::Result r = judged(run, gb::Result::measured("probe.latency.launch_host.us",
                                                         "launch", "µs", {45}, false));
  EXPECT_EQ(r.status, gb::Status::warn);
  EXPECT_FALSE(r.advice.empty());
}

TEST(Verdicts, HostMemoryContentionWarns) {
  gb::Run run = h200_run();
  const gb::Result r = judged(
      run, gb::Result::measured("probe.host.h2d_slowdown.pct", "H2D slowdown", "%", {31}, false));
  EXPECT_EQ(r.status, gb::Status::warn);
}

TEST(Verdicts, ExistingVerdictsAndSkippedResultsAreLeftAlone) {
  gb::Run run = h200_run();
  gb::Result failed = bf16(791);
  failed.status = gb::Status::fail;
  failed.reason = "wrong answer: max error 3e-1";
  run.results.push_back(failed);
  run.results.push_back(gb::Result::skipped("probe.gemm.fp8.tflops", "FP8", "TFLOP/s", "no FP8"));
  gb::diagnose::apply_verdicts(run);
  EXPECT_EQ(run.results[0].status, gb::Status::fail);
  EXPECT_EQ(run.results[0].reason, "wrong answer: max error 3e-1");
  EXPECT_EQ(run.results[1].status, gb::Status::skipped);
  EXPECT_EQ(run.results[1].reason, "no FP8");
}

TEST(Verdicts, ApplyingTwiceChangesNothing) {
  gb::Run run = h200_run();
  run.results.push_back(bf16(791));
  gb::diagnose::apply_verdicts(run);
  const gb::Result once = run.results.back();
  gb::diagnose::apply_verdicts(run);
  EXPECT_EQ(run.results.back().references.size(), once.references.size());
  EXPECT_EQ(run.results.back().reason, once.reason);
}

TEST(Thresholds, EveryGemmPrecisionHasAnAchievableFraction) {
  for (const char* key : {"probe.gemm.fp64.tflops", "probe.gemm.fp32.tflops",
                          "probe.gemm.tf32.tflops", "probe.gemm.fp16.tflops",
                          "probe.gemm.bf16.tflops", "probe.gemm.fp8.tflops",
                          "probe.gemm.int8.tflops"}) {
    const auto* rule = gb::diagnose::find_achievable_rule(key);
    ASSERT_NE(rule, nullptr) << key;
    EXPECT_GT(rule->fraction, 0.5) << key;
    EXPECT_LT(rule->fraction, 1.0) << key;
  }
}
