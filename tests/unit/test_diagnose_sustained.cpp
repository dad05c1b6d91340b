// The sustained GEMM figure is explained against the burst one, without a verdict.
#include <gtest/gtest.h>

#include "diagnose/diagnose.hpp"

TEST(SustainedGemm, StatesTheShareOfTheBurstFigureAndStaysInfo) {
  gb::Run run;
  gb::Result r = gb::Result::measured("probe.gemm.bf16.sustained.tflops",
                                      "GEMM BF16 sustained", "TFLOP/s", {690, 691, 692});
  r.param("burst_tflops", 805.0, "TFLOP/s", 1);
  gb::Telemetry t;
  t.samples = 20;
  t.sm_clock_mhz_mean = 1470;
  r.telemetry = t;
  run.results.push_back(r);
  gb::diagnose::apply_verdicts(run);
  const gb::Result& out = run.results.front();
  EXPECT_EQ(out.status, gb::Status::info);
  EXPECT_EQ(out.reason, "86 % of the burst figure 805 after 1 s of continuous load, SM clock 1470 MHz");
}
