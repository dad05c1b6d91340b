// tests/unit/test_report_v1_runs.cpp: runs saved by gpubase before the result schema's version 2
// (every param and fact a string, no sections) still read and render: each committed run file
// under bench/results goes through load_run and every printer.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli/output.hpp"
#include "core/json.hpp"
#include "report/report.hpp"

namespace {

std::vector<std::filesystem::path> committed_runs(int schema_version) {
  const std::filesystem::path dir =
      std::filesystem::path(GPUBASE_FIXTURES_DIR) / ".." / ".." / "bench" / "results";
  std::vector<std::filesystem::path> runs;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    std::ifstream in(entry.path());
    const gb::Json j = gb::Json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (j.is_object() && j.value("schema", "") == "gpubase.run" &&
        j.value("schema_version", 0) == schema_version)
      runs.push_back(entry.path());
  }
  return runs;
}

}  // namespace

TEST(VersionOneRuns, EveryCommittedRunFileRendersInEveryFormat) {
  const auto runs = committed_runs(1);
  ASSERT_GE(runs.size(), 5u) << "the committed v1 runs went missing";
  for (const auto& path : runs) {
    SCOPED_TRACE(path.filename().string());
    const gb::Run run = gb::cli::load_run(path);
    EXPECT_EQ(run.schema_version, 1);
    ASSERT_FALSE(run.results.empty());
    const std::string text = gb::report::render(run, gb::report::Format::terminal);
    EXPECT_NE(text.find("gpubase " + run.command), std::string::npos);
    // Placed in the sections the suites declare today: every result has one, titled.
    ASSERT_FALSE(run.sections.empty());
    for (const gb::Result& r : run.results) EXPECT_FALSE(r.section.empty()) << r.key;
    EXPECT_NE(text.find(run.sections.front().title), std::string::npos);
    const std::string md = gb::report::render(run, gb::report::Format::markdown);
    EXPECT_NE(md.find("| "), std::string::npos);
    // Written back it is a v2 document with the same results.
    const gb::Run again = gb::run_from_json(gb::Json::parse(gb::report::render_json(run)));
    EXPECT_EQ(again.results.size(), run.results.size());
  }
}

TEST(VersionOneRuns, TheProbeRunKeepsItsFiguresAndReferences) {
  const std::filesystem::path path = std::filesystem::path(GPUBASE_FIXTURES_DIR) / ".." / ".." /
                                     "bench" / "results" / "h200-probe-v3.json";
  const gb::Run run = gb::cli::load_run(path);
  const gb::Result* bf16 = run.find("probe.gemm.bf16.tflops");
  ASSERT_NE(bf16, nullptr);
  ASSERT_TRUE(bf16->value);
  EXPECT_NEAR(*bf16->value, 828.7, 0.1);
  EXPECT_EQ(bf16->status, gb::Status::pass);
  ASSERT_NE(bf16->find_reference("achievable"), nullptr);
  EXPECT_EQ(run.fact("gpu.name"), "NVIDIA H200");
  // A v1 param was text, and stays text: nothing is parsed back into a number.
  EXPECT_TRUE(bf16->text_param("algorithm").has_value());
  EXPECT_FALSE(bf16->number_param("m").has_value());
}
