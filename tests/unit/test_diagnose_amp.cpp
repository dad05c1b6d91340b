// tests/unit/test_diagnose_amp.cpp: the verdicts on `gpubase amp` (diagnose/amp.cpp), one
// behaviour per test, on Runs holding the results the study reports (bench/amp.cpp): measured
// values and typed params, no verdicts.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "diagnose/diagnose.hpp"
#include "diagnose/thresholds.hpp"

namespace gb {
namespace {

Result figure(std::string key, double value, std::string unit = "", bool higher = true) {
  return Result::measured(std::move(key), "figure", std::move(unit), {value}, higher);
}

Result speedup(const std::string& precision, double x) {
  Result r = figure("amp." + precision + ".speedup", x, "x");
  r.param("precision", precision);
  return r;
}

Result accuracy_loss(const std::string& precision, double points, double band = 0.12) {
  Result r = figure("amp.accuracy_loss.pct", points, "points", false);
  r.param("precision", precision).param("noise band", band, "points", 2).param("seeds", 3, "", 0);
  return r;
}

Result speed_comparison(const std::string& precision, double x) {
  Result r = figure("amp.speed.mobilenet_v2.b64." + precision + ".speedup", x, "x");
  r.param("model", "mobilenet_v2").param("batch", 64, "", 0).param("precision", precision);
  return r;
}

Result skipped_steps(double skipped, double steps) {
  Result r = figure("amp.fp16.skipped_steps", skipped, "steps", false);
  r.param("steps", steps, "", 0).param("share", 100.0 * skipped / steps, "%", 3);
  return r;
}

// The results after apply_verdicts().
std::vector<Result> judged(std::vector<Result> results) {
  gb::Run run;
  run.command = "amp";
  run.results = std::move(results);
  diagnose::apply_verdicts(run);
  return run.results;
}

Result judged(Result r) { return judged(std::vector<Result>{std::move(r)}).front(); }

Result all_diverged(const std::string& precision) {
  Result r = Result::skipped("amp." + precision + ".test_accuracy.pct", "test accuracy", "%",
                             "every " + precision + " run diverged (non-finite loss)");
  r.param("precision", precision).param("seeds", 3, "", 0).param("diverged", 3, "", 0);
  return r;
}

TEST(AmpVerdicts, APrecisionWhoseRunsAllDivergedFails) {
  const Result r = judged(all_diverged("bf16"));
  EXPECT_EQ(r.status, Status::fail);
  EXPECT_EQ(r.reason, "every bf16 run diverged (non-finite loss)");
  EXPECT_EQ(r.advice, "the run diverged: lower the learning rate");
}

TEST(AmpVerdicts, Fp16WhoseRunsAllDivergedIsToldToUseBf16) {
  const Result r = judged(all_diverged("fp16"));
  EXPECT_EQ(r.status, Status::fail);
  EXPECT_EQ(r.advice.rfind("FP16 overflowed: use BF16", 0), 0u) << r.advice;
}

TEST(AmpVerdicts, OneDivergedRunAmongFinishedOnesIsNoVerdict) {
  Result r = figure("amp.fp16.test_accuracy.pct", 91.5, "%");
  r.param("precision", "fp16").param("seeds", 3, "", 0).param("diverged", 1, "", 0);
  EXPECT_EQ(judged(r).status, Status::info);
}

TEST(AmpVerdicts, AMixedPrecisionUnderTheUsefulSpeedupDoesNotPay) {
  const Result r = judged(speedup("fp16", 0.8));
  EXPECT_EQ(r.status, Status::warn);
  EXPECT_EQ(r.reason, "fp16 trains at 0.80x the FP32 rate: mixed precision does not pay here");
  EXPECT_NE(r.advice.find("kernel launches"), std::string::npos);
}

TEST(AmpVerdicts, AMixedPrecisionAtTheUsefulSpeedupHasNoVerdict) {
  EXPECT_EQ(judged(speedup("bf16", diagnose::amp_thresholds().min_useful_speedup)).status,
            Status::info);
}

TEST(AmpVerdicts, Tf32IsNotJudgedOnItsSpeedup) {
  EXPECT_EQ(judged(speedup("tf32", 0.9)).status, Status::info);
}

TEST(AmpVerdicts, ASmallSeedSpreadPassesAgainstItsTarget) {
  Result s = figure("amp.seed_spread.points", 0.12, "points", false);
  s.param("seeds", 3, "", 0);
  const Result r = judged(s);
  EXPECT_EQ(r.status, Status::pass);
  EXPECT_EQ(r.reason, "FP32 accuracy over 3 seeds: std 0.12 points");
  const Reference* target = r.find_reference("target");
  ASSERT_NE(target, nullptr);
  EXPECT_DOUBLE_EQ(target->value, diagnose::amp_thresholds().max_seed_spread_points);
  EXPECT_EQ(target->source.find("issue"), std::string::npos) << target->source;
}

TEST(AmpVerdicts, NoisySeedsWarnThatAOnePointChangeCannotBeJudged) {
  Result s = figure("amp.seed_spread.points", 0.71, "points", false);
  s.param("seeds", 2, "", 0);
  const Result r = judged(s);
  EXPECT_EQ(r.status, Status::warn);
  EXPECT_NE(r.advice.find("more epochs or more seeds"), std::string::npos);
}

TEST(AmpVerdicts, ALossScaleBelowOneCollapsed) {
  Result s = Result::measured("amp.fp16.loss_scale", "scale", "", {0.25, 0.5});
  const Result r = judged(s);
  EXPECT_EQ(r.status, Status::warn);
  EXPECT_NE(r.advice.find("BF16"), std::string::npos);
}

TEST(AmpVerdicts, AHealthyLossScaleHasNoVerdict) {
  EXPECT_EQ(judged(Result::measured("amp.fp16.loss_scale", "scale", "", {32768, 65536})).status,
            Status::info);
}

TEST(AmpVerdicts, MoreThanOnePercentSkippedStepsWarn) {
  const Result r = judged(skipped_steps(900, 2000));
  EXPECT_EQ(r.status, Status::warn);
  EXPECT_EQ(r.reason, "more than 1 % of FP16 steps were skipped");
}

TEST(AmpVerdicts, AFewSkippedStepsHaveNoVerdict) {
  EXPECT_EQ(judged(skipped_steps(9, 3000)).status, Status::info);
}

TEST(AmpVerdicts, AnAccuracyLossUnderOnePointPassesWithinTheNoise) {
  const Result r = judged(accuracy_loss("fp16", 0.1, 0.12));
  EXPECT_EQ(r.status, Status::pass);
  EXPECT_EQ(r.reason,
            "fp16 loses 0.10 points of test accuracy against FP32 (+/- 0.12, 3 seeds): within "
            "the noise");
  EXPECT_TRUE(r.advice.empty());
}

TEST(AmpVerdicts, AnAccuracyGainReadsAsAGain) {
  EXPECT_EQ(judged(accuracy_loss("bf16", -0.3, 0.1)).reason,
            "bf16 gains 0.30 points of test accuracy against FP32 (+/- 0.10, 3 seeds): within "
            "the noise");
}

TEST(AmpVerdicts, AnAccuracyLossBetweenOneAndTwoPointsWarns) {
  const Result r = judged(accuracy_loss("bf16", 1.5));
  EXPECT_EQ(r.status, Status::warn);
  EXPECT_NE(r.advice.find("8-bit mantissa"), std::string::npos);
}

TEST(AmpVerdicts, AnFp16AccuracyLossOfTwoPointsFailsAndAdvisesBf16) {
  const Result r = judged(accuracy_loss("fp16", 2.0));
  EXPECT_EQ(r.status, Status::fail);
  EXPECT_NE(r.reason.find("fp16 loses 2.00 points"), std::string::npos);
  EXPECT_NE(r.advice.find("BF16 keeps FP32's range"), std::string::npos);
}

TEST(AmpVerdicts, TheAccuracyLossNamesTheMixedPrecisionsThatDidNotPay) {
  const std::vector<Result> rs =
      judged({speedup("fp16", 0.8), speedup("tf32", 0.9), speedup("bf16", 0.95),
              accuracy_loss("fp16", 0.2)});
  EXPECT_EQ(rs.back().text_param("speed"), "no speedup: fp16 0.80x, bf16 0.95x");
}

TEST(AmpVerdicts, TheAccuracyLossHasNoSpeedParamWhenMixedPrecisionPays) {
  const std::vector<Result> rs = judged({speedup("fp16", 2.0), accuracy_loss("fp16", 0.2)});
  EXPECT_EQ(rs.back().find_param("speed"), nullptr);
}

TEST(AmpVerdicts, TheSpeedComparisonSaysItPaysFromOneAndAHalf) {
  const Result r = judged(speed_comparison("fp16", diagnose::amp_thresholds().pays_speedup));
  EXPECT_EQ(r.text_param("verdict"), "pays");
  EXPECT_EQ(r.status, Status::info);
}

TEST(AmpVerdicts, TheSpeedComparisonSaysItHelpsALittleInBetween) {
  EXPECT_EQ(judged(speed_comparison("tf32", 1.3)).text_param("verdict"), "helps a little");
}

TEST(AmpVerdicts, TheSpeedComparisonWarnsWhenItDoesNotPay) {
  const Result r = judged(speed_comparison("fp16", 1.05));
  EXPECT_EQ(r.text_param("verdict"), "does not pay");
  EXPECT_EQ(r.status, Status::warn);
  EXPECT_EQ(r.reason, "fp16 trains mobilenet_v2 at b64 only 1.05x as fast as FP32");
  EXPECT_NE(r.advice.find("larger batch"), std::string::npos);
}

TEST(AmpVerdicts, JudgingTwiceChangesNothing) {
  gb::Run run;
  run.results = {speed_comparison("fp16", 2.0), accuracy_loss("fp16", 0.2), speedup("fp16", 0.8)};
  Result spread = figure("amp.seed_spread.points", 0.1, "points", false);
  spread.param("seeds", 3, "", 0);
  run.results.push_back(spread);
  diagnose::apply_verdicts(run);
  const std::vector<Result> once = run.results;
  diagnose::apply_verdicts(run);
  ASSERT_EQ(run.results.size(), once.size());
  for (std::size_t i = 0; i < once.size(); ++i) {
    EXPECT_EQ(run.results[i].status, once[i].status) << once[i].key;
    EXPECT_EQ(run.results[i].params, once[i].params) << once[i].key;
    EXPECT_EQ(run.results[i].references.size(), once[i].references.size()) << once[i].key;
  }
}

}  // namespace
}  // namespace gb
