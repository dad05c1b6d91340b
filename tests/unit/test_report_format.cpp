// tests/unit/test_report_format.cpp: printer behaviours that hold for any run: width, colour
// only on request, skipped/invalid rows with their reason, N/A for missing telemetry, JSON that
// reads back, and the text helpers (precision, wrapping of UTF-8).
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "core/json.hpp"
#include "report/report.hpp"
#include "report/text.hpp"
#include "test_report_fixture.hpp"

using gb::report::Format;
using gb::report::TerminalOptions;
namespace detail = gb::report::detail;

namespace {

TerminalOptions options(bool color, int width, bool verbose = false) {
  TerminalOptions o;
  o.color = color;
  o.width = width;
  o.verbose = verbose;
  return o;
}

std::size_t widest_line(const std::string& text) {
  std::istringstream in(text);
  std::size_t widest = 0;
  for (std::string line; std::getline(in, line);)
    widest = std::max(widest, detail::display_width(line));
  return widest;
}

}  // namespace

TEST(TerminalReport, FitsTheRequestedWidth) {
  const gb::Run run = gb::test::h200_degraded_link_run();
  for (const int width : {60, 80, 100, 132}) {
    EXPECT_LE(widest_line(gb::report::render_terminal(run, options(false, width, true))),
              static_cast<std::size_t>(width))
        << "width " << width;
  }
}

TEST(TerminalReport, UsesAnsiColourOnlyWhenAsked) {
  const gb::Run run = gb::test::h200_degraded_link_run();
  EXPECT_NE(gb::report::render_terminal(run, options(true, 100)).find("\x1b["),
            std::string::npos);
  EXPECT_EQ(gb::report::render_terminal(run, options(false, 100)).find('\x1b'),
            std::string::npos);
}

TEST(TerminalReport, SkippedRowShowsItsReason) {
  const std::string text = gb::report::render_terminal(gb::test::a100_run(), options(false, 100));
  EXPECT_NE(text.find("skipped: FP8 tensor cores need compute capability 8.9"), std::string::npos);
}

TEST(TerminalReport, InvalidRowShowsItsReason) {
  const std::string text =
      gb::report::render_terminal(gb::test::h200_degraded_link_run(), options(false, 100));
  EXPECT_NE(text.find("invalid: hardware thermal slowdown"), std::string::npos);
}

TEST(TerminalReport, MissingTelemetryReadsNA) {
  const std::string text =
      gb::report::render_terminal(gb::test::a100_run(), options(false, 100, true));
  EXPECT_NE(text.find("telemetry: N/A (no NVML)"), std::string::npos);
}

TEST(TerminalReport, ChecklistComesLast) {
  const std::string text =
      gb::report::render_terminal(gb::test::h200_degraded_link_run(), options(false, 100));
  const auto checklist = text.find("Baseline checklist");
  ASSERT_NE(checklist, std::string::npos);
  EXPECT_GT(checklist, text.find("Launch latency"));
}

TEST(MarkdownReport, EscapesPipesInCells) {
  gb::Run run = gb::test::base_run("2026-12-02T00:00:00Z", 1);
  run.environment.push_back({"host.cmd", "command", "a | b"});
  EXPECT_NE(gb::report::render_markdown(run).find("a \\| b"), std::string::npos);
}

TEST(JsonReport, IsTheResultModelPrettyPrintedWithTwoSpaces) {
  const gb::Run run = gb::test::h200_degraded_link_run();
  const std::string text = gb::report::render(run, Format::json, {});
  EXPECT_EQ(text, gb::to_json(run).dump(2) + "\n");
  EXPECT_EQ(text.substr(0, 4), "{\n  ");
  EXPECT_EQ(gb::Json::parse(text), gb::to_json(run));
}

TEST(RenderDispatch, PicksTheFormat) {
  const gb::Run run = gb::test::a100_run();
  EXPECT_EQ(gb::report::render(run, Format::markdown, {}), gb::report::render_markdown(run));
  EXPECT_EQ(gb::report::render(run, Format::terminal, options(false, 90)),
            gb::report::render_terminal(run, options(false, 90)));
}

TEST(ReportText, NumbersKeepThreeSignificantDigits) {
  EXPECT_EQ(detail::format_number(989.4), "989");
  EXPECT_EQ(detail::format_number(1978.9), "1979");
  EXPECT_EQ(detail::format_number(55.31), "55.3");
  EXPECT_EQ(detail::format_number(6.9), "6.9");
  EXPECT_EQ(detail::format_number(0.834), "0.834");
  EXPECT_EQ(detail::format_number(5.0), "5");
}

TEST(ReportText, WrapCountsCodePointsNotBytes) {
  const auto lines = detail::wrap("GEMM 8192³ µs µs", 10);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "GEMM 8192³");
  EXPECT_EQ(lines[1], "µs µs");
}

TEST(ReportText, WrapKeepsAUnitWithItsNumber) {
  const auto lines = detail::wrap("ran at the power cap, 690 of 700 W", 24);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1], "690 of 700 W");
}

TEST(ReportText, WrapSplitsWordsLongerThanALine) {
  const auto lines = detail::wrap("abcdefghij", 4);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[2], "ij");
}

TEST(ReportText, ThrottleBitsHaveNames) {
  EXPECT_EQ(detail::throttle_text(0), "none");
  EXPECT_EQ(detail::throttle_text(0x4 | 0x40), "power cap, HW thermal");
}

TEST(ReportText, ALongReasonSaidBeforeReadsItsFirstClauseAsAbove) {
  detail::RepeatedReasons reasons;
  const std::string driver =
      "no NVIDIA driver found (CUDA: driver version is insufficient); install the NVIDIA driver "
      "or run on a GPU host";
  EXPECT_EQ(reasons.text(driver), driver) << "the first time in full";
  EXPECT_EQ(reasons.text(driver), "no NVIDIA driver found (as above)");
  EXPECT_EQ(reasons.text("no GPU: " + driver), "no GPU: no NVIDIA driver found (as above)")
      << "inside a longer reason";
  EXPECT_EQ(reasons.text("not run"), "not run");
  EXPECT_EQ(reasons.text("not run"), "not run") << "short reasons are printed as they are";
  const std::string perf =
      "perf_event_open: permission denied (kernel.perf_event_paranoid is 4; needs <= 2)";
  reasons.text(perf);
  EXPECT_EQ(reasons.text(perf), "perf_event_open: permission denied (as above)");
  const std::string plain(80, 'x');  // no clause to cut at: said whole again
  reasons.text(plain);
  EXPECT_EQ(reasons.text(plain), plain + " (as above)");
}
