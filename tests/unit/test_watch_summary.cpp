// test_watch_summary.cpp: the running aggregates behind the watch.* results, bounded memory
// over a day of samples, and the series/live-view text.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "watch/gpu.hpp"
#include "watch/live_view.hpp"
#include "watch/series_io.hpp"
#include "watch/steady_window.hpp"
#include "watch/summary.hpp"

namespace gb::watch {
namespace {

const Result* find(const std::vector<Result>& results, const std::string& key) {
  for (const Result& r : results)
    if (r.key == key) return &r;
  return nullptr;
}

WatchSample sample(double t, double gpu_util, double busiest_core, double job_cpu) {
  WatchSample s;
  s.t_s = t;
  s.interval_s = 1.0;
  s.gpu.util_pct = gpu_util;
  s.gpu.power_w = 500;
  s.gpu.throttle_reasons = 0x4;
  s.cpu.mean_core_pct = busiest_core / 4;
  s.cpu.busiest_core_pct = busiest_core;
  s.cpu.busiest_core = 3;
  s.cpu.core_busy_pct = {{0, 10}, {1, 10}, {2, 10}, {3, busiest_core}};
  s.job.alive = true;
  s.job.cpu_pct = job_cpu;
  s.job.processes = 2;
  s.job.active_processes = 1;
  s.job.involuntary_cs_per_s = 40;
  s.job.processes_detail = {{101, "pt_data_worker", job_cpu - 5, 1, 10, 40, 0.5},
                            {100, "python", 5, 12, 100, 0, 2.0}};
  s.disk.devices = {{"nvme0n1", 20, 0.3, 0.9, 0.1, 500, 10}, {"sda", 2, 1.0, 1.0, 0.0, 1, 1}};
  s.disk.read_mbps = 50;
  return s;
}

TEST(WatchAggregate, TimeWeightedMeanMinMax) {
  Aggregate a;
  a.add(10, 1.0);
  a.add(40, 3.0);
  a.add(std::nullopt, 5.0);  // missing values do not count as 0
  EXPECT_DOUBLE_EQ(*a.mean(), 32.5);
  EXPECT_DOUBLE_EQ(*a.minimum(), 10);
  EXPECT_DOUBLE_EQ(*a.maximum(), 40);
  EXPECT_FALSE(Aggregate{}.mean().has_value());
}

TEST(WatchHistogram, QuantileAndShareBelow) {
  PercentHistogram h;
  for (int i = 0; i < 90; ++i) h.add(99, 1.0);
  for (int i = 0; i < 10; ++i) h.add(40, 1.0);
  EXPECT_DOUBLE_EQ(*h.quantile(0.05), 40.0);
  EXPECT_DOUBLE_EQ(*h.quantile(0.5), 99.0);
  EXPECT_NEAR(*h.share_below(95), 10.0, 1e-9);
  EXPECT_FALSE(PercentHistogram{}.quantile(0.1).has_value());
}

TEST(WatchSeries, StaysBoundedAndKeepsTheTimeWeightedMean) {
  DownsampledSeries s(64);
  double sum = 0;
  const int n = 86'400;  // a day at 1 s
  for (int i = 0; i < n; ++i) {
    const double v = (i % 100 < 30) ? 20.0 : 90.0;
    sum += v;
    s.add(i + 1.0, 1.0, v);
  }
  EXPECT_LE(s.size(), 64u);
  EXPECT_GE(s.size(), 32u);
  // Each point carries its duration, so the mean of the whole day survives the merging.
  const auto values = s.values();
  const auto times = s.times();
  double weighted = 0, prev = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    weighted += values[i] * (times[i] - prev);
    prev = times[i];
  }
  EXPECT_NEAR(weighted / prev, sum / n, 0.5);
  // The newest point is still at full resolution.
  EXPECT_DOUBLE_EQ(times.back(), n);
}

TEST(WatchSummary, ResultsFromSamples) {
  WatchSummary summary;
  for (int i = 1; i <= 5; ++i) summary.add(sample(i, 30, 50, 100));  // the warm-up, left out
  for (int i = 1; i <= 10; ++i) summary.add(sample(5 + i, i <= 9 ? 40 : 99, 98, 100));
  SummaryContext ctx;
  ctx.online_cores = 4;
  ctx.gpm_unavailable_reason = "this GPU has no GPM counters";
  ctx.perf_unavailable_reason = "perf counters turned off (--no-perf)";
  const auto results = summary.results(ctx);

  const Result* util = find(results, "watch.gpu.util.pct");
  ASSERT_NE(util, nullptr);
  EXPECT_NEAR(*util->value, (9 * 40 + 99) / 10.0, 1e-9);
  EXPECT_EQ(util->samples.size(), 10u);
  ASSERT_TRUE(util->telemetry.has_value());
  EXPECT_EQ(util->telemetry->throttle_reasons, 0x4u);
  EXPECT_DOUBLE_EQ(*find(results, "watch.gpu.util.p10.pct")->value, 40.0);
  EXPECT_NEAR(*find(results, "watch.gpu.util.below95.share.pct")->value, 90.0, 1e-9);

  EXPECT_DOUBLE_EQ(*find(results, "watch.cpu.busiest_core.pct")->value, 98.0);
  EXPECT_EQ(*find(results, "watch.cpu.busiest_core.pct")->text_param("core"),
            "cpu3 (busiest in 10 of 10 intervals)");
  EXPECT_DOUBLE_EQ(*find(results, "watch.cpu.hottest_core.pct")->value, 98.0);
  EXPECT_DOUBLE_EQ(*find(results, "watch.host.cores")->value, 4.0);

  const Result* top = find(results, "watch.job.busiest_process.cpu.pct");
  ASSERT_NE(top, nullptr);
  EXPECT_DOUBLE_EQ(*top->value, 95.0);
  EXPECT_EQ(*top->text_param("comm"), "pt_data_worker");
  EXPECT_EQ(*top->text_param("pid"), "101");
  EXPECT_DOUBLE_EQ(*find(results, "watch.job.involuntary_cs_per_process.per_s")->value, 40.0);

  const Result* disk = find(results, "watch.disk.util.pct");
  EXPECT_DOUBLE_EQ(*disk->value, 20.0);
  EXPECT_EQ(*disk->text_param("device"), "nvme0n1");
  EXPECT_DOUBLE_EQ(*find(results, "watch.disk.await.ms")->value, 0.3);

  // Missing figures are skipped with the reason, never 0.
  const Result* tensor = find(results, "watch.gpu.tensor_active.pct");
  EXPECT_EQ(tensor->status, Status::skipped);
  EXPECT_NE(tensor->reason.find("GPM"), std::string::npos);
  const Result* ipc = find(results, "watch.perf.ipc");
  EXPECT_EQ(ipc->status, Status::skipped);
  EXPECT_EQ(ipc->reason, "perf counters turned off (--no-perf)");
}

TEST(WatchSummary, NoGpuSaysWhy) {
  WatchSummary summary;
  WatchSample s = sample(1, 0, 50, 50);
  s.gpu = GpuInterval{};
  summary.add(s);
  SummaryContext ctx;
  ctx.gpu_unavailable_reason = "no NVIDIA driver/GPU found";
  const auto results = summary.results(ctx);
  const Result* util = find(results, "watch.gpu.util.pct");
  EXPECT_EQ(util->status, Status::skipped);
  EXPECT_EQ(util->reason, "no NVIDIA driver/GPU found");
  EXPECT_TRUE(find(results, "watch.cpu.busiest_core.pct")->value.has_value());
}

TEST(WatchSummary, MemoryStaysBoundedOverADayOfManyShortLivedProcesses) {
  WatchSummary summary(256);
  for (int i = 1; i <= 86'400; ++i) {
    WatchSample s = sample(i, 90, 50, 50);
    s.job.processes_detail.front().pid = 1000 + i;  // a new worker every second
    summary.add(s);
  }
  const auto results = summary.results(SummaryContext{});
  EXPECT_LE(find(results, "watch.gpu.util.pct")->samples.size(), 256u);
  EXPECT_DOUBLE_EQ(*find(results, "watch.samples")->value, 86'400.0 - kWarmupS);
}

TEST(WatchSummary, FiguresDescribeTheSteadyStateNotTheStartUpOrWarmUp) {
  WatchSummary summary;
  int t = 0;
  for (int i = 0; i < 10; ++i) summary.add(sample(++t, 0, 100, 100));   // imports, dataset
  for (int i = 0; i < 5; ++i) summary.add(sample(++t, 30, 100, 100));   // warm-up: autotuning
  for (int i = 0; i < 15; ++i) summary.add(sample(++t, 80, 60, 300));   // training
  summary.add(sample(++t, 0, 60, 300));                                  // a pause inside
  for (int i = 0; i < 9; ++i) summary.add(sample(++t, 80, 60, 300));
  for (int i = 0; i < 5; ++i) summary.add(sample(++t, 0, 100, 100));    // shutdown
  const auto results = summary.results(SummaryContext{});
  EXPECT_NEAR(*find(results, "watch.gpu.util.pct")->value, 24 * 80.0 / 25, 1e-9);
  EXPECT_DOUBLE_EQ(*find(results, "watch.window.s")->value, 25.0);
  EXPECT_DOUBLE_EQ(*find(results, "watch.startup.s")->value, 10.0);
  EXPECT_DOUBLE_EQ(*find(results, "watch.warmup.s")->value, 5.0);
  EXPECT_DOUBLE_EQ(*find(results, "watch.duration.s")->value, 45.0);
  EXPECT_NEAR(*find(results, "watch.window.gpu_util_run.pct")->value,
              (5 * 30.0 + 24 * 80.0) / 45, 1e-9);
  EXPECT_DOUBLE_EQ(*find(results, "watch.cpu.busiest_core.pct")->value, 60.0);
  const std::string over = *find(results, "watch.window.s")->text_param("over");
  EXPECT_NE(over.find("judged over 00:15-00:40, 25 of 45 s"), std::string::npos) << over;
  EXPECT_NE(over.find("start-up before the first interval with the GPU >= 5 % busy (00:10)"),
            std::string::npos)
      << over;
  EXPECT_NE(over.find("5-s warm-up excluded"), std::string::npos) << over;
}

TEST(WatchSummary, TheFirstKernelStartsTheWindowEvenWithTheGpuBarelyBusy) {
  // A job whose GPU never reaches 5 % in NVML's eyes (one sample in ten) but whose kernels the
  // CUDA-activity library saw from 00:08 on: its steady state starts at 00:13, not never.
  WatchSummary summary;
  int t = 0;
  for (int i = 0; i < 8; ++i) summary.add(sample(++t, 0, 100, 100));
  for (int i = 0; i < 30; ++i) {
    WatchSample s = sample(++t, i % 10 == 0 ? 3 : 0, 40, 50);
    s.cuda.kernels_per_s = 200;
    // Known one interval late, as the records arrive.
    if (i >= 1) s.cuda.since_first_kernel_s = t - 8.0;
    summary.add(s);
  }
  const auto results = summary.results(SummaryContext{});
  EXPECT_DOUBLE_EQ(*find(results, "watch.startup.s")->value, 8.0);
  EXPECT_DOUBLE_EQ(*find(results, "watch.warmup.s")->value, 5.0);
  EXPECT_DOUBLE_EQ(*find(results, "watch.window.s")->value, 25.0);  // 00:13-00:38
  EXPECT_NE(find(results, "watch.window.s")->text_param("over")->find("the job's first kernel"),
            std::string::npos);
}

TEST(WatchSummary, ATooShortSteadyStateKeepsTheWarmUp) {
  WatchSummary summary;
  int t = 0;
  for (int i = 0; i < 10; ++i) summary.add(sample(++t, 0, 100, 100));
  for (int i = 0; i < 8; ++i) summary.add(sample(++t, 80, 60, 300));  // 3 s after the warm-up
  const auto results = summary.results(SummaryContext{});
  EXPECT_DOUBLE_EQ(*find(results, "watch.window.s")->value, 8.0);
  EXPECT_DOUBLE_EQ(*find(results, "watch.warmup.s")->value, 0.0);
  EXPECT_NE(find(results, "watch.window.s")->text_param("over")->find("too short"),
            std::string::npos);
}

TEST(WatchSummary, AMarkedStartJudgesTheMeasuredWorkAlone) {
  // gpubase's own training stage: building the model and autotuning its convolutions keep the
  // GPU busy and one core pegged for 20 s; the timed steps that follow are what the rows judge.
  WatchSummary summary;
  int t = 0;
  for (int i = 0; i < 10; ++i) summary.add(sample(++t, 0, 100, 100));  // build
  for (int i = 0; i < 10; ++i) summary.add(sample(++t, 90, 100, 100));  // autotuning, warm-up
  summary.judge_from(20.5);  // inside the sample that ends at 00:21: that one is not judged
  for (int i = 0; i < 11; ++i) summary.add(sample(++t, 97, 60, 400));  // timed steps
  const auto results = summary.results(SummaryContext{});
  EXPECT_DOUBLE_EQ(*find(results, "watch.gpu.util.pct")->value, 97.0);
  EXPECT_DOUBLE_EQ(*find(results, "watch.cpu.busiest_core.pct")->value, 60.0);
  EXPECT_DOUBLE_EQ(*find(results, "watch.window.s")->value, 10.0);  // 00:21-00:31
  EXPECT_DOUBLE_EQ(*find(results, "watch.startup.s")->value, 20.5);
  EXPECT_DOUBLE_EQ(*find(results, "watch.warmup.s")->value, 0.0);
  EXPECT_DOUBLE_EQ(*find(results, "watch.duration.s")->value, 31.0);
  const std::string over = *find(results, "watch.window.s")->text_param("over");
  EXPECT_NE(over.find("judged over 00:21-00:31, 10 of 31 s: the measured work alone"),
            std::string::npos)
      << over;
  summary.judge_from(25);  // the first mark counts
  EXPECT_DOUBLE_EQ(*find(summary.results(SummaryContext{}), "watch.window.s")->value, 10.0);
}

TEST(WatchSummary, AMarkWithNoSampleAfterItFallsBackToTheSteadyState) {
  WatchSummary summary;
  int t = 0;
  for (int i = 0; i < 10; ++i) summary.add(sample(++t, 0, 100, 100));
  for (int i = 0; i < 15; ++i) summary.add(sample(++t, 80, 60, 300));
  summary.judge_from(40);  // the work ended before a sample of it was taken
  const auto results = summary.results(SummaryContext{});
  EXPECT_DOUBLE_EQ(*find(results, "watch.warmup.s")->value, 5.0);
  EXPECT_DOUBLE_EQ(*find(results, "watch.window.s")->value, 10.0);
}

TEST(WatchSummary, AStarvedJobKeepsItsWholeWorkingTime) {
  // The H200 starved job: one busy interval (the first step, cuDNN autotuning), then the GPU
  // only flickers (1-3 %) between batches. All of that after the warm-up is its working time.
  WatchSummary summary;
  int t = 0;
  for (int i = 0; i < 10; ++i) summary.add(sample(++t, 0, 100, 100));
  summary.add(sample(++t, 14, 80, 100));
  for (int i = 0; i < 30; ++i) summary.add(sample(++t, i % 2 ? 2.5 : 0, 80, 100));
  summary.add(sample(++t, 0, 10, 10));  // shutdown
  const auto results = summary.results(SummaryContext{});
  // 00:15 (first busy at 00:10 + 5 s) to the last flicker at 00:41; 13 flickers of 2.5 %.
  EXPECT_DOUBLE_EQ(*find(results, "watch.window.s")->value, 26.0);
  EXPECT_NEAR(*find(results, "watch.gpu.util.pct")->value, 13 * 2.5 / 26.0, 1e-9);
}

TEST(WatchSummary, AnIdleGpuRunIsSummarisedWhole) {
  WatchSummary summary;
  for (int i = 1; i <= 10; ++i) summary.add(sample(i, 1, 100, 100));
  const auto results = summary.results(SummaryContext{});
  EXPECT_DOUBLE_EQ(*find(results, "watch.gpu.util.pct")->value, 1.0);
  EXPECT_DOUBLE_EQ(*find(results, "watch.window.s")->value, 10.0);
  EXPECT_DOUBLE_EQ(*find(results, "watch.startup.s")->value, 0.0);
}

TEST(WatchSummary, ALongIdleTailCountsAsTheJobGoingIdle) {
  WatchSummary summary;
  int t = 0;
  for (int i = 0; i < 10; ++i) summary.add(sample(++t, 90, 60, 100));
  for (int i = 0; i < 100; ++i) summary.add(sample(++t, 0, 60, 100));
  const auto results = summary.results(SummaryContext{});
  // All 100 idle seconds count, not only the first 60: 5 s at 90 % after the warm-up, then idle.
  EXPECT_DOUBLE_EQ(*find(results, "watch.window.s")->value, 105.0);
  EXPECT_NEAR(*find(results, "watch.gpu.util.pct")->value, 5 * 90 / 105.0, 1e-9);
}

TEST(WatchGpu, TheNewestDriverSampleWaitsForTheNextInterval) {
  std::uint64_t last = 0;
  const auto used = settled_samples({{100, 10}, {200, 20}, {300, 30}}, last);
  ASSERT_EQ(used.size(), 2u);
  EXPECT_EQ(last, 200u);
  EXPECT_TRUE(settled_samples({{300, 30}}, last).empty());
  EXPECT_EQ(last, 200u);
  EXPECT_TRUE(settled_samples({}, last).empty());
}

TEST(WatchGpu, DriverSamplesAreWeightedByTheTimeTheyStandFor) {
  // 100 % for 0.1 s, then 0 % for 0.9 s: 10 %, not the 50 % of a plain mean.
  EXPECT_NEAR(*time_weighted_mean({{1'100'000, 100}, {2'000'000, 0}}, 1'000'000), 10.0, 1e-9);
  // Without an earlier timestamp the first sample takes the gap to the next one.
  EXPECT_NEAR(*time_weighted_mean({{100, 30}, {200, 60}}, 0), 45.0, 1e-9);
  EXPECT_FALSE(time_weighted_mean({}, 0).has_value());
}

TEST(WatchSeriesIo, CsvRowsMatchTheHeaderAndLeaveMissingCellsEmpty) {
  WatchSample s = sample(2.5, 41, 97, 99);
  s.gpu.tensor_active_pct.reset();
  const std::string header = csv_header();
  const std::string row = csv_row(s);
  const auto count = [](const std::string& t) { return std::count(t.begin(), t.end(), ','); };
  EXPECT_EQ(count(header), count(row));
  EXPECT_EQ(row.rfind("2.5,1,41,", 0), 0u) << row;
  EXPECT_NE(row.find(",pt_data_worker"), std::string::npos);
}

TEST(WatchSeriesIo, JsonLinesCarryCoresAndTopProcesses) {
  WatchSample s = sample(1, 41, 97, 99);
  const auto j = nlohmann::json::parse(jsonl_line(s));
  EXPECT_EQ(j["gpu_util_pct"], 41);
  EXPECT_TRUE(j["gpu_tensor_active_pct"].is_null());
  EXPECT_EQ(j["cpu_cores_busy_pct"].size(), 4u);
  EXPECT_EQ(j["job_top_processes"][0]["comm"], "pt_data_worker");
  EXPECT_EQ(series_format_for("x.csv"), SeriesFormat::csv);
  EXPECT_EQ(series_format_for("x.jsonl"), SeriesFormat::jsonl);
}

TEST(WatchLiveView, LineAndPanelShowTheFiguresAndDashesForMissing) {
  WatchSample s = sample(12, 41, 99, 99);
  const std::string line = format_line(s);
  EXPECT_NE(line.find("gpu  41%"), std::string::npos) << line;
  EXPECT_NE(line.find("max  99%"), std::string::npos) << line;
  EXPECT_NE(line.find("top pt_data_worker 94%"), std::string::npos) << line;
  s.gpu = GpuInterval{};
  EXPECT_NE(format_line(s).find("gpu    - mem    -"), std::string::npos) << format_line(s);

  const auto panel = format_panel(sample(12, 41, 99, 99), PanelContext{"python train.py", 120, 12});
  ASSERT_EQ(panel.size(), 4u);
  EXPECT_NE(panel[0].find("python train.py"), std::string::npos);
  EXPECT_NE(panel[1].find("util  41%"), std::string::npos) << panel[1];
  EXPECT_NE(panel[3].find("pt_data_worker"), std::string::npos) << panel[3];
  EXPECT_EQ(core_bars({{0, 0}, {1, 50}, {2, 100}}, 8), " ▄█");
}

}  // namespace
}  // namespace gb::watch
