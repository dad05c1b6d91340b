// tests/unit/test_bench_baseline.cpp: the stage runner of `gpubase baseline` with stand-in
// stages (order, a failed or skipped stage, Ctrl-C between and inside stages, no GPU), the
// checklist-first report of a baseline run against golden output, the cached synthetic set,
// and the whole command on this machine (the CPU stages run for real; no GPU: exit 3).
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "bench/baseline.hpp"
#include "bench/infer.hpp"
#include "cli/baseline_cmd.hpp"
#include "cli/suite_run.hpp"
#include "core/cancel.hpp"
#include "core/error.hpp"
#include "core/stats.hpp"
#include "diagnose/diagnose.hpp"
#include "watch/background.hpp"
#include "cli/output.hpp"
#include "report/report.hpp"
#include "test_cli_util.hpp"
#include "test_report_fixture.hpp"

namespace {

using gb::bench::BaselineStage;
using gb::bench::ResultSink;
using gb::bench::StageEnd;

namespace fs = std::filesystem;

BaselineStage stage(std::string id, std::function<StageEnd(ResultSink&)> run) {
  return BaselineStage{id, id + " stage", 10, std::move(run)};
}

// A stage that reports one result named after it and notes that it ran.
BaselineStage measuring(const std::string& id, std::vector<std::string>& ran) {
  return stage(id, [id, &ran](ResultSink& sink) {
    ran.push_back(id);
    sink.add(gb::Result::measured(id + ".figure", id, "x", {1.0}));
    return StageEnd{};
  });
}

const gb::Result* find(const std::vector<gb::Result>& results, const std::string& key) {
  for (const gb::Result& r : results)
    if (r.key == key) return &r;
  return nullptr;
}

std::string state_of(const gb::Result& r) { return r.text_param("state").value_or(""); }

struct CancelReset {
  ~CancelReset() { gb::reset_cancel(); }
};

}  // namespace

TEST(BaselineStages, RunInTheGivenOrderAndReportTheirTimes) {
  std::vector<std::string> ran;
  const std::vector<BaselineStage> stages = {measuring("card", ran), measuring("loader", ran),
                                             measuring("train", ran)};
  ResultSink sink;
  std::vector<std::string> started;
  gb::bench::BaselineHooks hooks;
  hooks.on_start = [&](std::size_t i, std::size_t n, const BaselineStage& s) {
    started.push_back(std::to_string(i) + "/" + std::to_string(n) + " " + s.id);
  };
  const auto outcome = gb::bench::run_baseline(stages, sink, hooks);
  sink.end(false);
  EXPECT_EQ(ran, (std::vector<std::string>{"card", "loader", "train"}));
  EXPECT_EQ(started, (std::vector<std::string>{"0/3 card", "1/3 loader", "2/3 train"}));
  ASSERT_EQ(outcome.stages.size(), 3u);
  EXPECT_TRUE(outcome.gpu_found);
  // The stage table comes after the stages' own results, in stage order.
  std::vector<std::string> keys;
  for (const gb::Result& r : sink.results()) keys.push_back(r.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"card.figure", "loader.figure", "train.figure",
                                            "baseline.stage.card.s", "baseline.stage.loader.s",
                                            "baseline.stage.train.s"}));
  const gb::Result* t = find(sink.results(), "baseline.stage.loader.s");
  ASSERT_TRUE(t && t->value);
  EXPECT_GE(*t->value, 0.0);
  EXPECT_EQ(t->unit, "s");
  EXPECT_EQ(state_of(*t), "ran");
  EXPECT_EQ(t->number_param("expected_s"), 10.0);
}

TEST(BaselineStages, GivenTheSetupTimeTheTableAlsoSaysWhatTookTimeOutsideTheStages) {
  std::vector<std::string> ran;
  const std::vector<BaselineStage> stages = {measuring("card", ran), measuring("train", ran)};
  ResultSink sink;
  // A summary that takes a known time after the stages, as the AMP study's results do.
  sink.at_end([](ResultSink&, bool) { std::this_thread::sleep_for(std::chrono::milliseconds(30)); });
  gb::bench::BaselineHooks hooks;
  hooks.setup_s = 2.5;
  gb::bench::run_baseline(stages, sink, hooks);
  sink.end(false);
  std::vector<std::string> keys;
  for (const gb::Result& r : sink.results()) keys.push_back(r.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"card.figure", "train.figure",
                                            "baseline.stage.setup.s", "baseline.stage.card.s",
                                            "baseline.stage.train.s",
                                            "baseline.stage.summaries.s"}));
  const gb::Result* setup = find(sink.results(), "baseline.stage.setup.s");
  ASSERT_TRUE(setup && setup->value);
  EXPECT_EQ(*setup->value, 2.5);
  EXPECT_EQ(state_of(*setup), "outside the stages");
  const gb::Result* summaries = find(sink.results(), "baseline.stage.summaries.s");
  ASSERT_TRUE(summaries && summaries->value);
  EXPECT_GE(*summaries->value, 0.03);
  EXPECT_LT(*summaries->value, 5.0);
}

TEST(BaselineStages, AFailedStageIsReportedAndTheRestStillRun) {
  std::vector<std::string> ran;
  const std::vector<BaselineStage> stages = {
      measuring("card", ran),
      stage("loader",
            [](ResultSink&) -> StageEnd {
              throw gb::Error(gb::ErrorKind::runtime, "decoder crashed on sample 7");
            }),
      stage("train", [](ResultSink&) -> StageEnd { throw std::runtime_error("out of memory"); }),
      measuring("amp", ran)};
  ResultSink sink;
  const auto outcome = gb::bench::run_baseline(stages, sink);
  sink.end(false);
  EXPECT_EQ(ran, (std::vector<std::string>{"card", "amp"}));
  const gb::Result* loader = find(sink.results(), "baseline.stage.loader.s");
  ASSERT_TRUE(loader);
  EXPECT_EQ(loader->status, gb::Status::fail);
  EXPECT_NE(loader->reason.find("decoder crashed on sample 7"), std::string::npos);
  EXPECT_EQ(state_of(*loader), "failed");
  const gb::Result* train = find(sink.results(), "baseline.stage.train.s");
  ASSERT_TRUE(train);
  EXPECT_EQ(train->status, gb::Status::fail);
  EXPECT_NE(train->reason.find("out of memory"), std::string::npos);
  EXPECT_EQ(state_of(*find(sink.results(), "baseline.stage.amp.s")), "ran");
  EXPECT_EQ(outcome.stages[1].state, gb::bench::StageState::failed);
}

TEST(BaselineStages, ASkippedStageKeepsItsReasonAndTheRestRun) {
  std::vector<std::string> ran;
  const std::vector<BaselineStage> stages = {
      stage("amp", [](ResultSink&) { return StageEnd::skipped("Fashion-MNIST not found"); }),
      measuring("train", ran)};
  ResultSink sink;
  gb::bench::run_baseline(stages, sink);
  sink.end(false);
  const gb::Result* amp = find(sink.results(), "baseline.stage.amp.s");
  ASSERT_TRUE(amp);
  EXPECT_EQ(amp->status, gb::Status::skipped);
  EXPECT_EQ(amp->reason, "Fashion-MNIST not found");
  EXPECT_EQ(ran, (std::vector<std::string>{"train"}));
}

TEST(BaselineStages, NoGpuInAStageIsTheRunsNoGpuReasonWhileTheOthersRun) {
  std::vector<std::string> ran;
  const std::vector<BaselineStage> stages = {
      stage("card",
            [](ResultSink&) {
              StageEnd e;
              e.gpu_found = false;
              e.no_gpu_reason = "no NVIDIA driver found";
              return e;
            }),
      stage("train",
            [](ResultSink&) -> StageEnd {
              throw gb::Error(gb::ErrorKind::no_gpu, "no CUDA device");
            }),
      measuring("loader", ran)};
  ResultSink sink;
  const auto outcome = gb::bench::run_baseline(stages, sink);
  sink.end(false);
  EXPECT_FALSE(outcome.gpu_found);
  EXPECT_EQ(outcome.no_gpu_reason, "no NVIDIA driver found");
  EXPECT_EQ(find(sink.results(), "baseline.stage.train.s")->status, gb::Status::skipped);
  EXPECT_EQ(ran, (std::vector<std::string>{"loader"}));
}

TEST(BaselineStages, AUsageErrorIsNotAStageFailure) {
  const std::vector<BaselineStage> stages = {stage("loader", [](ResultSink&) -> StageEnd {
    throw gb::Error(gb::ErrorKind::usage, "--data /nope: no such file or directory");
  })};
  ResultSink sink;
  EXPECT_THROW(gb::bench::run_baseline(stages, sink), gb::Error);
}

TEST(BaselineStages, CtrlCBetweenStagesKeepsWhatWasMeasuredAndNamesTheStagesNotRun) {
  CancelReset reset;
  std::vector<std::string> ran;
  const std::vector<BaselineStage> stages = {
      stage("card",
            [&](ResultSink& sink) {
              ran.push_back("card");
              sink.add(gb::Result::measured("card.figure", "card", "x", {3.0}));
              gb::request_cancel();  // Ctrl-C arrives as the stage ends
              return StageEnd{};
            }),
      measuring("loader", ran), measuring("train", ran)};
  ResultSink sink;
  EXPECT_THROW(gb::bench::run_baseline(stages, sink), gb::Cancelled);
  sink.end(true);
  EXPECT_EQ(ran, (std::vector<std::string>{"card"}));
  ASSERT_TRUE(find(sink.results(), "card.figure"));
  EXPECT_EQ(state_of(*find(sink.results(), "baseline.stage.card.s")), "ran");
  const gb::Result* loader = find(sink.results(), "baseline.stage.loader.s");
  ASSERT_TRUE(loader);
  EXPECT_EQ(loader->status, gb::Status::skipped);
  EXPECT_EQ(state_of(*loader), "not run");
  EXPECT_NE(loader->reason.find("interrupted"), std::string::npos);
  EXPECT_EQ(state_of(*find(sink.results(), "baseline.stage.train.s")), "not run");
}

TEST(BaselineStages, CtrlCInsideAStageKeepsItsPartialResults) {
  CancelReset reset;
  const std::vector<BaselineStage> stages = {stage("train", [](ResultSink& sink) -> StageEnd {
    sink.add(gb::Result::measured("train.partial", "partial", "x", {2.0}));
    gb::request_cancel();
    gb::throw_if_cancelled();
    return StageEnd{};
  })};
  ResultSink sink;
  EXPECT_THROW(gb::bench::run_baseline(stages, sink), gb::Cancelled);
  sink.end(true);
  ASSERT_TRUE(find(sink.results(), "train.partial"));
  const gb::Result* t = find(sink.results(), "baseline.stage.train.s");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->status, gb::Status::skipped);
  EXPECT_EQ(state_of(*t), "interrupted");
}

TEST(BaselineStages, AFactTwoStagesReportIsKeptOnce) {
  const std::vector<BaselineStage> stages = {
      stage("card",
            [](ResultSink& sink) {
              sink.add_fact({"host.cpu_model", "CPU", "first"});
              return StageEnd{};
            }),
      stage("loader", [](ResultSink& sink) {
        sink.add_fact({"host.cpu_model", "CPU", "second"});
        sink.add_fact({"loader.batch", "batch size", "256"});
        return StageEnd{};
      })};
  ResultSink sink;
  gb::bench::run_baseline(stages, sink);
  ASSERT_EQ(sink.facts().size(), 2u);
  EXPECT_EQ(sink.facts()[0].value, "first");
  EXPECT_EQ(sink.facts()[1].key, "loader.batch");
}

// A whole baseline run from stand-in stages that report what the real ones would (the H200
// probe with a degraded link, a starved training run under watch, the AMP figure), through the
// suite runner's diagnosis, printed: the checklist first, five rows, every one measured.
TEST(BaselineReport, ChecklistFirstWithEveryRowMeasured) {
  const gb::Run probe = gb::test::h200_degraded_link_run();
  const gb::Run watched = gb::test::watch_starved_run();
  const std::vector<BaselineStage> stages = {
      stage("card",
            [&](ResultSink& sink) {
              for (const gb::Fact& f : probe.environment) sink.add_fact(f);
              for (const gb::Result& r : probe.results) sink.add(r);
              return StageEnd{};
            }),
      stage("train",
            [&](ResultSink& sink) {
              for (const gb::Fact& f : watched.environment)
                if (f.key.rfind("host.", 0) == 0) sink.add_fact(f);
              for (const gb::Result& r : watched.results) sink.add(r);
              // The in-process sampler's mark: the rows speak of gpubase's own loader.
              sink.add_fact({"watch.target", "watched",
                             "in_process: gpubase's own work and its loader threads"});
              sink.add(gb::Result::measured("train.resnet50.bf16.b256.data_wait_pct",
                                            "ResNet-50 BF16 b256: GPU waiting for data", "%",
                                            {41.5}, false)
                           .param("decode", "cpu"));
              return StageEnd{};
            }),
      stage("amp", [](ResultSink& sink) {
        sink.add(gb::Result::measured("amp.accuracy_loss.pct",
                                      "accuracy lost by mixed precision (worst of FP16, BF16)",
                                      "%", {0.1}, false)
                     .param("seeds", 3.0, "", 0)
                     .param("noise band", 0.21, "points", 2));
        return StageEnd{};
      })};
  gb::cli::SuiteRun suite("baseline");
  ResultSink sink;
  gb::cli::OutputOptions out;
  out.quiet = true;
  gb::Run& run = suite.run_suite(sink, out, [&] {
    gb::bench::run_baseline(stages, sink);
    return gb::cli::SuiteEnd{};
  });
  // Fixed where the real run has a clock.
  run.started_at = "2026-12-04T10:00:00Z";
  run.duration_s = 252.0;
  for (gb::Result& r : run.results)
    if (r.key.rfind("baseline.stage.", 0) == 0) {
      r.value = 1.0;
      r.samples = {1.0};
      r.stats = gb::compute_stats(r.samples);
    }
  // The identity of the machine running the test (host name, launcher) is not the run's.
  std::erase_if(run.environment, [](const gb::Fact& f) { return f.key.rfind("run.", 0) == 0; });
  run.findings = gb::diagnose::diagnose_watch(run);  // they quote the run's duration
  run.checklist = gb::diagnose::build_checklist(run);
  ASSERT_EQ(run.checklist.size(), 5u);
  for (const gb::ChecklistRow& row : run.checklist)
    EXPECT_TRUE(row.measured.has_value()) << row.id << ": " << row.evidence;

  gb::report::TerminalOptions plain;
  plain.color = false;
  plain.width = 100;
  const std::string text = gb::report::render_terminal(run, plain);
  EXPECT_LT(text.find("Baseline checklist"), text.find("Environment"));

  const std::string path = std::string(GPUBASE_FIXTURES_DIR) + "/golden/baseline_terminal.txt";
  const char* update = std::getenv("GPUBASE_UPDATE_GOLDEN");
  if (update && std::string(update) == "1") {
    std::ofstream(path, std::ios::binary) << text;
    return;
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << path << " is missing; create it with GPUBASE_UPDATE_GOLDEN=1";
  std::stringstream expected;
  expected << in.rdbuf();
  EXPECT_EQ(expected.str(), text) << "output differs from " << path;
}

TEST(BaselineSyntheticSet, MadeOnceReusedAndMadeAgainWhenAFileChanged) {
  const fs::path root = fs::temp_directory_path() / ("gb_baseline_set_" + std::to_string(::getpid()));
  fs::remove_all(root);
  const fs::path dir = root / "set";
  std::vector<std::string> notes;
  auto note = [&](const std::string& l) { notes.push_back(l); };
  gb::cli::cached_synthetic_set(dir, 4, 2, 0.2, note);
  ASSERT_TRUE(fs::exists(dir.string() + ".manifest"));
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("making"), std::string::npos);

  gb::cli::cached_synthetic_set(dir, 4, 2, 0.2, note);
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_NE(notes[1].find("using"), std::string::npos);

  // A file truncated behind our back: the set is made again, whole.
  fs::path some_jpeg;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) some_jpeg = e.path();
  fs::resize_file(some_jpeg, 10);
  gb::cli::cached_synthetic_set(dir, 4, 2, 0.2, note);
  ASSERT_GE(notes.size(), 4u);
  EXPECT_NE(notes[2].find("changed"), std::string::npos);
  EXPECT_GT(fs::file_size(some_jpeg), 10u);
  fs::remove_all(root);
}

// The whole command on a machine without a GPU: the card stage reports the host, the loader's
// CPU sweep runs for real on a tiny set, the training and AMP stages are skipped with the
// reason, the GPU and CPU rows say why, and the run exits 3.
TEST(BaselineCommand, WithoutAGpuTheCpuStagesRunAndTheRunExits3) {
  std::string no_gpu;
  if (gb::bench::cuda_device_count(no_gpu) > 0) GTEST_SKIP() << "this machine has a GPU";
  const fs::path root = fs::temp_directory_path() / ("gb_baseline_cmd_" + std::to_string(::getpid()));
  fs::remove_all(root);
  const fs::path set = gb::test::tiny_jpeg_set(root / "set");
  const fs::path json = root / "run.json";
  const auto o = gb::test::run_gpubase({"baseline", "--quick", "--data", set.string(),
                                        "--no-save", "--json", "-o", json.string()});
  EXPECT_EQ(o.code, 3) << o.err;
  EXPECT_NE(o.err.find("baseline [2/5] input pipeline"), std::string::npos) << o.err;
  const gb::Run run = gb::cli::load_run(json);
  const gb::Result* knee = find(run.results, "loader.cpu.knee.workers");
  ASSERT_TRUE(knee && knee->value) << "the loader's CPU sweep ran";
  EXPECT_EQ(state_of(*find(run.results, "baseline.stage.loader.s")), "ran");
  EXPECT_EQ(find(run.results, "baseline.stage.train.s")->status, gb::Status::skipped);
  for (const gb::ChecklistRow& row : run.checklist) {
    if (row.id == "gpu_util" || row.id == "cpu_util" || row.id == "data_loading") {
      EXPECT_EQ(row.status, gb::Status::skipped);
      EXPECT_NE(row.evidence.find("no GPU"), std::string::npos) << row.evidence;
    }
  }
  fs::remove_all(root);
}

// Keeps this thread on a core for `d`: the work the in-process watch sees.
static void busy_for(std::chrono::milliseconds d) {
  const auto t0 = std::chrono::steady_clock::now();
  volatile double x = 0;
  while (std::chrono::steady_clock::now() - t0 < d) x = x + 1;
}

// The in-process sampler the training stage runs: CPU figures from this process's own
// /proc, the GPU figures skipped with the reason where NVML is missing.
TEST(BaselineBackgroundWatch, SamplesThisProcessUntilStopped) {
  gb::watch::BackgroundWatch w({.device = 0, .interval_s = 0.2});
  w.start();
  busy_for(std::chrono::milliseconds(900));
  const gb::watch::WatchOutcome o = w.stop();
  const gb::Result* core = find(o.results, "watch.cpu.busiest_core.pct");
  ASSERT_TRUE(core && core->value);
  EXPECT_GT(*core->value, 0.0);
  EXPECT_GE(o.duration_s, 0.4);
  const gb::Result* gpu = find(o.results, "watch.gpu.util.pct");
  ASSERT_TRUE(gpu);
  if (!o.gpu_available) {
    EXPECT_EQ(gpu->status, gb::Status::skipped);
    EXPECT_FALSE(gpu->reason.empty());
  }
}

// In-process, the sampler's own CPU is its thread's: a busy loop on the main thread is the
// watched work, not the watch's cost (the process's CPU clock would count it).
TEST(BaselineBackgroundWatch, ItsOwnCpuIsItsThreadsNotTheProcesss) {
  gb::watch::BackgroundWatch w({.device = 0, .interval_s = 0.2});
  w.start();
  busy_for(std::chrono::milliseconds(1000));
  const gb::watch::WatchOutcome o = w.stop();
  const gb::Result* job = find(o.results, "watch.job.cpu.pct");
  ASSERT_TRUE(job && job->value);
  EXPECT_GT(*job->value, 50.0) << "the busy loop is the job's";
  const gb::Result* own = find(o.results, "watch.sampler.cpu.pct");
  ASSERT_TRUE(own && own->value);
  EXPECT_GE(*own->value, 0.0);
  EXPECT_LT(*own->value, 0.5 * *job->value) << "the watch thread alone";
}

// The training stage marks its timed steps: the figures cover them, not what ran before.
TEST(BaselineBackgroundWatch, JudgesFromTheMarkOn) {
  gb::watch::BackgroundWatch w({.device = 0, .interval_s = 0.1});
  w.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // "building": idle
  w.judge_from_now();
  busy_for(std::chrono::milliseconds(800));
  const gb::watch::WatchOutcome o = w.stop();
  const gb::Result* startup = find(o.results, "watch.startup.s");
  ASSERT_TRUE(startup && startup->value);
  EXPECT_GE(*startup->value, 0.45);  // the mark, in seconds from start()
  EXPECT_LT(*startup->value, 2.0);
  const gb::Result* window = find(o.results, "watch.window.s");
  ASSERT_TRUE(window && window->value);
  EXPECT_LE(*window->value, o.duration_s - *startup->value + 0.15)
      << "the idle half second is not judged";
  EXPECT_NE(window->text_param("over").value_or("").find("the measured work alone"),
            std::string::npos);
  const gb::Result* core = find(o.results, "watch.cpu.busiest_core.pct");
  ASSERT_TRUE(core && core->value);
  EXPECT_GT(*core->value, 25.0) << "the busy loop, not the idle start";
}

// `baseline -- CMD` without a GPU: the card check reports the host, the job runs under watch
// (its CPU figures measured), the AMP and data rows say what would measure them, exit 3.
TEST(BaselineCommand, AJobAfterDashDashIsWatchedAndItsRowsExplained) {
  std::string no_gpu;
  if (gb::bench::cuda_device_count(no_gpu) > 0) GTEST_SKIP() << "this machine has a GPU";
  const fs::path root = fs::temp_directory_path() / ("gb_baseline_job_" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root);
  const fs::path json = root / "run.json";
  const auto o = gb::test::run_gpubase({"baseline", "--no-save", "--json", "-o", json.string(),
                                        "--", "sh", "-c", "sleep 1.5"});
  EXPECT_EQ(o.code, 3) << o.err;
  const gb::Run run = gb::cli::load_run(json);
  EXPECT_EQ(state_of(*find(run.results, "baseline.stage.job.s")), "ran");
  const gb::Result* core = find(run.results, "watch.cpu.busiest_core.pct");
  ASSERT_TRUE(core && core->value);
  for (const gb::ChecklistRow& row : run.checklist) {
    if (row.id == "amp_accuracy") {
      EXPECT_NE(row.evidence.find("gpubase amp"), std::string::npos);
    }
    if (row.id == "data_loading") {
      EXPECT_NE(row.evidence.find("not measurable from outside"), std::string::npos);
    }
  }
  fs::remove_all(root);
}

TEST(BaselineCommand, AFailingJobGivesItsExitCode) {
  const fs::path root = fs::temp_directory_path() / ("gb_baseline_fail_" + std::to_string(::getpid()));
  fs::create_directories(root);
  const auto o = gb::test::run_gpubase({"baseline", "--no-save", "-q", "-o",
                                        (root / "out.txt").string(), "--", "sh", "-c", "exit 7"});
  EXPECT_EQ(o.code, 7) << o.err;
  fs::remove_all(root);
}

// Another process keeps the GPU busy (the fake NVML's healthy card: 97-99 % utilization): the
// run refuses before measuring anything.
TEST(BaselineCommand, RefusesWhileAnotherProcessUsesTheGpu) {
  setenv("GPUBASE_NVML_LIBRARY", GPUBASE_FAKE_NVML_PATH, 1);
  setenv("GPUBASE_FAKE_NVML_SCENARIO", "healthy", 1);
  const auto o = gb::test::run_gpubase({"baseline", "--no-save", "--", "sh", "-c", "exit 0"});
  unsetenv("GPUBASE_NVML_LIBRARY");
  unsetenv("GPUBASE_FAKE_NVML_SCENARIO");
  EXPECT_EQ(o.code, 4) << o.err;
  EXPECT_NE(o.err.find("is in use by"), std::string::npos) << o.err;
}

TEST(BaselineInfer, PassTimesBecomeImagesPerSecondAtTheMedian) {
  gb::bench::InferMeasurement m{"resnet50", "bf16", 64};
  m.pass_ms = {1.0, 2.0, 4.0};
  const gb::Result r = gb::bench::infer_result(m);
  EXPECT_EQ(r.key, "infer.resnet50.bf16.b64.images_per_s");
  ASSERT_TRUE(r.value);
  EXPECT_DOUBLE_EQ(*r.value, 64 * 1e3 / 2.0);
  EXPECT_EQ(r.number_param("passes"), 3.0);
  EXPECT_EQ(r.text_param("precision"), "bf16");
}

TEST(BaselineInfer, AnEngineErrorFailsTheConfigurationWithItsMessage) {
  gb::bench::InferMeasurement m{"resnet50", "fp32", 64};
  m.error = "out of device memory";
  const gb::Result r = gb::bench::infer_result(m);
  EXPECT_FALSE(r.value);
  EXPECT_EQ(r.status, gb::Status::fail);
  EXPECT_EQ(r.reason, "out of device memory");
}

TEST(BaselineInfer, WithoutAGpuEveryPrecisionIsSkippedWithTheReason) {
  std::string no_gpu;
  if (gb::bench::cuda_device_count(no_gpu) > 0) GTEST_SKIP() << "this machine has a GPU";
  ResultSink sink;
  const auto o = gb::bench::run_infer_bench({}, sink);
  EXPECT_FALSE(o.gpu_found);
  ASSERT_EQ(sink.results().size(), 3u);
  for (const gb::Result& r : sink.results()) {
    EXPECT_EQ(r.status, gb::Status::skipped);
    EXPECT_EQ(r.reason, o.no_gpu_reason);
  }
}

TEST(BaselineCommand, AJobsCudaActivityDataWaitFillsTheDataRow) {
  gb::Run run;
  run.checklist = gb::diagnose::build_checklist(run);  // every row skipped: nothing measured
  gb::Run with = run;
  gb::cli::explain_job_rows(run);
  for (const gb::ChecklistRow& row : run.checklist)
    if (row.id == "data_loading") {
      EXPECT_EQ(row.status, gb::Status::skipped);
      EXPECT_NE(row.evidence.find("not measurable from outside"), std::string::npos);
    }
  with.results.push_back(gb::Result::measured("watch.cuda.data_wait.pct",
                                              "GPU idle waiting for data", "%", {31.0}, false));
  gb::cli::explain_job_rows(with);
  for (const gb::ChecklistRow& row : with.checklist)
    if (row.id == "data_loading") {
      EXPECT_EQ(row.status, gb::Status::fail);  // above the 25 % warn limit
      EXPECT_EQ(row.measured, "31 %");
      EXPECT_NE(row.evidence.find("watch.cuda.data_wait.pct"), std::string::npos);
      EXPECT_FALSE(row.advice.empty());
    }
}
