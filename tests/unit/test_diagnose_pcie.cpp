// tests/unit/test_diagnose_pcie.cpp: the PCIe link rule (generation and width under load
// against what slot and card support) and the replay rule.
#include <gtest/gtest.h>

#include <string>

#include "diagnose/diagnose.hpp"

namespace {

gb::Result link_result(const std::string& key, double value, int gen_max_slot, int gen_max_gpu,
                       int width_max) {
  gb::Result r = gb::Result::measured(key, key, "", {value});
  r.param("gen_max_slot", gen_max_slot, "", 0);
  r.param("gen_max_gpu", gen_max_gpu, "", 0);
  r.param("width_max", width_max, "", 0);
  return r;
}

gb::Run link_run(int gen, int width, int gen_max_slot, int gen_max_gpu, int width_max) {
  gb::Run run;
  run.results.push_back(link_result("probe.pcie.link.gen_under_load", gen, gen_max_slot,
                                    gen_max_gpu, width_max));
  run.results.push_back(link_result("probe.pcie.link.width_under_load", width, gen_max_slot,
                                    gen_max_gpu, width_max));
  gb::diagnose::apply_verdicts(run);
  return run;
}

const gb::Result& gen_result(const gb::Run& run) {
  return *run.find("probe.pcie.link.gen_under_load");
}
const gb::Result& width_result(const gb::Run& run) {
  return *run.find("probe.pcie.link.width_under_load");
}

}  // namespace

TEST(PcieLinkRule, DegradedLinkFailsWithReseatAdvice) {
  const gb::Run run = link_run(3, 8, 5, 5, 16);
  EXPECT_EQ(gen_result(run).status, gb::Status::fail);
  EXPECT_EQ(width_result(run).status, gb::Status::fail);
  EXPECT_EQ(gen_result(run).advice,
            "PCIe link is Gen3 x8 under load, card supports Gen5 x16: reseat the card or check "
            "the slot/riser/BIOS");
}

TEST(PcieLinkRule, LinkAtMaximumPasses) {
  const gb::Run run = link_run(5, 16, 5, 5, 16);
  EXPECT_EQ(gen_result(run).status, gb::Status::pass);
  EXPECT_EQ(width_result(run).status, gb::Status::pass);
  EXPECT_EQ(gen_result(run).reason, "Gen5 x16 under load; slot and card allow Gen5 x16, the card "
                                    "alone Gen5");
}

TEST(PcieLinkRule, NarrowWidthAloneFailsTheWidth) {
  const gb::Run run = link_run(5, 8, 5, 5, 16);
  EXPECT_EQ(gen_result(run).status, gb::Status::pass);
  EXPECT_EQ(width_result(run).status, gb::Status::fail);
  EXPECT_NE(width_result(run).advice.find("Gen5 x8 under load"), std::string::npos);
}

TEST(PcieLinkRule, SlotSlowerThanCardWarnsToUseAFasterSlot) {
  const gb::Run run = link_run(4, 16, 4, 5, 16);
  EXPECT_EQ(gen_result(run).status, gb::Status::warn);
  EXPECT_EQ(gen_result(run).advice, "the slot/platform limits the link to Gen4: use a Gen5 slot");
}

TEST(PcieLinkRule, DegradedBelowASlowSlotSaysBoth) {
  const gb::Run run = link_run(3, 16, 4, 5, 16);
  EXPECT_EQ(gen_result(run).status, gb::Status::fail);
  EXPECT_EQ(gen_result(run).advice,
            "PCIe link is Gen3 x16 under load, card supports Gen5 x16: reseat the card or check "
            "the slot/riser/BIOS; the slot/platform limits the link to Gen4: use a Gen5 slot");
}

TEST(PcieLinkRule, MaximaFromTheRunsGpuStateWhenParamsAreMissing) {
  gb::Run run;
  run.gpu.link_max_slot = {5, 16};
  run.gpu.link_max_gpu = {5, 16};
  run.results.push_back(gb::Result::measured("probe.pcie.link.gen_under_load", "gen", "", {4}));
  gb::diagnose::apply_verdicts(run);
  EXPECT_EQ(gen_result(run).status, gb::Status::fail);
}

TEST(PcieLinkRule, UnknownMaximumIsNotJudged) {
  gb::Run run;
  run.results.push_back(gb::Result::measured("probe.pcie.link.gen_under_load", "gen", "", {4}));
  gb::diagnose::apply_verdicts(run);
  EXPECT_EQ(gen_result(run).status, gb::Status::info);
  EXPECT_NE(gen_result(run).reason.find("not judged"), std::string::npos);
}

TEST(PcieLinkRule, DegradedLinkAlsoFailsPinnedBandwidthAgainstTheMaximum) {
  gb::Run run;
  run.results.push_back(link_result("probe.pcie.link.gen_under_load", 3, 5, 5, 16));
  run.results.push_back(
      gb::Result::measured("probe.pcie.h2d.pinned.gbps", "H2D pinned", "GB/s", {6.6}));
  gb::diagnose::apply_verdicts(run);
  const gb::Result& h2d = *run.find("probe.pcie.h2d.pinned.gbps");
  EXPECT_EQ(h2d.status, gb::Status::fail);
  EXPECT_NEAR(h2d.find_reference("datasheet")->value, 63.0, 0.05);
}

TEST(PcieLinkRule, SlowPinnedCopyOnADegradedLinkCarriesTheLinkAdvice) {
  gb::Run run;
  run.results.push_back(link_result("probe.pcie.link.gen_under_load", 3, 5, 5, 16));
  run.results.push_back(link_result("probe.pcie.link.width_under_load", 8, 5, 5, 16));
  run.results.push_back(
      gb::Result::measured("probe.pcie.d2h.pinned.gbps", "D2H pinned", "GB/s", {6.5}));
  gb::diagnose::apply_verdicts(run);
  const gb::Result& d2h = *run.find("probe.pcie.d2h.pinned.gbps");
  EXPECT_EQ(d2h.advice, gen_result(run).advice);
  EXPECT_NE(d2h.reason.find("the link runs at Gen3 x8"), std::string::npos) << d2h.reason;
}

TEST(PcieReplayRule, ReplaysDuringTheCopiesWarn) {
  gb::Run run;
  run.results.push_back(gb::Result::measured("probe.pcie.replay_delta", "replays", "count", {12}));
  gb::diagnose::apply_verdicts(run);
  const gb::Result& r = run.results.back();
  EXPECT_EQ(r.status, gb::Status::warn);
  EXPECT_NE(r.reason.find("signal integrity"), std::string::npos);
  EXPECT_NE(r.advice.find("reseat"), std::string::npos);
}

TEST(PcieReplayRule, NoReplaysPass) {
  gb::Run run;
  run.results.push_back(gb::Result::measured("probe.pcie.replay_delta", "replays", "count", {0}));
  gb::diagnose::apply_verdicts(run);
  EXPECT_EQ(run.results.back().status, gb::Status::pass);
}

TEST(PcieReplayRule, ReplaysInLinkTelemetryWarnAHealthyLink) {
  gb::Run run;
  gb::Result gen = link_result("probe.pcie.link.gen_under_load", 5, 5, 5, 16);
  gb::Telemetry t;
  t.pcie_replay_delta = 3;
  gen.telemetry = t;
  run.results.push_back(gen);
  gb::diagnose::apply_verdicts(run);
  EXPECT_EQ(gen_result(run).status, gb::Status::warn);
  EXPECT_NE(gen_result(run).reason.find("3 PCIe replays"), std::string::npos);
}
