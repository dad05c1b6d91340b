// tests/unit/test_report_train.cpp: the training section of the printers -- one row per
// configuration (model, precision, batch, images/s, step time, memory, ratio to PyTorch,
// status) -- against stored output in tests/fixtures/golden/, plus the rules behind it.
// The run is built the way `gpubase train` builds it: bench::train_results() of each
// measurement, then diagnose. Figures follow DESIGN.md's H200 PyTorch measurements.
// To accept a deliberate change: GPUBASE_UPDATE_GOLDEN=1 ./unit_tests --gtest_filter='TrainReport*'
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#include "bench/train.hpp"
#include "diagnose/diagnose.hpp"
#include "report/report.hpp"
#include "report/text.hpp"

namespace gb {
namespace {

// Steps around `ms` with a little spread, as events between consecutive steps give them.
bench::TrainMeasurement measured(const std::string& model, const std::string& precision,
                                 double ms, double gib, std::size_t parameters) {
  bench::TrainMeasurement m;
  m.config = {model, precision, 256, false};
  m.warmup = 20;
  m.steps_asked = 50;
  for (int i = 0; i < 50; ++i) m.step_ms.push_back(ms * (1.0 + 0.004 * ((i * 7) % 5 - 2)));
  m.first_loss = model == "resnet50" ? 6.95f : 6.93f;
  m.final_loss = 6.90f;
  m.parameter_count = parameters;
  m.trainer_bytes = static_cast<std::size_t>(gib * 1024 * 1024 * 1024);
  m.used_bytes = m.trainer_bytes + (std::size_t(1) << 30);
  m.total_bytes = std::size_t(143771) << 20;
  m.input_layout = precision == "fp16" || precision == "bf16" ? "NHWC " + precision : "NCHW fp32";
  m.device_name = "NVIDIA H200";
  Telemetry t;
  t.samples = 60;
  t.sm_clock_mhz_min = 1755;
  t.sm_clock_mhz_max = 1980;
  t.sm_clock_mhz_mean = 1830;
  t.power_w_mean = 590;
  t.power_w_max = 640;
  t.power_limit_w = 700;
  t.temp_c_max = 61;
  t.throttle_reasons = 0;
  m.telemetry = t;
  if (precision == "fp16") m.loss_scale = 65536;
  return m;
}

// ResNet-50 in four precisions and MobileNetV2 in FP32 and FP16 on an H200; MobileNetV2 FP16
// diverged (NaN loss) and is a failed configuration.
Run h200_train_run() {
  Run run;
  run.tool_version = "0.1.0";
  run.command = "train";
  run.started_at = "2026-12-03T09:14:00Z";
  run.duration_s = 58.2;
  run.environment = {{"gpu.name", "GPU", "NVIDIA H200"},
                     {"train.steps", "steps per configuration", "20 warm-up + 50 timed"}};
  const std::size_t resnet = 25557032, mobilenet = 3504872;
  std::vector<bench::TrainMeasurement> ms = {
      measured("resnet50", "fp32", 238.1, 38.2, resnet),
      measured("resnet50", "tf32", 112.4, 38.2, resnet),
      measured("resnet50", "fp16", 43.6, 21.1, resnet),
      measured("resnet50", "bf16", 53.9, 21.1, resnet),
      measured("mobilenet_v2", "fp32", 114.0, 30.5, mobilenet),
      measured("mobilenet_v2", "fp16", 28.1, 16.0, mobilenet),
  };
  ms.back().final_loss = std::numeric_limits<float>::quiet_NaN();
  for (const bench::TrainMeasurement& m : ms)
    for (Result& r : bench::train_results(m)) run.results.push_back(std::move(r));
  diagnose::apply_verdicts(run);
  return run;
}

Run no_gpu_train_run() {
  Run run;
  run.tool_version = "0.1.0";
  run.command = "train";
  run.started_at = "2026-12-03T09:14:00Z";
  run.duration_s = 0.1;
  const std::string why = "no NVIDIA driver found (CUDA: driver version is insufficient); "
                          "install the NVIDIA driver or run on a GPU host";
  run.environment = {{"gpu.available", "GPU", "none: " + why}};
  run.gpu.unavailable = why;
  run.results = bench::train_skipped_results(bench::train_configs({}), why);
  diagnose::apply_verdicts(run);
  return run;
}

void expect_golden(const std::string& name, const std::string& actual) {
  const std::string path = std::string(GPUBASE_FIXTURES_DIR) + "/golden/" + name;
  const char* update = std::getenv("GPUBASE_UPDATE_GOLDEN");
  if (update && std::string(update) == "1") {
    std::ofstream(path, std::ios::binary) << actual;
    return;
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << path << " is missing; create it with GPUBASE_UPDATE_GOLDEN=1";
  std::stringstream expected;
  expected << in.rdbuf();
  EXPECT_EQ(expected.str(), actual) << "output differs from " << path
                                    << " (GPUBASE_UPDATE_GOLDEN=1 regenerates it)";
}

report::TerminalOptions plain(bool verbose = false, int width = 100) {
  report::TerminalOptions o;
  o.color = false;
  o.width = width;
  o.verbose = verbose;
  return o;
}

TEST(TrainReport, TerminalH200) {
  expect_golden("report_train_terminal.txt",
                report::render_terminal(h200_train_run(), plain()));
}

TEST(TrainReport, TerminalVerboseH200) {
  expect_golden("report_train_terminal_verbose.txt",
                report::render_terminal(h200_train_run(), plain(true)));
}

TEST(TrainReport, MarkdownH200) {
  expect_golden("report_train_markdown.txt", report::render_markdown(h200_train_run()));
}

TEST(TrainReport, TerminalNoGpu) {
  expect_golden("report_train_no_gpu_terminal.txt",
                report::render_terminal(no_gpu_train_run(), plain()));
}

TEST(TrainReport, AllTrainResultsMakeOneSectionWithOneRowPerConfiguration) {
  const gb::Run run = h200_train_run();
  const auto sections = report::detail::group_sections(run);
  ASSERT_EQ(sections.size(), 1u);
  EXPECT_EQ(sections[0].layout, report::detail::Layout::training);
  const auto rows = report::detail::training_rows(sections[0]);
  ASSERT_EQ(rows.size(), 6u);
  EXPECT_EQ(rows[0].model, "resnet50");
  EXPECT_EQ(rows[0].precision, "FP32");
  EXPECT_EQ(rows[0].batch, "256");
  EXPECT_TRUE(rows[0].images && rows[0].step && rows[0].memory);
  EXPECT_EQ(rows[5].main->status, Status::fail);  // the NaN loss
}

TEST(TrainReport, TheStepColumnDropsItsRangeOnANarrowTerminal) {
  const std::string narrow = report::render_terminal(h200_train_run(), plain(false, 80));
  EXPECT_EQ(narrow.find("(min-max)"), std::string::npos);
  EXPECT_NE(narrow.find("step ms"), std::string::npos);
  std::istringstream lines(narrow);
  for (std::string l; std::getline(lines, l);)
    EXPECT_LE(report::detail::display_width(l), 80u) << l;
}

TEST(TrainReport, ARatioToPytorchOnlyWhereItsFigureIsKnown) {
  const gb::Run run = h200_train_run();
  const auto rows = report::detail::training_rows(report::detail::group_sections(run)[0]);
  // BF16: 256 images / 53.9 ms = 4,750 images/s against PyTorch's 4,727.
  EXPECT_EQ(report::detail::torch_ratio_text(rows[3]), "100 %");
  EXPECT_EQ(report::detail::torch_ratio_text(rows[5]), "");      // failed: no figure
}

// gpubase amp --speed: its rows have their own section and say, per row, whether AMP pays.
TEST(AmpSpeedReport, OwnSectionWithTheVerdictAndBothRatesPerRow) {
  gb::Run run;
  run.command = "amp";
  Result pays = Result::measured("amp.speed.resnet50.b256.fp16.speedup",
                                 "resnet50 b256: fp16 over FP32", "x", {7.12});
  pays.param("images/s", "7420 vs 1043").param("verdict", "pays");
  run.results.push_back(pays);
  const std::string text = report::render_terminal(run, plain());
  EXPECT_NE(text.find("Mixed precision, speed only"), std::string::npos) << text;
  EXPECT_EQ(text.find("same weights and data order"), std::string::npos) << text;
  EXPECT_NE(text.find("pays (7420 vs 1043 images/s)"), std::string::npos) << text;
}

}  // namespace
}  // namespace gb
