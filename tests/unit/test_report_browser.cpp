// tests/unit/test_report_browser.cpp: the HTML reports of the committed runs (bench/results,
// tests/fixtures/runs) opened in a real browser, headless Chromium at 1280 px wide. A check script
// added to a copy of each page records script errors (window.onerror, from the page's first
// line) and, once laid out, every chart's marks and labels and every text, chart or table that
// reaches outside its box; Chromium's DOM dump carries the result back. Skipped when no Chromium
// is installed (Debian: chromium; GPUBASE_CHROMIUM names another binary). With
// GPUBASE_SCREENSHOT_DIR set, each page is also saved there as a PNG (and the HTML), for a person
// to look at.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "cli/output.hpp"
#include "core/json.hpp"
#include "diagnose/timeline.hpp"
#include "report/report.hpp"
#include "test_cli_util.hpp"
#include "test_report_fixture.hpp"

namespace fs = std::filesystem;

namespace {

std::string find_chromium() {
  if (const char* env = std::getenv("GPUBASE_CHROMIUM"); env && *env) return env;
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');)
    for (const char* name : {"chromium", "chromium-browser", "google-chrome"})
      if (::access((fs::path(dir) / name).c_str(), X_OK) == 0) return (fs::path(dir) / name).string();
  return "";
}

// Injected first in <head>: errors from any later script land in window.__gbErrors.
constexpr const char* kErrorHook =
    "<script>window.__gbErrors=[];window.addEventListener('error',function(e){"
    "window.__gbErrors.push(String(e.message||e));});</script>";

// Injected last in <body>: measures the laid-out page and writes the verdict as JSON.
constexpr const char* kCheck = R"js(<script>(function(){
var out={errors:window.__gbErrors,charts:[],overflow:[],width:document.documentElement.scrollWidth,
viewport:window.innerWidth};
function outside(r,b){return r.left<b.left-1||r.right>b.right+1||r.top<b.top-1||r.bottom>b.bottom+1;}
var main=document.querySelector('main').getBoundingClientRect();
document.querySelectorAll('svg.chart').forEach(function(s){
  var b=s.getBoundingClientRect();
  out.charts.push({id:s.id,marks:s.querySelectorAll('.mark').length,
                   labels:s.querySelectorAll('text.label').length});
  if(outside(b,main))out.overflow.push(s.id+': chart outside the page');
  s.querySelectorAll('text').forEach(function(t){var r=t.getBoundingClientRect();
    if(r.width>0&&outside(r,b))out.overflow.push(s.id+': '+t.textContent);});
});
document.querySelectorAll('table').forEach(function(t){
  if(t.scrollWidth>t.parentElement.clientWidth+1)out.overflow.push('table in '+t.closest('section').id);});
out.findings=[];document.querySelectorAll('svg.chart g.finding').forEach(function(g){
  var id=g.getAttribute('data-finding'),titled=0;
  g.querySelectorAll('.mark.finding').forEach(function(m){var t=m.querySelector('title');
    if(t&&t.textContent.indexOf(id)===0)titled++;});
  out.findings.push({id:id,markers:g.querySelectorAll('.mark.finding').length,titled:titled,
    label:(g.querySelector('text.label')||{}).textContent||'',
    bands:document.querySelectorAll('.finding-band[data-finding="'+id+'"]').length});});
out.page_ms=performance.now();
var pre=document.createElement('pre');pre.id='gb-check';pre.textContent=JSON.stringify(out);
document.body.appendChild(pre);})();</script>)js";

struct PageCheck {
  gb::Json result;
  double seconds = 0;
};

std::string run_command(const std::string& cmd) {
  std::string out;
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    std::array<char, 65536> buf{};
    std::size_t n = 0;
    while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
    ::pclose(p);
  }
  return out;
}

std::string html_unescape(std::string s) {
  const std::pair<const char*, const char*> kEntities[] = {
      {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&#39;", "'"}, {"&amp;", "&"}};
  for (const auto& [from, to] : kEntities)
    for (auto pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + 1))
      s.replace(pos, std::string(from).size(), to);
  return s;
}

class BrowserReport : public testing::Test {
 protected:
  void SetUp() override {
    chromium_ = find_chromium();
    if (chromium_.empty()) GTEST_SKIP() << "no Chromium installed (Debian: apt install chromium)";
    dir_ = fs::temp_directory_path() / ("gb_browser_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }

  // Opens the page (with the check script) in Chromium at 1280 px and returns the check's JSON.
  PageCheck check(const std::string& html, const std::string& name) {
    std::string page = html;
    page.insert(page.find("<head>") + 6, kErrorHook);
    page.insert(page.rfind("</body>"), kCheck);
    const fs::path file = dir_ / (name + ".html");
    std::ofstream(file) << page;
    const std::string common = "'" + chromium_ +
                               "' --headless --no-sandbox --disable-gpu --hide-scrollbars "
                               "--no-first-run --user-data-dir='" +
                               (dir_ / "profile").string() + "' --window-size=1280,1000 ";
    const auto t0 = std::chrono::steady_clock::now();
    const std::string dom = run_command(common + "--dump-dom 'file://" + file.string() + "' 2>/dev/null");
    PageCheck c;
    c.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (const char* shots = std::getenv("GPUBASE_SCREENSHOT_DIR"); shots && *shots) {
      fs::create_directories(shots);
      fs::copy_file(file, fs::path(shots) / (name + ".html"), fs::copy_options::overwrite_existing);
      // The full page: tall enough for the longest report.
      run_command("'" + chromium_ + "' --headless --no-sandbox --disable-gpu --hide-scrollbars "
                  "--user-data-dir='" + (dir_ / "profile").string() +
                  "' --window-size=1280,6000 --screenshot='" +
                  (fs::path(shots) / (name + ".png")).string() + "' 'file://" + file.string() +
                  "' >/dev/null 2>&1");
    }
    const auto start = dom.find("<pre id=\"gb-check\">");
    EXPECT_NE(start, std::string::npos) << name << ": the check script did not run; DOM:\n"
                                        << dom.substr(0, 2000);
    if (start == std::string::npos) return c;
    const auto body = start + std::string("<pre id=\"gb-check\">").size();
    c.result = gb::Json::parse(html_unescape(dom.substr(body, dom.find("</pre>", body) - body)));
    return c;
  }

  PageCheck check_run_file(const fs::path& run_file) {
    const fs::path html = dir_ / (run_file.stem().string() + ".plain.html");
    const auto o = gb::test::run_gpubase({"report", run_file.string(), "--html", "-o", html.string()});
    EXPECT_EQ(o.code, 0) << o.err;
    std::ifstream in(html);
    std::stringstream text;
    text << in.rdbuf();
    return check(text.str(), run_file.stem().string());
  }

  static void expect_clean(const PageCheck& c, const std::string& name) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(c.result["errors"].empty()) << c.result["errors"].dump();
    EXPECT_TRUE(c.result["overflow"].empty()) << c.result["overflow"].dump(1);
    EXPECT_LE(c.result["width"].get<int>(), c.result["viewport"].get<int>())
        << "the page scrolls sideways at 1280 px";
  }

  static std::map<std::string, std::pair<int, int>> charts(const PageCheck& c) {
    std::map<std::string, std::pair<int, int>> out;
    for (const auto& ch : c.result["charts"])
      out[ch["id"].get<std::string>()] = {ch["marks"].get<int>(), ch["labels"].get<int>()};
    return out;
  }

  static fs::path repo() { return fs::path(GPUBASE_FIXTURES_DIR) / ".." / ".."; }

  std::string chromium_;
  fs::path dir_;
};

}  // namespace

TEST_F(BrowserReport, TheProbeRunDrawsEveryGemmAgainstItsReferences) {
  const fs::path file = repo() / "bench" / "results" / "h200-probe-v4.json";
  const PageCheck c = check_run_file(file);
  expect_clean(c, "probe");
  const gb::Run run = gb::cli::load_run(file);
  int gemm = 0, memory = 0;
  for (const gb::Result& r : run.results) {
    gemm += r.section == "probe.gemm" && r.unit == "TFLOP/s" && r.value ? 1 : 0;
    memory += r.section == "probe.memory" && r.unit == "GB/s" && r.value ? 1 : 0;
  }
  const auto ch = charts(c);
  ASSERT_TRUE(ch.count("chart-probe-gemm-TFLOP-s"));
  EXPECT_EQ(ch.at("chart-probe-gemm-TFLOP-s").first, gemm);
  EXPECT_EQ(ch.at("chart-probe-gemm-TFLOP-s").second, 2 * gemm) << "a label and a value per bar";
  ASSERT_TRUE(ch.count("chart-probe-memory-GB-s"));
  EXPECT_EQ(ch.at("chart-probe-memory-GB-s").first, memory);
}

TEST_F(BrowserReport, TheLoaderRunDrawsItsWorkerSweep) {
  const PageCheck c = check_run_file(repo() / "bench" / "results" / "h200-loader-v5.json");
  expect_clean(c, "loader");
  const auto ch = charts(c);
  ASSERT_TRUE(ch.count("chart-loader-cpu-sweep0"));
  // 1, 2, 4, 8, 16 workers: images/s and images per busy core; the knee's label.
  EXPECT_EQ(ch.at("chart-loader-cpu-sweep0").first, 10);
  EXPECT_EQ(ch.at("chart-loader-cpu-sweep0").second, 1);
}

TEST_F(BrowserReport, TheTrainingRunDrawsOneBarPerConfiguration) {
  const fs::path file = repo() / "bench" / "results" / "h200-train-v5.json";
  const PageCheck c = check_run_file(file);
  expect_clean(c, "train");
  const gb::Run run = gb::cli::load_run(file);
  int configurations = 0;
  for (const gb::Result& r : run.results) configurations += r.key.ends_with(".images_per_s");
  const auto ch = charts(c);
  ASSERT_TRUE(ch.count("chart-train-images"));
  EXPECT_EQ(ch.at("chart-train-images").first, configurations);
}

TEST_F(BrowserReport, TheAmpRunDrawsAccuracyWithItsNoise) {
  const PageCheck c = check_run_file(repo() / "bench" / "results" / "h200-amp-v1.json");
  expect_clean(c, "amp");
  const auto ch = charts(c);
  ASSERT_TRUE(ch.count("chart-amp-amp---test-accuracy-pct"));
  EXPECT_EQ(ch.at("chart-amp-amp---test-accuracy-pct").first, 4) << "FP32, TF32, FP16, BF16";
  ASSERT_TRUE(ch.count("chart-amp-amp---accuracy-change-points"));
  EXPECT_EQ(ch.at("chart-amp-amp---accuracy-change-points").first, 3) << "against FP32";
}

TEST_F(BrowserReport, TheAmpSpeedRunDrawsEveryConfiguration) {
  const PageCheck c = check_run_file(repo() / "bench" / "results" / "h200-amp-speed-v1.json");
  expect_clean(c, "amp-speed");
  const auto ch = charts(c);
  ASSERT_TRUE(ch.count("chart-train-images"));
  EXPECT_EQ(ch.at("chart-train-images").first, 16);
}

TEST_F(BrowserReport, TheWatchRunDrawsItsTimeSeries) {
  const fs::path file = repo() / "tests" / "fixtures" / "runs" / "watch-cpu-no-gpu.json";
  const PageCheck c = check_run_file(file);
  expect_clean(c, "watch");
  const auto ch = charts(c);
  ASSERT_TRUE(ch.count("series-cpu"));
  EXPECT_EQ(ch.at("series-cpu").first, 3) << "busiest core, mean, I/O wait";
  ASSERT_TRUE(ch.count("series-cpu_cores"));
  std::ifstream in(repo() / "tests" / "fixtures" / "runs" / "watch-cpu-no-gpu.series.jsonl");
  std::string first;
  std::getline(in, first);
  EXPECT_EQ(ch.at("series-cpu_cores").first,
            static_cast<int>(gb::Json::parse(first)["cpu_cores_busy_pct"].size()))
      << "one heat row per core";
}

TEST_F(BrowserReport, ADayOfSecondsStaysSmallAndQuick) {
  gb::RunSeries series;
  constexpr std::size_t kPoints = 24 * 3600;
  for (std::size_t i = 0; i < kPoints; ++i) series.t_s.push_back(static_cast<double>(i + 1));
  // The columns watch records (watch/series_chart), so the findings are placed on the timeline
  // as they would be for a real day-long run.
  const std::map<std::string, std::vector<std::string>> columns = {
      {"gpu", {"gpu_util_pct", "gpu_sm_active_pct", "gpu_tensor_active_pct"}},
      {"cpu", {"cpu_busiest_core_pct", "cpu_mean_core_pct", "cpu_iowait_pct"}},
      {"job", {"job_processes", "job_active_processes", "job_saturated_processes"}},
      {"disk", {"disk_busiest_util_pct", "disk1", "disk2"}}};
  for (const char* id : {"gpu", "cpu", "job", "disk"}) {
    gb::SeriesPanel p{id, id, "%", 100, {}};
    for (int l = 0; l < 3; ++l) {
      gb::SeriesLine line{columns.at(id)[static_cast<std::size_t>(l)], "line " + std::to_string(l), {}};
      for (std::size_t i = 0; i < kPoints; ++i) {
        const double v = 50 + 45 * std::sin(static_cast<double>(i) / (400.0 + 97 * l));
        // A saturated loader process half the time: the starvation finding comes and goes
        // (dozens of markers over the day).
        line.values.push_back(line.id == "job_saturated_processes" ? (v > 50 ? 1 : 0) : v);
      }
      p.lines.push_back(std::move(line));
    }
    series.panels.push_back(std::move(p));
  }
  gb::HeatStrip cores{"cpu_cores", "CPU busy per core", "%", {}, {}};
  for (int core = 0; core < 16; ++core) {
    cores.rows.push_back("cpu" + std::to_string(core));
    std::vector<double> v(kPoints);
    for (std::size_t i = 0; i < kPoints; ++i)
      v[i] = 50 + 50 * std::sin(static_cast<double>(i + 977 * core) / 1800.0);
    cores.values.push_back(std::move(v));
  }
  series.strips.push_back(std::move(cores));
  const gb::Run run = gb::test::watch_starved_run();
  series.findings = gb::diagnose::finding_timelines(run, series);
  std::size_t spans = 0;
  for (const gb::FindingTimeline& f : series.findings) spans += f.spans.size();
  ASSERT_GT(spans, 0u) << "the day's findings are marked on the timeline";
  gb::report::HtmlOptions options;
  options.series = &series;
  const std::string html = gb::report::render_html(run, options);
  EXPECT_LT(html.size(), 5u << 20);
  const PageCheck c = check(html, "watch-24h");
  expect_clean(c, "watch-24h");
  const auto ch = charts(c);
  EXPECT_EQ(ch.at("series-gpu").first, 3);
  EXPECT_EQ(ch.at("series-cpu_cores").first, 16);
  // page_ms: from navigation to the page laid out (parsed, styled, every chart measured); the
  // target is 2 s (bench/NOTES.md), asserted loosely so a loaded 2-core CI machine passes.
  const double page_ms = c.result["page_ms"].get<double>();
  EXPECT_LT(page_ms, 10000.0);
  std::printf("24 h series at 1 s: %.2f MB of HTML, %zu finding markers, page laid out in %.0f "
              "ms, Chromium start to DOM dump %.2f s\n",
              static_cast<double>(html.size()) / 1e6, spans, page_ms, c.seconds);
}

TEST_F(BrowserReport, TheWatchRunMarksItsFindingsWhereTheyHeld) {
  // Five minutes at 1 s: the GPU starved (40 % busy) while one loader process holds a core, in
  // three stretches (30-59 s, 120-149 s, 200-259 s); busy otherwise.
  gb::RunSeries series;
  gb::SeriesPanel gpu{"gpu", "GPU activity", "%", 100, {{"gpu_util_pct", "busy (driver)", {}}}};
  gb::SeriesPanel cpu{"cpu", "CPU", "%", 100, {{"cpu_busiest_core_pct", "busiest core", {}}}};
  gb::SeriesPanel job{"job", "The job's processes", "processes", 0,
                      {{"job_saturated_processes", "saturated (>= 90 %)", {}}}};
  for (int i = 0; i < 300; ++i) {
    const bool starved = (i >= 30 && i < 60) || (i >= 120 && i < 150) || (i >= 200 && i < 260);
    series.t_s.push_back(i + 1);
    gpu.lines[0].values.push_back(starved ? 40 : 99);
    cpu.lines[0].values.push_back(starved ? 99 : 35);
    job.lines[0].values.push_back(starved ? 1 : 0);
  }
  series.panels = {gpu, cpu, job};
  const gb::Run run = gb::test::watch_starved_run();
  series.findings = gb::diagnose::finding_timelines(run, series);
  gb::report::HtmlOptions options;
  options.series = &series;
  const PageCheck c = check(gb::report::render_html(run, options), "watch-findings");
  expect_clean(c, "watch-findings");

  std::map<std::string, gb::Json> shown;
  for (const auto& f : c.result["findings"]) shown[f["id"].get<std::string>()] = f;
  // The starvation finding of this run held in exactly the three stretches.
  const std::string starved_id = run.findings.front().id;
  ASSERT_TRUE(shown.count(starved_id)) << c.result["findings"].dump(1);
  EXPECT_EQ(shown[starved_id]["markers"].get<int>(), 3);
  EXPECT_EQ(shown[starved_id]["titled"].get<int>(), 3) << "each marker names its finding on hover";
  EXPECT_EQ(shown[starved_id]["bands"].get<int>(), 3 * 3) << "a band on each of the 3 panels";
  EXPECT_NE(shown[starved_id]["label"].get<std::string>().find(starved_id), std::string::npos);
  // Every finding the series can place has a row; the marker count is the spans found.
  int markers = 0;
  for (const gb::FindingTimeline& f : series.findings) {
    ASSERT_TRUE(shown.count(f.finding_id)) << f.finding_id;
    EXPECT_EQ(shown[f.finding_id]["markers"].get<int>(), static_cast<int>(f.spans.size()));
    markers += static_cast<int>(f.spans.size());
  }
  EXPECT_EQ(charts(c).at("series-findings").first, markers);
}
