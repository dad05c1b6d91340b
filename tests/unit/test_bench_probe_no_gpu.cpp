// Probe on a machine without an NVIDIA driver or GPU (the CI machine): every GPU section is
// reported as skipped with the reason, host facts are still there, nothing throws.
#include <gtest/gtest.h>

#include "bench/probe.hpp"
#include "core/error.hpp"
#include "diagnose/diagnose.hpp"

namespace {

gb::bench::ProbeOutcome probe_into(gb::bench::ResultSink& sink) {
  gb::bench::ProbeOptions options;
  options.quick = true;
  return gb::bench::run_probe(options, sink);
}

}  // namespace

TEST(ProbeWithoutGpu, EveryGpuSectionIsSkippedWithTheReason) {
  gb::bench::ResultSink sink;
  const auto outcome = probe_into(sink);
  if (outcome.gpu_found) GTEST_SKIP() << "this machine has a GPU";
  EXPECT_FALSE(outcome.no_gpu_reason.empty());
  ASSERT_EQ(sink.results().size(), 7u);  // gemm, memory, pcie, latency, host, p2p, nccl
  for (const auto& r : sink.results()) {
    EXPECT_EQ(r.status, gb::Status::skipped) << r.key;
    EXPECT_EQ(r.reason, outcome.no_gpu_reason) << r.key;
    EXPECT_FALSE(r.value.has_value()) << r.key;
  }
}

TEST(ProbeWithoutGpu, SaysPlainlyThatNoDriverOrGpuWasFound) {
  gb::bench::ResultSink sink;
  const auto outcome = probe_into(sink);
  if (outcome.gpu_found) GTEST_SKIP() << "this machine has a GPU";
  const bool names_it = outcome.no_gpu_reason.find("no NVIDIA driver") != std::string::npos ||
                        outcome.no_gpu_reason.find("no NVIDIA GPU") != std::string::npos ||
                        outcome.no_gpu_reason.find("without CUDA") != std::string::npos;
  EXPECT_TRUE(names_it) << outcome.no_gpu_reason;
}

TEST(ProbeWithoutGpu, StillReportsHostFacts) {
  gb::bench::ResultSink sink;
  probe_into(sink);
  bool has_cores = false;
  for (const auto& f : sink.facts())
    if (f.key == "host.logical_cores") has_cores = f.number.has_value();
  EXPECT_TRUE(has_cores);
}

TEST(ProbeWithoutGpu, ChecklistRowsAreAllSkipped) {
  gb::bench::ResultSink sink;
  const auto outcome = probe_into(sink);
  if (outcome.gpu_found) GTEST_SKIP() << "this machine has a GPU";
  gb::Run run;
  run.results = sink.results();
  gb::diagnose::apply_verdicts(run);
  for (const auto& row : gb::diagnose::build_checklist(run))
    EXPECT_EQ(row.status, gb::Status::skipped) << row.id;
}

TEST(ProbeOptions, UnknownSectionIsAUsageError) {
  gb::bench::ResultSink sink;
  gb::bench::ProbeOptions options;
  options.sections = {"gemm", "hbm"};
  try {
    gb::bench::run_probe(options, sink);
    FAIL() << "expected a usage error";
  } catch (const gb::Error& e) {
    EXPECT_EQ(e.kind(), gb::ErrorKind::usage);
    EXPECT_NE(std::string(e.what()).find("'hbm'"), std::string::npos);
  }
}
