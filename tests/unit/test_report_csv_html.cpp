// tests/unit/test_report_csv_html.cpp: the CSV printer (RFC 4180, numbers in full, one row per
// result) and the HTML printer without a browser: self-contained, text escaped, the checklist
// first, the charts the data calls for (bars against references, a sweep with its knee and the
// slower region, noise whiskers), and a long time series drawn small with its extremes kept.
// tests/unit/test_report_browser.cpp renders the same pages in Chromium.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "bench/loader.hpp"
#include "core/json.hpp"
#include "report/report.hpp"
#include "test_cli_util.hpp"
#include "test_report_fixture.hpp"
#include "watch/series_chart.hpp"
#include "watch/series_io.hpp"

namespace {

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

// The CSV's records, fields unquoted (RFC 4180: quoted fields may hold commas, quotes, CRLF).
std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows(1);
  std::string field;
  bool quoted = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') field += '"', ++i;
      else if (c == '"') quoted = false;
      else field += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      rows.back().push_back(field), field.clear();
    } else if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') {
      rows.back().push_back(field), field.clear();
      rows.emplace_back();
      ++i;
    } else {
      field += c;
    }
  }
  if (rows.back().empty()) rows.pop_back();
  return rows;
}

// A loader-like sweep: workers 1..16, the rate flat from 8 and lower at 16 beyond both spreads.
gb::Run sweep_run() {
  gb::Run run = gb::test::base_run("2026-12-04T10:00:00Z", 30);
  run.command = "loader";
  const double rates[] = {700, 1400, 2700, 5000, 4200};
  int workers = 1;
  for (const double rate : rates) {
    gb::Result r = gb::Result::measured("loader.cpu.w" + std::to_string(workers) + ".images_per_s",
                                        std::to_string(workers) + " workers", "images/s",
                                        {rate * 0.99, rate, rate * 1.01});
    r.param("workers", workers, "workers", 0);
    r.param("images_per_busy_core_s", rate / workers, "images/s");
    run.results.push_back(r);
    workers *= 2;
  }
  gb::Result knee = gb::Result::measured("loader.cpu.knee.workers", "fewest workers within 3 %",
                                         "workers", {8});
  run.results.push_back(knee);
  gb::test::place_in_sections(run, gb::bench::loader_section_rules());
  return run;
}

}  // namespace

TEST(CsvReport, OneRecordPerResultWithTheStatisticsInFull) {
  gb::Run run = gb::test::h200_degraded_link_run();
  run.results.front().label = "GEMM, \"quoted\" label";
  const std::string csv = gb::report::render(run, gb::report::Format::csv);
  const auto rows = parse_csv(csv);
  ASSERT_EQ(rows.size(), run.results.size() + 1);
  EXPECT_EQ(rows[0], (std::vector<std::string>{"key", "label", "value", "unit", "status", "median",
                                               "min", "max", "cv", "n", "reason"}));
  for (std::size_t i = 0; i < run.results.size(); ++i) {
    const gb::Result& r = run.results[i];
    ASSERT_EQ(rows[i + 1].size(), 11u) << r.key;
    EXPECT_EQ(rows[i + 1][0], r.key);
    EXPECT_EQ(rows[i + 1][1], r.label);
    EXPECT_EQ(rows[i + 1][4], gb::to_string(r.status));
    if (r.value) {
      EXPECT_EQ(std::stod(rows[i + 1][2]), *r.value) << "a number reads back exactly";
    }
    if (r.stats.n >= 2) {
      EXPECT_EQ(std::stod(rows[i + 1][8]), r.stats.cv);
    }
  }
}

TEST(CsvReport, AMissingNumberIsAnEmptyCellNotZero) {
  const gb::Run run = gb::test::no_gpu_run();
  const auto rows = parse_csv(gb::report::render_csv(run));
  bool seen_skipped = false;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    if (rows[i][4] != "skipped") continue;
    seen_skipped = true;
    EXPECT_EQ(rows[i][2], "");
    EXPECT_EQ(rows[i][5], "");
    EXPECT_EQ(rows[i][9], "0");
    EXPECT_FALSE(rows[i][10].empty()) << "the reason says why";
  }
  EXPECT_TRUE(seen_skipped);
}

TEST(HtmlReport, IsOnePageThatFetchesNothing) {
  const std::string html = gb::report::render_html(gb::test::h200_degraded_link_run());
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  for (const char* remote : {"http://", "https://", "src=", "<link", "@import", "url("})
    EXPECT_EQ(html.find(remote), std::string::npos) << remote;
  EXPECT_NE(html.find("</html>"), std::string::npos);
}

TEST(HtmlReport, TheChecklistComesFirst) {
  const std::string html = gb::report::render_html(gb::test::h200_degraded_link_run());
  const auto checklist = html.find("id=\"checklist\"");
  const auto first_section = html.find("class=\"run-section\"");
  ASSERT_NE(checklist, std::string::npos);
  ASSERT_NE(first_section, std::string::npos);
  EXPECT_LT(checklist, first_section);
}

TEST(HtmlReport, EscapesEveryText) {
  gb::Run run = gb::test::h200_degraded_link_run();
  run.results.front().label = "<script>alert(1)</script> & co";
  run.environment.push_back({"x", "<b>", "\"quoted\" 'single'"});
  const std::string html = gb::report::render_html(run);
  EXPECT_EQ(html.find("<script>alert"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt; &amp; co"), std::string::npos);
  EXPECT_NE(html.find("&quot;quoted&quot; &#39;single&#39;"), std::string::npos);
}

TEST(HtmlReport, BarsCarryTheirReferencesAsTicks) {
  const gb::Run run = gb::test::h200_degraded_link_run();
  const std::string html = gb::report::render_html(run);
  const auto start = html.find("id=\"chart-probe-gemm-TFLOP-s\"");
  ASSERT_NE(start, std::string::npos);
  const std::string chart = html.substr(start, html.find("</svg>", start) - start);
  std::size_t gemms = 0, datasheet = 0;
  for (const gb::Result& r : run.results)
    if (r.section == "probe.gemm" && r.unit == "TFLOP/s" && r.value) {
      ++gemms;
      datasheet += r.find_reference("datasheet") ? 1 : 0;
    }
  EXPECT_EQ(count(chart, "class=\"mark\""), gemms);
  EXPECT_EQ(count(chart, "stroke=\"#222222\"><title>datasheet"), datasheet);
}

TEST(HtmlReport, TheLinkStateShowsWhereTheLinkTrainedDown) {
  gb::Run run = gb::test::h200_degraded_link_run();
  run.gpu.link_max_slot = {5, 16};
  const std::string html = gb::report::render_html(run);
  EXPECT_NE(html.find("PCIe link under load: Gen3 x8 (slot and GPU allow Gen5 x16)"),
            std::string::npos);
}

TEST(HtmlReport, ASweepIsALineWithItsKneeAndTheSlowerRegionShaded) {
  const std::string html = gb::report::render_html(sweep_run());
  const auto start = html.find("class=\"chart sweep\"");
  ASSERT_NE(start, std::string::npos);
  const std::string chart = html.substr(start, html.find("</svg>", start) - start);
  EXPECT_EQ(count(chart, "<circle class=\"mark\""), 10u) << "5 points, and 5 per busy core";
  EXPECT_NE(chart.find("class=\"marker\""), std::string::npos);
  EXPECT_NE(chart.find("fewest workers within 3 %: 8"), std::string::npos);
  EXPECT_NE(chart.find("more workers than the best (8): slower beyond the noise"),
            std::string::npos);
}

TEST(HtmlReport, NoShadeWhenTheExtraWorkersAreWithinTheNoise) {
  gb::Run run = sweep_run();
  gb::Result& last = run.results[4];  // 16 workers: 4,990 vs the best's 5,000 +- 1 %
  last = gb::Result::measured(last.key, last.label, last.unit, {4950, 4990, 5030});
  last.param("workers", 16, "workers", 0);
  last.section = "loader.cpu";
  const std::string html = gb::report::render_html(run);
  EXPECT_EQ(html.find("class=\"shade\""), std::string::npos);
}

TEST(HtmlReport, VariantsOfOneFigureShowTheirNoiseBand) {
  gb::Run run = gb::test::base_run("2026-12-04T10:00:00Z", 60);
  run.command = "amp";
  for (const char* p : {"tf32", "fp16", "bf16"}) {
    gb::Result r = gb::Result::measured(std::string("amp.") + p + ".accuracy_change.points",
                                        std::string(p) + ": accuracy change vs FP32", "points",
                                        {0.1, -0.05, 0.02});
    r.param("noise band", 0.2, "points", 2);
    run.results.push_back(r);
  }
  run.sections.push_back({"amp", "Mixed precision", gb::Layout::monitor});
  for (gb::Result& r : run.results) r.section = "amp";
  const std::string html = gb::report::render_html(run);
  EXPECT_EQ(count(html, "class=\"whisker\""), 3u);
  EXPECT_NE(html.find("noise band (2 standard errors)"), std::string::npos);
  EXPECT_NE(html.find("<h3>accuracy change vs FP32</h3>"), std::string::npos);
}

TEST(HtmlReport, ADayOfSecondsDrawsSmallAndKeepsItsExtremes) {
  gb::RunSeries series;
  constexpr std::size_t kPoints = 24 * 3600;
  gb::SeriesPanel gpu{"gpu", "GPU activity", "%", 100, {}};
  gb::SeriesLine util{"gpu_util_pct", "busy", {}};
  for (std::size_t i = 0; i < kPoints; ++i) {
    series.t_s.push_back(static_cast<double>(i + 1));
    util.values.push_back(i == 50000 ? 100.0 : 40.0);  // one second at 100 in a day at 40
  }
  gpu.lines.push_back(util);
  series.panels.push_back(gpu);
  gb::HeatStrip cores{"cpu_cores", "CPU busy per core", "%", {}, {}};
  for (int c = 0; c < 64; ++c) {
    cores.rows.push_back("cpu" + std::to_string(c));
    std::vector<double> v(kPoints);
    for (std::size_t i = 0; i < kPoints; ++i) v[i] = static_cast<double>((i / 600 + c) % 11) * 10;
    cores.values.push_back(std::move(v));
  }
  series.strips.push_back(cores);
  gb::report::HtmlOptions options;
  options.series = &series;
  const std::string html = gb::report::render_html(gb::test::watch_starved_run(), options);
  EXPECT_LT(html.size(), 5u * 1024 * 1024);
  const auto start = html.find("id=\"series-gpu\"");
  ASSERT_NE(start, std::string::npos);
  const std::string panel = html.substr(start, html.find("</svg>", start) - start);
  // y of 100 % in the panel: top = 30 (the spike is drawn), y of 40 %: 144 - 0.4 * 114.
  EXPECT_NE(panel.find(" 30.0"), std::string::npos) << "the one-second spike survives";
  EXPECT_EQ(count(html, "class=\"mark heat-row\""), 64u);
}

TEST(WatchSeriesChart, ReadsTheRecordedSeriesBackAsPanels) {
  const std::filesystem::path path =
      std::filesystem::path(GPUBASE_FIXTURES_DIR) / "runs" / "watch-cpu-no-gpu.series.jsonl";
  const gb::RunSeries s = gb::watch::read_series_chart(path.string());
  ASSERT_GE(s.t_s.size(), 10u);
  std::vector<std::string> ids;
  for (const auto& p : s.panels) ids.push_back(p.id);
  // No GPU on the machine that recorded it: no GPU panel, not a flat zero.
  EXPECT_EQ(std::find(ids.begin(), ids.end(), "gpu"), ids.end());
  EXPECT_NE(std::find(ids.begin(), ids.end(), "cpu"), ids.end());
  EXPECT_NE(std::find(ids.begin(), ids.end(), "job"), ids.end());
  ASSERT_EQ(s.strips.size(), 1u);
  EXPECT_GE(s.strips[0].rows.size(), 1u);
  for (const auto& row : s.strips[0].values) EXPECT_EQ(row.size(), s.t_s.size());
}

TEST(WatchSeriesChart, ReadsTheCsvFormToo) {
  const auto dir = std::filesystem::temp_directory_path() / "gb_series_chart_csv";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "s.csv").string();
  {
    gb::watch::SeriesWriter w(path);
    for (int i = 1; i <= 3; ++i) {
      gb::watch::WatchSample s;
      s.t_s = i;
      s.interval_s = 1;
      s.gpu.util_pct = 30.0 * i;
      s.cpu.busiest_core_pct = 50;
      w.write(s);
    }
  }
  const gb::RunSeries s = gb::watch::read_series_chart(path);
  ASSERT_EQ(s.t_s.size(), 3u);
  ASSERT_FALSE(s.panels.empty());
  EXPECT_EQ(s.panels[0].id, "gpu");
  EXPECT_EQ(s.panels[0].lines[0].values, (std::vector<double>{30, 60, 90}));
  std::filesystem::remove_all(dir);
}

TEST(CliReport, WritesHtmlWithTheWatchSeriesFoundNextToTheRunFile) {
  const auto dir = std::filesystem::temp_directory_path() / "gb_cli_report_html";
  std::filesystem::create_directories(dir);
  const std::string run_file =
      (std::filesystem::path(GPUBASE_FIXTURES_DIR) / "runs" / "watch-cpu-no-gpu.json").string();
  const std::string out = (dir / "run.html").string();
  const auto o = gb::test::run_gpubase({"report", run_file, "--html", "-o", out});
  ASSERT_EQ(o.code, 0) << o.err;
  std::ifstream in(out);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("id=\"series-cpu\""), std::string::npos);
  EXPECT_NE(text.str().find("id=\"series-cpu_cores\""), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(CliReport, TwoFormatsAtOnceIsAUsageError) {
  const std::string run_file =
      (std::filesystem::path(GPUBASE_FIXTURES_DIR) / "runs" / "watch-cpu-no-gpu.json").string();
  const auto o = gb::test::run_gpubase({"report", run_file, "--csv", "--html"});
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("choose one output format"), std::string::npos);
}
