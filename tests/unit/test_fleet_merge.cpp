// tests/unit/test_fleet_merge.cpp: `gpubase fleet merge` on run files written the way gpubase
// writes them (core/json from a Run): the fast scanner reads what the full reader reads; GPUs
// are grouped by model, memory, power class, driver and CUDA; a figure 3 % or more below its
// group's median, a link below the GPU's maximum, a throttled or invalid figure and a run
// without a GPU are flagged worst first; the command's exit codes and output formats.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "cli/fleet_cmd.hpp"
#include "core/json.hpp"
#include "fleet/merge.hpp"
#include "fleet/print.hpp"
#include "fleet/run_scan.hpp"
#include "test_data_util.hpp"

namespace gb {
namespace {

constexpr std::uint64_t kHwThermalSlowdown = 0x40;  // nvmlClocksThrottleReasonHwThermalSlowdown

struct GpuSpec {
  std::string host = "node01";
  int index = 0;
  double bf16 = 800;     // probe.gemm.bf16.tflops
  double copy = 4200;    // probe.memory.copy.gbps
  double latency = 3.6;  // a lower-is-better judged figure
  std::string driver = "580.159.04";
  double power = 700;
  int gen = 5, width = 16;  // link under load
  std::uint64_t throttle = 0;
  bool no_gpu = false;
};

Run make_run(const GpuSpec& g) {
  Run run;
  run.command = "probe";
  run.environment.push_back(Fact::text("run.host", "host", g.host));
  run.environment.push_back(Fact::text("run.scheduler", "launched by", "slurm"));
  run.environment.push_back(Fact::numeric("run.rank", "rank", g.index, "", 0));
  if (g.no_gpu) {
    run.gpu.unavailable = "no NVIDIA driver found";
    run.environment.push_back(Fact::text("gpu.available", "GPU", "none: no NVIDIA driver found"));
    run.results.push_back(Result::skipped("probe.gemm", "GEMM", "", "no NVIDIA driver found"));
    return run;
  }
  run.environment.push_back(Fact::text("gpu.index", "CUDA device", std::to_string(g.index)));
  run.environment.push_back(Fact::text("gpu.name", "GPU", "NVIDIA H200"));
  run.environment.push_back(
      Fact::text("gpu.uuid", "UUID", "GPU-" + g.host + "-" + std::to_string(g.index)));
  run.environment.push_back(Fact::numeric("gpu.memory", "memory", 139.8, "GiB", 1));
  run.environment.push_back(Fact::numeric("gpu.power_limit", "power limit", g.power, "W", 0));
  run.environment.push_back(Fact::text("driver.version", "NVIDIA driver", g.driver));
  run.environment.push_back(Fact::text("cuda.driver", "CUDA (driver)", "13.0"));
  run.gpu.link_max_slot = {5, 16};
  run.gpu.link_max_gpu = {5, 16};
  Result bf16 = Result::measured("probe.gemm.bf16.tflops", "BF16 \"dense\"", "TFLOP/s",
                                 {g.bf16 * 0.99, g.bf16, g.bf16 * 1.01});
  bf16.status = Status::pass;
  bf16.reference("datasheet", 989, "spec table");
  bf16.param("algorithm", "cublasLt heuristic 0 {tn}");
  if (g.throttle) {
    bf16.telemetry = Telemetry{};
    bf16.telemetry->throttle_reasons = g.throttle;
  }
  run.results.push_back(bf16);
  Result copy = Result::measured("probe.memory.copy.gbps", "copy", "GB/s", {g.copy, g.copy});
  copy.status = Status::pass;
  run.results.push_back(copy);
  Result lat = Result::measured("probe.latency.launch_host.us", "launch", "us", {g.latency}, false);
  lat.status = Status::warn;
  run.results.push_back(lat);
  Result info = Result::measured("probe.gemm.bf16.4096x4096x4096.tflops", "4096", "TFLOP/s",
                                 {g.bf16 / 2});  // no verdict: not judged
  run.results.push_back(info);
  Result gen = Result::measured("probe.pcie.link.gen_under_load", "gen", "", {double(g.gen)});
  gen.status = g.gen < 5 ? Status::fail : Status::pass;
  run.results.push_back(gen);
  Result width =
      Result::measured("probe.pcie.link.width_under_load", "width", "", {double(g.width)});
  width.status = g.width < 16 ? Status::fail : Status::pass;
  run.results.push_back(width);
  return run;
}

std::string run_text(const GpuSpec& g) {
  return to_json(make_run(g)).dump(2);
}

fleet::MergeReport merge(const std::vector<GpuSpec>& gpus, fleet::MergeOptions options = {}) {
  fleet::KeyTable keys;
  std::vector<fleet::ScannedRun> runs;
  std::vector<std::string> files;
  for (const GpuSpec& g : gpus) {
    runs.push_back(fleet::scan_run(run_text(g), keys));
    files.push_back(g.host + "-" + std::to_string(g.index) + ".json");
  }
  return fleet::merge_runs(std::move(runs), std::move(files), std::move(keys), options);
}

// Eight healthy GPUs on one node, as a baseline to plant faults into.
std::vector<GpuSpec> node(const std::string& host = "node01") {
  std::vector<GpuSpec> gpus;
  for (int i = 0; i < 8; ++i) {
    GpuSpec g;
    g.host = host;
    g.index = i;
    g.bf16 = 800 + i * 0.5;
    gpus.push_back(g);
  }
  return gpus;
}

const fleet::FlaggedGpu* flagged(const fleet::MergeReport& r, const std::string& host, int index) {
  for (const auto& f : r.flagged)
    if (r.runs[f.run].host == host && r.runs[f.run].gpu_index == std::to_string(index)) return &f;
  return nullptr;
}

TEST(FleetScan, ReadsWhatTheRunWriterWrites) {
  GpuSpec g;
  g.host = "gpu-ä07";  // non-ASCII survives
  g.index = 3;
  g.throttle = kHwThermalSlowdown;
  fleet::KeyTable keys;
  const fleet::ScannedRun r = fleet::scan_run(run_text(g), keys);
  EXPECT_EQ(r.command, "probe");
  EXPECT_EQ(r.host, "gpu-ä07");
  EXPECT_EQ(r.rank, 3);
  EXPECT_EQ(r.gpu_index, "3");
  EXPECT_EQ(r.gpu_name, "NVIDIA H200");
  EXPECT_DOUBLE_EQ(*r.memory_gib, 139.8);
  EXPECT_DOUBLE_EQ(*r.power_limit_w, 700);
  EXPECT_EQ(r.driver, "580.159.04");
  EXPECT_EQ(r.cuda, "13.0");
  EXPECT_EQ(r.link_max_gpu.gen, 5);
  EXPECT_EQ(r.link_max_slot.width, 16);
  EXPECT_EQ(r.link_gen_under_load, 5);
  EXPECT_EQ(r.link_width_under_load, 16);
  // Judged figures only: the 4096^3 info row and the link rows are not among them.
  ASSERT_EQ(r.figures.size(), 3u);
  EXPECT_EQ(keys.name(r.figures[0].key), "probe.gemm.bf16.tflops");
  EXPECT_DOUBLE_EQ(r.figures[0].value, 800);
  EXPECT_EQ(r.figures[0].throttle_reasons, kHwThermalSlowdown);
  EXPECT_FALSE(r.figures[2].higher_is_better);
}

TEST(FleetScan, ARunWithoutAGpuSaysWhy) {
  GpuSpec g;
  g.no_gpu = true;
  fleet::KeyTable keys;
  const fleet::ScannedRun r = fleet::scan_run(run_text(g), keys);
  EXPECT_EQ(r.gpu_unavailable, "no NVIDIA driver found");
  EXPECT_TRUE(r.figures.empty());
}

TEST(FleetScan, EscapedStringsAndCompactJsonAreRead) {
  GpuSpec g;
  g.host = "a\"b\\c\n";
  fleet::KeyTable keys;
  const fleet::ScannedRun r = fleet::scan_run(to_json(make_run(g)).dump(), keys);
  EXPECT_EQ(r.host, "a\"b\\c\n");
  EXPECT_EQ(r.figures.size(), 3u);
}

TEST(FleetScan, BracketsAndEscapedQuotesInsideLongStringsDoNotEndAContainer) {
  // The skipper reads 64 bytes at a time: strings with brackets, quotes and backslashes that
  // span block edges must not change the nesting it counts.
  gb::Run run = make_run(GpuSpec{});
  std::string tricky;
  for (int i = 0; i < 40; ++i) tricky += "]} \"quoted\" {[ \\ ";
  for (Result& r : run.results) {
    r.param("note", tricky);
    r.reference("achievable", 1, tricky + "]]]}}}");
  }
  run.results.insert(run.results.begin(), Result::skipped("probe.x", "x", "", tricky));
  fleet::KeyTable keys;
  for (const int indent : {-1, 2}) {
    const fleet::ScannedRun r = fleet::scan_run(to_json(run).dump(indent), keys);
    ASSERT_EQ(r.figures.size(), 3u) << indent;
    EXPECT_EQ(keys.name(r.figures[1].key), "probe.memory.copy.gbps");
    EXPECT_EQ(r.link_width_under_load, 16);
  }
}

TEST(FleetScan, TextThatIsNotARunIsRefusedWithWhere) {
  fleet::KeyTable keys;
  for (const char* bad :
       {"", "{}", "{\"schema\": \"other\"}", "[1,2]", "{\"schema\": \"gpubase.run\"",
        "{\"schema\": \"gpubase.run\", \"results\": [{\"key\": 1}]}"}) {
    EXPECT_THROW(fleet::scan_run(bad, keys), fleet::ScanError) << bad;
  }
  std::string truncated = run_text(GpuSpec{});
  truncated.resize(truncated.size() / 2);
  try {
    fleet::scan_run(truncated, keys);
    FAIL();
  } catch (const fleet::ScanError& e) {
    EXPECT_NE(std::string(e.what()).find("at byte"), std::string::npos) << e.what();
  }
}

TEST(FleetMerge, HealthyGpusAreNotFlagged) {
  const auto r = merge(node());
  ASSERT_EQ(r.groups.size(), 1u);
  EXPECT_EQ(r.groups[0].gpus, 8u);
  EXPECT_TRUE(r.flagged.empty());
  // Median and MAD of the eight BF16 figures 800.0 .. 803.5.
  const auto& keys = r.groups[0].keys;
  const auto it = std::find_if(keys.begin(), keys.end(), [&](const fleet::KeyStats& k) {
    return r.keys.name(k.key) == "probe.gemm.bf16.tflops";
  });
  ASSERT_NE(it, keys.end());
  EXPECT_DOUBLE_EQ(it->median, 801.75);
  EXPECT_DOUBLE_EQ(it->mad, 1.0);
  EXPECT_EQ(it->n, 8u);
}

TEST(FleetMerge, AGpuFivePercentSlowIsFlaggedOneTwoPercentSlowIsNot) {
  auto gpus = node();
  gpus[2].bf16 = 801.75 * 0.95;
  gpus[5].copy = 4200 * 0.98;
  const auto r = merge(gpus);
  ASSERT_EQ(r.flagged.size(), 1u);
  const auto* f = flagged(r, "node01", 2);
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(f->problems.size(), 1u);
  EXPECT_EQ(f->problems[0].kind, fleet::ProblemKind::slow);
  EXPECT_EQ(f->problems[0].key, "probe.gemm.bf16.tflops");
  EXPECT_NEAR(f->problems[0].loss, 0.05, 0.003);
  EXPECT_NE(f->problems[0].evidence.find("below the median"), std::string::npos);
  EXPECT_FALSE(f->problems[0].advice.empty());
}

TEST(FleetMerge, TheThresholdIsAnOption) {
  auto gpus = node();
  gpus[5].copy = 4200 * 0.98;
  fleet::MergeOptions options;
  options.threshold = 0.015;
  EXPECT_NE(flagged(merge(gpus, options), "node01", 5), nullptr);
}

TEST(FleetMerge, ALowerIsBetterFigureIsFlaggedWhenAbove) {
  auto gpus = node();
  gpus[1].latency = 3.6 * 1.2;
  gpus[3].latency = 3.6 * 0.8;  // faster: fine
  const auto r = merge(gpus);
  ASSERT_EQ(r.flagged.size(), 1u);
  EXPECT_NE(flagged(r, "node01", 1), nullptr);
  EXPECT_NEAR(r.flagged[0].score, 0.2, 1e-9);
}

TEST(FleetMerge, ALinkBelowTheGpusMaximumIsFlaggedWithTheBandwidthLost) {
  auto gpus = node();
  gpus[4].gen = 4;
  gpus[6].width = 8;
  const auto r = merge(gpus);
  ASSERT_EQ(r.flagged.size(), 2u);
  for (int i : {4, 6}) {
    const auto* f = flagged(r, "node01", i);
    ASSERT_NE(f, nullptr) << i;
    EXPECT_EQ(f->problems[0].kind, fleet::ProblemKind::link);
    EXPECT_NEAR(f->problems[0].loss, 0.5, 1e-9);
    EXPECT_NE(f->problems[0].advice.find("reseat"), std::string::npos);
  }
}

TEST(FleetMerge, AThrottledFigureIsFlaggedAndLeftOutOfTheMedian) {
  auto gpus = node();
  gpus[7].bf16 = 700;
  gpus[7].throttle = kHwThermalSlowdown;
  const auto r = merge(gpus);
  ASSERT_EQ(r.flagged.size(), 1u);
  const auto* f = flagged(r, "node01", 7);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->problems[0].kind, fleet::ProblemKind::throttled);
  EXPECT_NE(f->problems[0].evidence.find("HwThermalSlowdown"), std::string::npos)
      << f->problems[0].evidence;
  for (const auto& k : r.groups[0].keys)
    if (r.keys.name(k.key) == "probe.gemm.bf16.tflops") {
      EXPECT_EQ(k.n, 7u);
    }
}

TEST(FleetMerge, GroupsSplitByDriverAndPowerClassAndAreComparedWithinThemselves) {
  auto a = node("a");
  auto b = node("b");
  for (auto& g : b) {
    g.driver = "575.57.08";
    g.bf16 *= 0.9;  // a whole group slower is not a slow GPU: it has its own median
  }
  auto c = node("c");
  for (auto& g : c) g.power = 600;
  std::vector<GpuSpec> all = a;
  all.insert(all.end(), b.begin(), b.end());
  all.insert(all.end(), c.begin(), c.end());
  const auto r = merge(all);
  EXPECT_EQ(r.groups.size(), 3u);
  EXPECT_TRUE(r.flagged.empty());
}

TEST(FleetMerge, AGroupSmallerThanMinPeersIsNotCompared) {
  auto gpus = node();
  gpus.resize(2);
  gpus[1].bf16 = 700;
  EXPECT_TRUE(merge(gpus).flagged.empty());
  fleet::MergeOptions options;
  options.min_peers = 2;
  EXPECT_FALSE(merge(gpus, options).flagged.empty());
}

TEST(FleetMerge, ARunWithoutAGpuIsFlaggedFirst) {
  auto gpus = node();
  gpus[0].bf16 = 700;
  GpuSpec none;
  none.host = "node02";
  none.no_gpu = true;
  gpus.push_back(none);
  const auto r = merge(gpus);
  ASSERT_EQ(r.flagged.size(), 2u);
  EXPECT_EQ(r.runs[r.flagged[0].run].host, "node02");
  EXPECT_EQ(r.flagged[0].problems[0].kind, fleet::ProblemKind::no_gpu);
  EXPECT_EQ(r.runs[r.flagged[1].run].host, "node01");
}

TEST(FleetMerge, FlaggedGpusAreListedWorstFirst) {
  auto gpus = node();
  gpus[1].bf16 = 801.75 * 0.96;
  gpus[2].copy = 4200 * 0.90;
  gpus[3].bf16 = 801.75 * 0.93;
  const auto r = merge(gpus);
  ASSERT_EQ(r.flagged.size(), 3u);
  EXPECT_EQ(r.runs[r.flagged[0].run].gpu_index, "2");
  EXPECT_EQ(r.runs[r.flagged[1].run].gpu_index, "3");
  EXPECT_EQ(r.runs[r.flagged[2].run].gpu_index, "1");
}

TEST(FleetPrint, JsonCarriesGroupsAndFlaggedGpusWithEvidence) {
  auto gpus = node();
  gpus[3].bf16 = 700;
  const Json j = fleet::to_json(merge(gpus));
  EXPECT_EQ(j["schema"], "gpubase.fleet");
  EXPECT_EQ(j["gpus"], 8);
  EXPECT_EQ(j["flagged_count"], 1);
  EXPECT_EQ(j["flagged"][0]["host"], "node01");
  EXPECT_EQ(j["flagged"][0]["gpu_index"], "3");
  EXPECT_EQ(j["flagged"][0]["problems"][0]["kind"], "slow");
  EXPECT_EQ(j["flagged"][0]["problems"][0]["key"], "probe.gemm.bf16.tflops");
  EXPECT_EQ(j["groups"][0]["gpu"], "NVIDIA H200");
}

TEST(FleetPrint, TerminalNamesTheGpuTheProblemAndTheAdvice) {
  auto gpus = node();
  gpus[3].gen = 4;
  const std::string text = fleet::render_terminal(merge(gpus), {});
  EXPECT_NE(text.find("node01 GPU 3"), std::string::npos) << text;
  EXPECT_NE(text.find("link: PCIe link under load Gen4 x16"), std::string::npos) << text;
  EXPECT_NE(text.find("advice: the link trained down"), std::string::npos) << text;
}

TEST(FleetPrint, HtmlIsOnePageWithAStripChartPerJudgedFigure) {
  auto gpus = node();
  gpus[3].bf16 = 700;
  const std::string html = fleet::render_html(merge(gpus));
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  std::size_t svgs = 0;
  for (std::size_t p = 0; (p = html.find("<svg", p)) != std::string::npos; ++p) ++svgs;
  EXPECT_EQ(svgs, 3u);  // bf16, copy, launch latency
  EXPECT_NE(html.find("<circle"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
}

struct FleetCommand : ::testing::Test {
  test::TempDir dir;
  void write(const std::filesystem::path& p, const std::string& text) {
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  void write_node(const std::vector<GpuSpec>& gpus) {
    for (const GpuSpec& g : gpus)
      write(dir / "runs" / g.host / (std::to_string(g.index) + ".json"), run_text(g));
  }
};

TEST_F(FleetCommand, ExitsZeroWhenNothingIsFlagged) {
  write_node(node());
  EXPECT_EQ(cli::run_fleet_args(
                {"merge", "-q", "-o", (dir / "out.txt").string(), (dir / "runs").string()}),
            0);
}

TEST_F(FleetCommand, ExitsOneWithTheFlaggedGpuInTheJson) {
  auto gpus = node();
  gpus[6].copy = 3000;
  write_node(gpus);
  const auto out = dir / "fleet.json";
  EXPECT_EQ(
      cli::run_fleet_args({"merge", "-q", "--json", "-o", out.string(), (dir / "runs").string()}),
      1);
  std::ifstream in(out);
  const Json j = Json::parse(in);
  EXPECT_EQ(j["flagged"][0]["gpu_index"], "6");
  EXPECT_EQ(j["run_files"], 8);
}

TEST_F(FleetCommand, AnUnreadableFileIsListedAndFailsTheMerge) {
  write_node(node());
  write(dir / "runs" / "broken.json", "{\"schema\": \"gpubase.run\", ");
  const auto out = dir / "fleet.json";
  EXPECT_EQ(
      cli::run_fleet_args({"merge", "-q", "--json", "-o", out.string(), (dir / "runs").string()}),
      1);
  std::ifstream in(out);
  const Json j = Json::parse(in);
  ASSERT_EQ(j["unreadable"].size(), 1u);
  EXPECT_NE(j["unreadable"][0]["file"].get<std::string>().find("broken.json"), std::string::npos);
  EXPECT_TRUE(j["flagged"].empty());
}

// A FIFO named as a run file is refused at once (opening one for reading would wait for a
// writer, deaf to Ctrl-C) and listed as unreadable with the reason; an empty file too.
TEST_F(FleetCommand, AFifoOrEmptyFileNamedAsARunIsListedNotWaitedOn) {
  write_node(node());
  const auto fifo = dir / "pipe.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  write(dir / "empty.json", "");
  const auto out = dir / "fleet.json";
  EXPECT_EQ(
      cli::run_fleet_args({"merge", "-q", "--json", "-o", out.string(), (dir / "runs").string(),
                           fifo.string(), (dir / "empty.json").string()}),
      1);
  std::ifstream in(out);
  const Json j = Json::parse(in);
  ASSERT_EQ(j["unreadable"].size(), 2u);
  std::string reasons;
  for (const auto& u : j["unreadable"]) reasons += u.dump();
  EXPECT_NE(reasons.find("not a regular file"), std::string::npos) << reasons;
  EXPECT_NE(reasons.find("empty file"), std::string::npos) << reasons;
  EXPECT_EQ(j["gpus"], 8);
}

TEST_F(FleetCommand, AMergedReportWrittenIntoTheRunsFolderIsLeftOutNextTime) {
  write_node(node());
  const auto out = dir / "runs" / "fleet.json";
  EXPECT_EQ(
      cli::run_fleet_args({"merge", "-q", "--json", "-o", out.string(), (dir / "runs").string()}),
      0);
  EXPECT_EQ(
      cli::run_fleet_args({"merge", "-q", "--json", "-o", out.string(), (dir / "runs").string()}),
      0);
  std::ifstream in(out);
  const Json j = Json::parse(in);
  EXPECT_EQ(j["run_files"], 8);
  EXPECT_EQ(j["fleet_reports_left_out"], 1);
  EXPECT_TRUE(j["unreadable"].empty());
}

TEST_F(FleetCommand, NamedFilesAndFoldersMix) {
  auto gpus = node();
  write_node(gpus);
  write(dir / "extra.json", run_text(GpuSpec{.host = "node09", .index = 0, .bf16 = 600}));
  const auto out = dir / "fleet.json";
  EXPECT_EQ(cli::run_fleet_args({"merge", "-q", "--json", "-o", out.string(),
                                 (dir / "runs").string(), (dir / "extra.json").string()}),
            1);
  std::ifstream in(out);
  const Json j = Json::parse(in);
  EXPECT_EQ(j["gpus"], 9);
  EXPECT_EQ(j["flagged"][0]["host"], "node09");
}

TEST_F(FleetCommand, UsageErrorsExitTwo) {
  write_node(node());
  std::filesystem::create_directories(dir / "empty");
  testing::internal::CaptureStderr();
  EXPECT_EQ(cli::run_fleet_args({"merge", (dir / "missing").string()}), 2);
  EXPECT_EQ(cli::run_fleet_args({"merge", (dir / "empty").string()}), 2);
  EXPECT_EQ(cli::run_fleet_args({"merge", "--threshold", "0", (dir / "runs").string()}), 2);
  EXPECT_EQ(cli::run_fleet_args({"merge", "--json", "--html", (dir / "runs").string()}), 2);
  EXPECT_EQ(cli::run_fleet_args({"merge"}), 2);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("does not exist"), std::string::npos) << err;
  EXPECT_NE(err.find("no run files"), std::string::npos) << err;
}

}  // namespace
}  // namespace gb
