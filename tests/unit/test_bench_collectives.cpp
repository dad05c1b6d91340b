// tests/unit/test_bench_collectives.cpp: the CPU half of the probe's nccl and p2p sections: the
// nccl-tests bandwidth arithmetic, the size sweep, how a measurement becomes a Result, the
// verdicts against the link's theory, and what connects two GPUs from NVML's facts.
#include <gtest/gtest.h>

#include "bench/collectives.hpp"
#include "bench/links.hpp"
#include "core/error.hpp"
#include "core/gpu_specs.hpp"
#include "diagnose/rules.hpp"

namespace gb::bench {
namespace {

TEST(Collectives, BusFactorIsNcclTestsDefinition) {
  EXPECT_DOUBLE_EQ(bus_factor(Collective::all_reduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::all_gather, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::reduce_scatter, 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::all_reduce, 2), 1.0);
}

TEST(Collectives, OneRankHasBusFactorZero) {
  for (const Collective c : kCollectives) EXPECT_DOUBLE_EQ(bus_factor(c, 1), 0.0);
}

TEST(Collectives, NoRanksIsAnError) {
  EXPECT_THROW(bus_factor(Collective::all_reduce, 0), Error);
}

TEST(Collectives, AlgbwIsBytesOverTimeAndBusbwScalesIt) {
  // 1 GiB all-reduce over 8 ranks in 10 ms: 107.37 GB/s algbw, x 1.75 busbw.
  const CollectiveBandwidth bw =
      collective_bandwidth(Collective::all_reduce, 8, std::uint64_t{1} << 30, 0.010);
  EXPECT_NEAR(bw.algbw_gbps, 107.374, 1e-3);
  EXPECT_NEAR(bw.busbw_gbps, 107.374 * 1.75, 1e-3);
  const CollectiveBandwidth one =
      collective_bandwidth(Collective::all_gather, 1, std::uint64_t{1} << 30, 0.001);
  EXPECT_NEAR(one.algbw_gbps, 1073.74, 1e-2);
  EXPECT_EQ(one.busbw_gbps, 0.0);
}

TEST(Collectives, SizesRoundDownToWholeElementsPerRank) {
  const CollectiveSize ar = collective_size(Collective::all_reduce, 3, 1024);
  EXPECT_EQ(ar.count, 256u);
  EXPECT_EQ(ar.bytes, 1024u);
  const CollectiveSize ag = collective_size(Collective::all_gather, 3, 1024);
  EXPECT_EQ(ag.count, 85u);  // 256 elements / 3 ranks
  EXPECT_EQ(ag.bytes, 85u * 3 * 4);
  const CollectiveSize tiny = collective_size(Collective::reduce_scatter, 8, 8);
  EXPECT_EQ(tiny.count, 1u);  // at least one element per rank
  EXPECT_EQ(tiny.bytes, 32u);
}

TEST(Collectives, FullSweepIs8BytesTo1GiBInStepsOf8) {
  const auto s = nccl_sweep_bytes(false);
  ASSERT_EQ(s.size(), 10u);
  EXPECT_EQ(s.front(), 8u);
  EXPECT_EQ(s.back(), std::uint64_t{1} << 30);
  for (std::size_t i = 1; i < s.size(); ++i) EXPECT_EQ(s[i], s[i - 1] * 8);
}

TEST(Collectives, QuickSweepIs8BytesTo128MiBInStepsOf64) {
  const auto s = nccl_sweep_bytes(true);
  ASSERT_EQ(s.size(), 5u);
  EXPECT_EQ(s.front(), 8u);
  EXPECT_EQ(s.back(), std::uint64_t{128} << 20);
}

TEST(Collectives, SizeNamesUseTheLargestWholeUnit) {
  EXPECT_EQ(size_name(8), "8B");
  EXPECT_EQ(size_name(512), "512B");
  EXPECT_EQ(size_name(32768), "32KiB");
  EXPECT_EQ(size_name(std::uint64_t{1} << 30), "1GiB");
  EXPECT_EQ(size_name(1020), "1020B");
}

CollectiveMeasurement measurement(int ranks, std::vector<double> seconds) {
  CollectiveMeasurement m;
  m.collective = Collective::all_reduce;
  m.ranks = ranks;
  m.size = collective_size(m.collective, ranks, std::uint64_t{1} << 30);
  m.seconds = std::move(seconds);
  return m;
}

TEST(Collectives, OneRankResultHasBusbwZeroAndSaysWhy) {
  const Result r = collective_result(measurement(1, {0.001, 0.0011, 0.0009}), true);
  EXPECT_EQ(r.key, "probe.nccl.allreduce.busbw_gbps");
  ASSERT_TRUE(r.value);
  EXPECT_EQ(*r.value, 0.0);
  EXPECT_NE(r.reason.find("0 by definition for one rank"), std::string::npos) << r.reason;
  ASSERT_TRUE(r.number_param("algbw_gbps"));
  EXPECT_NEAR(*r.number_param("algbw_gbps"), 1073.741824, 1e-3);
  EXPECT_TRUE(r.references.empty());
}

TEST(Collectives, SweepPointKeyNamesTheSize) {
  CollectiveMeasurement m = measurement(2, {0.01});
  m.size = collective_size(m.collective, 2, 32768);
  EXPECT_EQ(collective_result(m, false).key, "probe.nccl.allreduce.32KiB.busbw_gbps");
}

TEST(Collectives, WrongResultFailsThePointWithoutAValue) {
  CollectiveMeasurement m = measurement(2, {});
  m.check_error = "1 of 268435456 elements differ; element 7 is 3, expected 5";
  const Result r = collective_result(m, true);
  EXPECT_EQ(r.status, Status::fail);
  EXPECT_FALSE(r.value);
  EXPECT_NE(r.reason.find("element 7 is 3, expected 5"), std::string::npos);
}

TEST(Collectives, SeveralRanksCarryTheLinkTheoryAsDatasheet) {
  CollectiveMeasurement m = measurement(8, {0.004});
  m.link_gbps = 450;
  m.link_name = "NVLink 4 x18 (through NVSwitch)";
  const Result r = collective_result(m, true);
  const Reference* ref = r.find_reference("datasheet");
  ASSERT_NE(ref, nullptr);
  EXPECT_EQ(ref->value, 450);
  // 1 GiB / 4 ms = 268.4 GB/s algbw, x 1.75 = 469.8 busbw.
  EXPECT_NEAR(*r.value, 469.76, 0.01);
}

TEST(GpuLinkVerdict, OneRankBusbwIsSkippedNoLinkToJudge) {
  Result r = collective_result(measurement(1, {0.001}), true);
  EXPECT_TRUE(diagnose::judge_gpu_link(r));
  EXPECT_EQ(r.status, Status::skipped);
  EXPECT_EQ(r.reason.rfind("one GPU, no link to judge", 0), 0u) << r.reason;
}

TEST(GpuLinkVerdict, BusbwNearTheLinkPassesAndFarBelowFails) {
  CollectiveMeasurement m = measurement(8, {0.0055});  // busbw 341.6 of 450: 76 %
  m.link_gbps = 450;
  m.link_name = "NVLink 4 x18";
  Result good = collective_result(m, true);
  EXPECT_TRUE(diagnose::judge_gpu_link(good));
  EXPECT_EQ(good.status, Status::pass) << good.reason;
  m.seconds = {0.02};  // 94 GB/s: 21 %
  Result bad = collective_result(m, true);
  diagnose::judge_gpu_link(bad);
  EXPECT_EQ(bad.status, Status::fail);
  EXPECT_FALSE(bad.advice.empty());
}

TEST(GpuLinkVerdict, SweepPointsStayInfo) {
  CollectiveMeasurement m = measurement(8, {0.02});
  m.link_gbps = 450;
  Result r = collective_result(m, false);
  EXPECT_TRUE(diagnose::judge_gpu_link(r));
  EXPECT_EQ(r.status, Status::info);
}

TEST(GpuLinkVerdict, OtherKeysAreNotItsBusiness) {
  Result r = Result::measured("probe.pcie.h2d.pinned.gbps", "", "GB/s", {50});
  EXPECT_FALSE(diagnose::judge_gpu_link(r));
}

sys::NvLinkInfo link(int i, bool active, int version, std::string remote) {
  sys::NvLinkInfo l;
  l.link = i;
  l.active = active;
  l.version = version;
  l.remote_pci_bus_id = std::move(remote);
  return l;
}

TEST(PeerLink, SameGpuIsDeviceLocalWithoutTheory) {
  const PeerLink l = describe_peer_link({.same_device = true});
  EXPECT_EQ(l.kind, "device-local");
  EXPECT_FALSE(l.gbps);
}

TEST(PeerLink, DirectNvLinksCountOnlyThoseEndingAtThePeer) {
  PeerLinkFacts f;
  f.cc_major = 8;
  f.peer_pci_bus_id = "0000:3B:00.0";
  for (int i = 0; i < 4; ++i) f.nvlinks.push_back(link(i, true, 4, "0000:3b:00.0"));
  for (int i = 4; i < 8; ++i) f.nvlinks.push_back(link(i, true, 4, "0000:5E:00.0"));
  f.nvlinks.push_back(link(8, false, 4, ""));
  const PeerLink l = describe_peer_link(f);
  EXPECT_EQ(l.kind, "NVLink");
  EXPECT_EQ(l.name, "NVLink 3 x4 (direct)");
  ASSERT_TRUE(l.gbps);
  EXPECT_DOUBLE_EQ(*l.gbps, 100.0);
}

TEST(PeerLink, NvSwitchUsesEveryActiveLink) {
  PeerLinkFacts f;
  f.cc_major = 9;
  f.peer_pci_bus_id = "0000:3B:00.0";
  f.nvlink_p2p = true;
  for (int i = 0; i < 18; ++i) f.nvlinks.push_back(link(i, true, 6, "0000:C1:00.0"));
  const PeerLink l = describe_peer_link(f);
  EXPECT_EQ(l.name, "NVLink 4 x18 (through NVSwitch)");
  EXPECT_DOUBLE_EQ(*l.gbps, 450.0);
}

TEST(PeerLink, HopperReportedAsNvLink5IsCappedAtNvLink4) {
  EXPECT_EQ(nvlink_gbps_per_link(7, 9), 25.0);
  EXPECT_EQ(nvlink_gbps_per_link(7, 10), 50.0);
  EXPECT_EQ(nvlink_version_name(7, 9), "NVLink 4");
  EXPECT_FALSE(nvlink_gbps_per_link(0, 9));
}

TEST(PeerLink, PcieUsesTheSlowerGpusLinkAndNamesTheSharedElement) {
  PeerLinkFacts f;
  f.peer_pci_bus_id = "0000:3B:00.0";
  f.nvlink_p2p = false;
  f.common_ancestor = 30;
  f.pcie_gen = 5;
  f.pcie_width = 16;
  f.peer_pcie_gen = 4;
  f.peer_pcie_width = 16;
  const PeerLink l = describe_peer_link(f);
  EXPECT_EQ(l.kind, "PCIe");
  EXPECT_EQ(l.name, "PCIe Gen4 x16 through the host bridge");
  EXPECT_EQ(l.gbps, pcie_link_gbps(4, 16));
}

TEST(PeerLink, NothingKnownIsUnknownWithoutTheory) {
  const PeerLink l = describe_peer_link({});
  EXPECT_EQ(l.kind, "unknown");
  EXPECT_FALSE(l.gbps);
}

}  // namespace
}  // namespace gb::bench
