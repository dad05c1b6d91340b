// tests/unit/test_report_golden.cpp: the terminal (no colour) and Markdown printers against
// stored output in tests/fixtures/golden/. A change in layout or wording shows up as a diff.
// To accept a deliberate change: GPUBASE_UPDATE_GOLDEN=1 ./unit_tests --gtest_filter='Golden*'
// and review the diff of tests/fixtures/golden/ before committing.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "report/report.hpp"
#include "test_report_fixture.hpp"

namespace {

std::string golden_path(const std::string& name) {
  return std::string(GPUBASE_FIXTURES_DIR) + "/golden/" + name;
}

void expect_golden(const std::string& name, const std::string& actual) {
  const std::string path = golden_path(name);
  const char* update = std::getenv("GPUBASE_UPDATE_GOLDEN");
  if (update && std::string(update) == "1") {
    std::ofstream(path, std::ios::binary) << actual;
    std::cout << "updated " << path << "\n";
    return;
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << path << " is missing; create it with GPUBASE_UPDATE_GOLDEN=1";
  std::stringstream expected;
  expected << in.rdbuf();
  EXPECT_EQ(expected.str(), actual) << "output differs from " << path
                                    << " (GPUBASE_UPDATE_GOLDEN=1 regenerates it)";
}

gb::report::TerminalOptions plain(bool verbose = false) {
  gb::report::TerminalOptions o;
  o.color = false;
  o.width = 100;
  o.verbose = verbose;
  return o;
}

}  // namespace

TEST(GoldenReport, TerminalH200DegradedLink) {
  expect_golden("report_h200_terminal.txt",
                gb::report::render_terminal(gb::test::h200_degraded_link_run(), plain()));
}

TEST(GoldenReport, TerminalVerboseH200DegradedLink) {
  expect_golden("report_h200_terminal_verbose.txt",
                gb::report::render_terminal(gb::test::h200_degraded_link_run(), plain(true)));
}

TEST(GoldenReport, MarkdownH200DegradedLink) {
  expect_golden("report_h200_markdown.txt",
                gb::report::render_markdown(gb::test::h200_degraded_link_run()));
}

TEST(GoldenReport, TerminalA100WithoutFp8) {
  expect_golden("report_a100_terminal.txt",
                gb::report::render_terminal(gb::test::a100_run(), plain()));
}

TEST(GoldenReport, MarkdownA100WithoutFp8) {
  expect_golden("report_a100_markdown.txt", gb::report::render_markdown(gb::test::a100_run()));
}

TEST(GoldenReport, TerminalNoGpu) {
  expect_golden("report_no_gpu_terminal.txt",
                gb::report::render_terminal(gb::test::no_gpu_run(), plain()));
}

TEST(GoldenReport, TerminalWatchStarvedJob) {
  expect_golden("report_watch_starved_terminal.txt",
                gb::report::render_terminal(gb::test::watch_starved_run(), plain()));
}

TEST(GoldenReport, MarkdownWatchStarvedJob) {
  expect_golden("report_watch_starved_markdown.txt",
                gb::report::render_markdown(gb::test::watch_starved_run()));
}
