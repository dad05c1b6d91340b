// tests/unit/test_diagnose_watch.cpp: what diagnose_watch() finds in a watched job, one
// behaviour per test: each rule firing with its measured evidence, staying silent at its
// boundary and on figures the watch could not measure, the rules not contradicting each other,
// and the checklist naming the cause. Runs start from two jobs on an H200 host with 16 cores:
// a well-fed one (GPU busy 98 %) and a starved one (GPU busy 38 %, one DataLoader worker
// pegging a core), and change only what a test is about. Thresholds: docs/thresholds.md.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "diagnose/diagnose.hpp"
#include "diagnose/thresholds.hpp"

namespace {

using Figures = std::vector<std::pair<std::string, double>>;

std::string unit_of(const std::string& key) {
  return key.size() > 4 && key.compare(key.size() - 4, 4, ".pct") == 0 ? "%" : "";
}

void set(gb::Run& run, const std::string& key, double value) {
  for (gb::Result& r : run.results)
    if (r.key == key) {
      auto params = std::move(r.params);  // pid, comm, device stay with the figure
      r = gb::Result::measured(key, key, unit_of(key), {value});
      r.params = std::move(params);
      return;
    }
  run.results.push_back(gb::Result::measured(key, key, unit_of(key), {value}));
}

void skip(gb::Run& run, const std::string& key, const std::string& reason) {
  for (gb::Result& r : run.results)
    if (r.key == key) {
      r = gb::Result::skipped(key, key, "", reason);
      return;
    }
  run.results.push_back(gb::Result::skipped(key, key, "", reason));
}

void param(gb::Run& run, const std::string& key, const std::string& name,
           const std::string& value) {
  for (gb::Result& r : run.results) {
    if (r.key != key) continue;
    for (gb::Param& p : r.params)
      if (p.name == name) {
        p.text = value;
        return;
      }
    r.param(name, value);
  }
}

gb::Run watch_run(const Figures& figures) {
  gb::Run run;
  run.command = "watch";
  run.duration_s = 300;
  for (const auto& [key, value] : figures) set(run, key, value);
  return run;
}

// GPU busy 98 %, tensor cores working, 8 loader workers on 16 cores with room to spare.
gb::Run well_fed() {
  gb::Run run = watch_run({
      {"watch.gpu.util.pct", 98},
      {"watch.gpu.util.p10.pct", 96},
      {"watch.gpu.util.below95.share.pct", 4},
      {"watch.gpu.sm_active.pct", 92},
      {"watch.gpu.tensor_active.pct", 85},
      {"watch.gpu.job.sm.pct", 97},
      {"watch.gpu.other_processes", 0},
      {"watch.host.cores", 16},
      {"watch.cpu.mean_core.pct", 45},
      {"watch.cpu.busiest_core.pct", 70},
      {"watch.cpu.iowait.pct", 0.5},
      {"watch.cpu.steal.pct", 0},
      {"watch.cpu.run_queue", 8},
      {"watch.job.cpu.pct", 700},
      {"watch.job.processes", 9},
      {"watch.job.active_processes", 8},
      {"watch.job.saturated_processes", 0},
      {"watch.job.threads", 120},
      {"watch.job.busiest_process.cpu.pct", 85},
      {"watch.job.involuntary_cs.per_s", 400},
      {"watch.job.involuntary_cs_per_process.per_s", 50},
      {"watch.mem.available.pct", 60},
      {"watch.mem.available.gib", 150},
      {"watch.disk.util.pct", 20},
      {"watch.disk.await.ms", 0.3},
      {"watch.samples", 300},
      {"watch.interval.s", 1},
  });
  param(run, "watch.job.busiest_process.cpu.pct", "pid", "201");
  param(run, "watch.job.busiest_process.cpu.pct", "comm", "pt_data_worker");
  param(run, "watch.disk.util.pct", "device", "nvme0n1");
  return run;
}

// GPU busy 38 % while one DataLoader worker (pid 123) pegs a core and 15 of 16 cores idle.
gb::Run starved_one_worker() {
  gb::Run run = well_fed();
  set(run, "watch.gpu.util.pct", 38);
  set(run, "watch.gpu.util.p10.pct", 30);
  set(run, "watch.gpu.util.below95.share.pct", 99);
  set(run, "watch.gpu.sm_active.pct", 35);
  set(run, "watch.gpu.tensor_active.pct", 3);
  set(run, "watch.gpu.job.sm.pct", 37);
  set(run, "watch.cpu.mean_core.pct", 7);
  set(run, "watch.cpu.busiest_core.pct", 99);
  set(run, "watch.cpu.run_queue", 2);
  set(run, "watch.job.cpu.pct", 130);
  set(run, "watch.job.processes", 2);
  set(run, "watch.job.active_processes", 2);
  set(run, "watch.job.saturated_processes", 1);
  set(run, "watch.job.threads", 60);
  set(run, "watch.job.busiest_process.cpu.pct", 99);
  set(run, "watch.job.involuntary_cs.per_s", 20);
  set(run, "watch.job.involuntary_cs_per_process.per_s", 10);
  param(run, "watch.job.busiest_process.cpu.pct", "pid", "123");
  param(run, "watch.job.busiest_process.cpu.pct", "comm", "pt_data_worker");
  return run;
}

// The host is full: 8 loader processes hold 8 of 8 cores.
gb::Run starved_full_host() {
  gb::Run run = starved_one_worker();
  set(run, "watch.gpu.util.pct", 41);
  set(run, "watch.host.cores", 8);
  set(run, "watch.cpu.mean_core.pct", 97);
  set(run, "watch.job.cpu.pct", 776);
  set(run, "watch.job.processes", 9);
  set(run, "watch.job.active_processes", 8);
  set(run, "watch.job.saturated_processes", 7);
  return run;
}

const gb::Finding* find(const std::vector<gb::Finding>& findings, const std::string& id) {
  for (const gb::Finding& f : findings)
    if (f.id == id) return &f;
  return nullptr;
}

bool has(const std::vector<gb::Finding>& findings, const std::string& id) {
  return find(findings, id) != nullptr;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::vector<std::string> problem_ids(const std::vector<gb::Finding>& findings) {
  std::vector<std::string> ids;
  for (const gb::Finding& f : findings)
    if (f.status == gb::Status::warn || f.status == gb::Status::fail) ids.push_back(f.id);
  return ids;
}

const gb::ChecklistRow* row(const std::vector<gb::ChecklistRow>& rows, const std::string& id) {
  for (const auto& r : rows)
    if (r.id == id) return &r;
  return nullptr;
}

const gb::diagnose::WatchThresholds& t() {
  return gb::diagnose::watch_thresholds();
}

}  // namespace

// --- A healthy job ------------------------------------------------------------------------

TEST(DiagnoseWatch, WellFedJobIsGpuBoundWithNoProblems) {
  const auto findings = gb::diagnose::diagnose_watch(well_fed());
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].id, "gpu_bound");
  EXPECT_EQ(findings[0].status, gb::Status::pass);
  EXPECT_EQ(findings[0].title, "GPU-bound: the job keeps the GPU busy");
  EXPECT_EQ(findings[0].evidence,
            "GPU busy 98 % (10th percentile 96 %, below 95 % for 4 % of the time, SMs active "
            "92 %, tensor activity 85 %)");
}

TEST(DiagnoseWatch, RunWithoutWatchResultsHasNoFindings) {
  gb::Run run;
  run.results.push_back(
      gb::Result::measured("probe.gemm.bf16.tflops", "BF16 GEMM", "TFLOP/s", {791}));
  EXPECT_TRUE(gb::diagnose::diagnose_watch(run).empty());
}

// --- Input-bound on the CPU ----------------------------------------------------------------

TEST(DiagnoseWatch, LoaderProcessesFillingEveryCoreAreInputBoundOnCpu) {
  const auto findings = gb::diagnose::diagnose_watch(starved_full_host());
  const gb::Finding* f = find(findings, "input_bound_cpu");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->status, gb::Status::fail);
  EXPECT_EQ(f->title, "input-bound on CPU");
  EXPECT_EQ(f->evidence, "GPU busy 41 % while 8 job processes hold 8 of 8 cores at 97 %");
  EXPECT_TRUE(contains(f->advice, "more workers will not help")) << f->advice;
  EXPECT_EQ(findings.front().id, "input_bound_cpu");
}

TEST(DiagnoseWatch, OneLoaderPeggingACoreIsInputBoundOnOneProcess) {
  const auto findings = gb::diagnose::diagnose_watch(starved_one_worker());
  const gb::Finding* f = find(findings, "input_bound_cpu");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->status, gb::Status::fail);
  EXPECT_EQ(f->title, "input-bound on one loader process");
  EXPECT_EQ(f->evidence,
            "GPU busy 38 % while one process (pt_data_worker, pid 123) holds a core at 99 % and "
            "15 of 16 cores are idle");
  EXPECT_TRUE(contains(f->advice,
                       "raise DataLoader num_workers from 1 to about 8 (half the 16 "
                       "cores)"))
      << f->advice;
  EXPECT_EQ(problem_ids(findings), std::vector<std::string>{"input_bound_cpu"});
}

TEST(DiagnoseWatch, OnePeggedLoaderAmongEnoughWorkersPointsAtImbalance) {
  gb::Run run = starved_one_worker();
  set(run, "watch.job.processes", 9);  // 8 workers on 16 cores, one busy
  const auto findings = gb::diagnose::diagnose_watch(run);
  const gb::Finding* f = find(findings, "input_bound_cpu");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(contains(f->advice, "already has 8 workers, yet only 1 is busy")) << f->advice;
  EXPECT_FALSE(contains(f->advice, "raise DataLoader num_workers")) << f->advice;
}

TEST(DiagnoseWatch, SeveralPeggedProcessesWithIdleCoresAreTooFewWorkers) {
  gb::Run run = starved_one_worker();
  set(run, "watch.gpu.util.pct", 88);
  set(run, "watch.cpu.mean_core.pct", 26);
  set(run, "watch.job.processes", 5);
  set(run, "watch.job.active_processes", 4);
  set(run, "watch.job.saturated_processes", 4);
  const auto findings = gb::diagnose::diagnose_watch(run);
  const gb::Finding* f = find(findings, "input_bound_cpu");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->status, gb::Status::warn);  // 85-95 %: the checklist's warn band
  EXPECT_EQ(f->title, "input-bound: too few loader workers");
  EXPECT_EQ(f->evidence,
            "GPU busy 88 % while 4 job processes each hold a core at 90 % or more and 12 of 16 "
            "cores are idle");
  EXPECT_TRUE(contains(f->advice, "from 4 to about 8")) << f->advice;
}

TEST(DiagnoseWatch, NoInputBoundJustBelowThreeQuartersOfTheCores) {
  gb::Run run = starved_full_host();
  set(run, "watch.job.cpu.pct", 100 * t().host_saturated_share * 8 - 1);  // 5.99 of 8 cores
  set(run, "watch.job.busiest_process.cpu.pct", 80);                      // nobody pegged
  EXPECT_FALSE(has(gb::diagnose::diagnose_watch(run), "input_bound_cpu"));
  set(run, "watch.job.cpu.pct", 100 * t().host_saturated_share * 8);
  EXPECT_TRUE(has(gb::diagnose::diagnose_watch(run), "input_bound_cpu"));
}

TEST(DiagnoseWatch, ALoaderWorkerCountsFromSixtyPercentOfACore) {
  gb::Run run = starved_one_worker();
  set(run, "watch.job.busiest_process.cpu.pct", 72);  // the H200 run: 72 % at GPU 14 %
  EXPECT_TRUE(has(gb::diagnose::diagnose_watch(run), "input_bound_cpu"));
  set(run, "watch.job.busiest_process.cpu.pct", t().loader_busy_pct - 0.1);
  const auto findings = gb::diagnose::diagnose_watch(run);
  EXPECT_FALSE(has(findings, "input_bound_cpu"));
  EXPECT_FALSE(has(findings, "one_process_bound"));
}

TEST(DiagnoseWatch, NoOneProcessFindingBelowNinetyPercentOfACore) {
  gb::Run run = starved_one_worker();
  param(run, "watch.job.busiest_process.cpu.pct", "comm", "python3");
  set(run, "watch.job.processes", 3);
  set(run, "watch.job.busiest_process.cpu.pct", t().saturated_pct - 0.1);
  const auto findings = gb::diagnose::diagnose_watch(run);
  EXPECT_FALSE(has(findings, "input_bound_cpu"));
  EXPECT_FALSE(has(findings, "one_process_bound"));
}

TEST(DiagnoseWatch, NoMoreWorkersSuggestedWithoutIdleCores) {
  gb::Run run = starved_one_worker();
  set(run, "watch.host.cores", 2);
  set(run, "watch.cpu.mean_core.pct", 60);  // 0.8 cores idle
  set(run, "watch.job.cpu.pct", 120);       // under 3/4 of 2 cores
  EXPECT_FALSE(has(gb::diagnose::diagnose_watch(run), "input_bound_cpu"));
}

// --- One non-loader process ----------------------------------------------------------------

TEST(DiagnoseWatch, TrainingProcessPeggingACoreIsMainProcessBound) {
  gb::Run run = starved_one_worker();
  param(run, "watch.job.busiest_process.cpu.pct", "comm", "pt_main_thread");
  const auto findings = gb::diagnose::diagnose_watch(run);
  const gb::Finding* f = find(findings, "main_process_bound");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->evidence,
            "GPU busy 38 % while the training process (pt_main_thread, pid 123) holds a core at "
            "99 % and 15 of 16 cores are idle");
  EXPECT_TRUE(contains(f->advice, "torch.compile or CUDA graphs")) << f->advice;
  EXPECT_FALSE(has(findings, "input_bound_cpu"));
}

TEST(DiagnoseWatch, SingleProcessJobHasNoLoaderWorkers) {
  gb::Run run = starved_one_worker();
  param(run, "watch.job.busiest_process.cpu.pct", "comm", "python3");
  set(run, "watch.job.processes", 1);
  const auto findings = gb::diagnose::diagnose_watch(run);
  const gb::Finding* f = find(findings, "main_process_bound");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(contains(f->advice, "no loader workers")) << f->advice;
  EXPECT_TRUE(contains(f->advice, "num_workers to about 8")) << f->advice;
}

TEST(DiagnoseWatch, BusiestProcessWithTheWatchedPidIsTheTrainingProcess) {
  gb::Run run = starved_one_worker();
  param(run, "watch.job.busiest_process.cpu.pct", "comm", "python3");
  run.environment.push_back({"watch.pid", "pid", "123"});
  EXPECT_TRUE(has(gb::diagnose::diagnose_watch(run), "main_process_bound"));
}

TEST(DiagnoseWatch, UnidentifiedBusyProcessIsBoundByOneProcessWithAWayToTell) {
  gb::Run run = starved_one_worker();
  param(run, "watch.job.busiest_process.cpu.pct", "comm", "python3");
  const auto findings = gb::diagnose::diagnose_watch(run);
  const gb::Finding* f = find(findings, "one_process_bound");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->title, "bound by one CPU process");
  EXPECT_TRUE(contains(f->advice, "py-spy top --pid 123")) << f->advice;
}

// --- Storage -------------------------------------------------------------------------------

TEST(DiagnoseWatch, IowaitWithABusyDiskIsStorageBound) {
  gb::Run run = starved_one_worker();
  set(run, "watch.gpu.util.pct", 40);
  set(run, "watch.cpu.iowait.pct", 35);
  set(run, "watch.cpu.busiest_core.pct", 40);
  set(run, "watch.job.busiest_process.cpu.pct", 30);
  set(run, "watch.disk.util.pct", 99);
  set(run, "watch.disk.await.ms", 12);
  set(run, "watch.disk.queue", 30);
  param(run, "watch.disk.queue", "device", "nvme0n1");
  const auto findings = gb::diagnose::diagnose_watch(run);
  const gb::Finding* f = find(findings, "storage_bound");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->status, gb::Status::fail);
  EXPECT_EQ(f->title, "storage-bound");
  EXPECT_EQ(f->evidence,
            "GPU busy 40 % while iowait is 35 % with nvme0n1 at 99 % util (read await 12 ms, "
            "queue 30)");
  EXPECT_EQ(problem_ids(findings), std::vector<std::string>{"storage_bound"});
}

TEST(DiagnoseWatch, StorageAndCpuBoundAppearTogetherOnlyWhenBothHold) {
  gb::Run run = starved_full_host();
  set(run, "watch.cpu.iowait.pct", 20);
  set(run, "watch.disk.util.pct", 95);
  const auto findings = gb::diagnose::diagnose_watch(run);
  EXPECT_EQ(problem_ids(findings), (std::vector<std::string>{"input_bound_cpu", "storage_bound"}));
}

TEST(DiagnoseWatch, NoStorageBoundAtTheBoundaries) {
  gb::Run run = starved_one_worker();
  set(run, "watch.cpu.iowait.pct", t().iowait_pct - 0.1);
  set(run, "watch.disk.util.pct", 99);
  EXPECT_FALSE(has(gb::diagnose::diagnose_watch(run), "storage_bound"));
  set(run, "watch.cpu.iowait.pct", 35);
  set(run, "watch.disk.util.pct", t().disk_busy_pct - 0.1);
  EXPECT_FALSE(has(gb::diagnose::diagnose_watch(run), "storage_bound"));
}

TEST(DiagnoseWatch, StorageBoundWithoutAGpuFigureStillWarns) {
  gb::Run run = starved_one_worker();
  skip(run, "watch.gpu.util.pct", "NVML unavailable: libnvidia-ml.so.1 not found");
  set(run, "watch.cpu.iowait.pct", 35);
  set(run, "watch.disk.util.pct", 99);
  const auto findings = gb::diagnose::diagnose_watch(run);
  const gb::Finding* f = find(findings, "storage_bound");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->status, gb::Status::warn);
  EXPECT_TRUE(contains(f->evidence, "iowait 35 % with nvme0n1 at 99 % util")) << f->evidence;
}

// --- Workers and threads -------------------------------------------------------------------

TEST(DiagnoseWatch, MoreBusyProcessesThanCoresAreTooManyWorkers) {
  gb::Run run = starved_full_host();
  set(run, "watch.host.cores", 16);
  set(run, "watch.job.processes", 32);
  set(run, "watch.job.active_processes", 30);
  set(run, "watch.job.cpu.pct", 1540);
  set(run, "watch.job.involuntary_cs.per_s", 40000);
  set(run, "watch.job.involuntary_cs_per_process.per_s", 1333);
  const auto findings = gb::diagnose::diagnose_watch(run);
  const gb::Finding* f = find(findings, "too_many_workers");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->status, gb::Status::warn);
  EXPECT_EQ(f->evidence,
            "32 job processes (30 busy) on 16 cores, 40k involuntary switches/s (1333 per busy "
            "process)");
  EXPECT_TRUE(contains(f->advice, "try num_workers about 8 (half the 16 cores) and measure"))
      << f->advice;
  // The host is full too: input-bound on CPU, whose advice does not ask for more workers.
  const gb::Finding* cpu = find(findings, "input_bound_cpu");
  ASSERT_NE(cpu, nullptr);
  EXPECT_FALSE(contains(cpu->advice, "raise")) << cpu->advice;
}

TEST(DiagnoseWatch, TooManyWorkersIsOnlyANoteWhileTheGpuIsBusy) {
  gb::Run run = well_fed();
  set(run, "watch.job.active_processes", 20);
  set(run, "watch.job.involuntary_cs_per_process.per_s", 500);
  const auto findings = gb::diagnose::diagnose_watch(run);
  const gb::Finding* f = find(findings, "too_many_workers");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->status, gb::Status::info);
  EXPECT_TRUE(has(findings, "gpu_bound"));
}

TEST(DiagnoseWatch, NoTooManyWorkersAtTheBoundaries) {
  gb::Run run = starved_one_worker();
  set(run, "watch.job.active_processes", 16);  // as many busy processes as cores
  set(run, "watch.job.involuntary_cs_per_process.per_s", 1000);
  EXPECT_FALSE(has(gb::diagnose::diagnose_watch(run), "too_many_workers"));
  set(run, "watch.job.active_processes", 24);
  set(run, "watch.job.involuntary_cs_per_process.per_s", t().involuntary_cs_per_busy - 1);
  EXPECT_FALSE(has(gb::diagnose::diagnose_watch(run), "too_many_workers"));
}

TEST(DiagnoseWatch, LongRunQueueFromFewProcessesIsTooManyThreads) {
  gb::Run run = starved_one_worker();
  set(run, "watch.job.active_processes", 9);
  set(run, "watch.job.threads", 410);
  set(run, "watch.cpu.run_queue", 48);
  set(run, "watch.job.involuntary_cs.per_s", 12000);
  set(run, "watch.job.involuntary_cs_per_process.per_s", 1333);
  const auto findings = gb::diagnose::diagnose_watch(run);
  const gb::Finding* f = find(findings, "too_many_threads");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->evidence,
            "48 runnable tasks on 16 cores from 9 busy job processes (410 threads), 12k "
            "involuntary switches/s (1333 per busy process)");
  EXPECT_TRUE(contains(f->advice, "OMP_NUM_THREADS")) << f->advice;
}

// --- GPU efficiency ------------------------------------------------------------------------

TEST(DiagnoseWatch, BusyGpuWithIdleTensorCoresSaysCheckPrecision) {
  gb::Run run = well_fed();  // the fake NVML's busy_no_tensor card
  set(run, "watch.gpu.util.pct", 99);
  set(run, "watch.gpu.sm_active.pct", 95);
  set(run, "watch.gpu.tensor_active.pct", 0.15);
  const auto findings = gb::diagnose::diagnose_watch(run);
  const gb::Finding* f = find(findings, "tensor_cores_unused");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->status, gb::Status::warn);
  EXPECT_EQ(f->evidence,
            "GPU util 99 % but tensor activity 0.1 % (SMs active 95 %): the math runs on the "
            "CUDA cores");
  EXPECT_TRUE(contains(f->advice, "AMP")) << f->advice;
  EXPECT_TRUE(contains(f->advice, "TF32")) << f->advice;
  // Busy and inefficient are both true: the warning comes first.
  EXPECT_EQ(findings.front().id, "tensor_cores_unused");
  EXPECT_TRUE(has(findings, "gpu_bound"));
}

TEST(DiagnoseWatch, NoTensorFindingAtTheBoundariesOrWhenStarved) {
  gb::Run run = well_fed();
  set(run, "watch.gpu.tensor_active.pct", t().tensor_unused_pct);
  EXPECT_FALSE(has(gb::diagnose::diagnose_watch(run), "tensor_cores_unused"));
  // gpubase's own BF16 ResNet-50 training on an H100: the convolutions run on the tensor cores,
  // which are busy only 5.4 % of the time (the rest is batch norm, activations, memory).
  set(run, "watch.gpu.util.pct", 97);
  set(run, "watch.gpu.sm_active.pct", 95.5);
  set(run, "watch.gpu.tensor_active.pct", 5.4);
  EXPECT_FALSE(has(gb::diagnose::diagnose_watch(run), "tensor_cores_unused"));
  // A starved GPU shows little tensor activity whatever the precision: feed it first.
  EXPECT_FALSE(has(gb::diagnose::diagnose_watch(starved_one_worker()), "tensor_cores_unused"));
}

TEST(DiagnoseWatch, BusyGpuWithFewActiveSmsHasSmallKernels) {
  gb::Run run = well_fed();
  set(run, "watch.gpu.util.pct", 97);
  set(run, "watch.gpu.sm_active.pct", 30);
  const auto findings = gb::diagnose::diagnose_watch(run);
  const gb::Finding* f = find(findings, "small_kernels");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->evidence,
            "GPU util 97 % but SMs active 30 %: the kernels that run fill a small part of the GPU");
  EXPECT_FALSE(has(findings, "gpu_bound"));  // busy, but mostly empty
}

TEST(DiagnoseWatch, NoSmallKernelsAtHalfTheSmsActive) {
  gb::Run run = well_fed();
  set(run, "watch.gpu.sm_active.pct", t().sm_active_low_pct);
  const auto findings = gb::diagnose::diagnose_watch(run);
  EXPECT_FALSE(has(findings, "small_kernels"));
  EXPECT_TRUE(has(findings, "gpu_bound"));
}

TEST(DiagnoseWatch, IdleGpuOnAnIdleHostIsLaunchBound) {
  gb::Run run = well_fed();
  set(run, "watch.gpu.util.pct", 60);
  set(run, "watch.cpu.busiest_core.pct", 45);
  set(run, "watch.cpu.iowait.pct", 1);
  set(run, "watch.job.busiest_process.cpu.pct", 40);
  const auto findings = gb::diagnose::diagnose_watch(run);
  const gb::Finding* f = find(findings, "launch_bound");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->status, gb::Status::fail);
  EXPECT_EQ(f->evidence,
            "GPU busy 60 % while no host resource is saturated: busiest core 45 %, busiest "
            "process 40 % of a core, iowait 1 %");
  EXPECT_TRUE(contains(f->advice, "host syncs")) << f->advice;
  EXPECT_EQ(problem_ids(findings), std::vector<std::string>{"launch_bound"});
}

TEST(DiagnoseWatch, LaunchBoundOnlyWhenNoOtherCauseExplainsTheWait) {
  gb::Run run = well_fed();
  set(run, "watch.gpu.util.pct", 60);
  set(run, "watch.cpu.steal.pct", 25);  // the hypervisor takes the CPUs instead
  const auto findings = gb::diagnose::diagnose_watch(run);
  EXPECT_TRUE(has(findings, "cpu_steal"));
  EXPECT_FALSE(has(findings, "launch_bound"));
}

// --- The 95 % target -----------------------------------------------------------------------

TEST(DiagnoseWatch, StarvationRulesNeedTheGpuBelowTheTarget) {
  gb::Run run = starved_one_worker();
  set(run, "watch.gpu.sm_active.pct", 90);  // busy kernels fill the SMs
  set(run, "watch.gpu.util.pct", t().gpu_busy_pct - 0.1);
  EXPECT_TRUE(has(gb::diagnose::diagnose_watch(run), "input_bound_cpu"));
  set(run, "watch.gpu.util.pct", t().gpu_busy_pct);  // the target itself: neither
  auto findings = gb::diagnose::diagnose_watch(run);
  EXPECT_FALSE(has(findings, "input_bound_cpu"));
  EXPECT_FALSE(has(findings, "gpu_bound"));
  set(run, "watch.gpu.util.pct", t().gpu_busy_pct + 0.1);
  findings = gb::diagnose::diagnose_watch(run);
  EXPECT_FALSE(has(findings, "input_bound_cpu"));
  EXPECT_TRUE(has(findings, "gpu_bound"));
}

TEST(DiagnoseWatch, StarvedBelowEightyFivePercentFailsAboveItWarns) {
  gb::Run run = starved_one_worker();
  set(run, "watch.gpu.util.pct", t().gpu_starved_fail_pct);
  auto findings = gb::diagnose::diagnose_watch(run);
  ASSERT_TRUE(has(findings, "input_bound_cpu"));
  EXPECT_EQ(find(findings, "input_bound_cpu")->status, gb::Status::warn);
  set(run, "watch.gpu.util.pct", t().gpu_starved_fail_pct - 0.1);
  findings = gb::diagnose::diagnose_watch(run);
  ASSERT_TRUE(has(findings, "input_bound_cpu"));
  EXPECT_EQ(find(findings, "input_bound_cpu")->status, gb::Status::fail);
}

// --- The GPU itself ------------------------------------------------------------------------

TEST(DiagnoseWatch, OtherProcessesOnTheGpuAreNamed) {
  gb::Run run = well_fed();
  set(run, "watch.gpu.other_processes", 2);
  param(run, "watch.gpu.other_processes", "pids", "5012,5013");
  set(run, "watch.gpu.job.sm.pct", 38);
  const auto findings = gb::diagnose::diagnose_watch(run);
  const gb::Finding* f = find(findings, "gpu_shared");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->evidence,
            "2 other processes used the GPU (pids 5012,5013); the job's own SM share was 38 % of "
            "the GPU's 98 %");
  EXPECT_FALSE(has(findings, "gpu_bound"));  // busy, but not with this job
}

TEST(DiagnoseWatch, ThermalSlowdownInTheTelemetryIsThrottled) {
  gb::Run run = well_fed();
  run.environment.push_back(gb::Fact::numeric("gpu.sm_clock_max", "SM clock max", 1980, "MHz", 0));
  gb::Telemetry tel;
  tel.throttle_reasons = 0x4 | 0x40;  // power cap + HW thermal slowdown
  tel.temp_c_max = 91;
  run.results.front().telemetry = tel;
  set(run, "watch.gpu.sm_clock.mhz", 1450);
  const auto findings = gb::diagnose::diagnose_watch(run);
  const gb::Finding* f = find(findings, "throttled");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->status, gb::Status::warn);
  EXPECT_EQ(f->evidence,
            "hardware thermal slowdown during the run: SM clock 1450 MHz mean of 1980 MHz max, "
            "91 C max");
  EXPECT_TRUE(contains(f->advice, "airflow")) << f->advice;
}

TEST(DiagnoseWatch, PowerCapAloneIsNotThrottling) {
  gb::Run run = well_fed();
  gb::Telemetry tel;
  tel.throttle_reasons = 0x4;
  run.results.front().telemetry = tel;
  EXPECT_FALSE(has(gb::diagnose::diagnose_watch(run), "throttled"));
}

TEST(DiagnoseWatch, NoGpuSaysWhatIsMissingAndJudgesTheHostOnly) {
  gb::Run run = starved_full_host();
  run.gpu.unavailable = "NVML unavailable: libnvidia-ml.so.1 not found";
  run.environment.push_back(
      {"gpu.available", "GPU", "none: NVML unavailable: libnvidia-ml.so.1 not found"});
  for (const char* key :
       {"watch.gpu.util.pct", "watch.gpu.util.p10.pct", "watch.gpu.sm_active.pct",
        "watch.gpu.tensor_active.pct", "watch.gpu.job.sm.pct", "watch.gpu.other_processes"})
    skip(run, key, "no GPU");
  set(run, "watch.cpu.steal.pct", 12);
  const auto findings = gb::diagnose::diagnose_watch(run);
  const gb::Finding* f = find(findings, "no_gpu");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->status, gb::Status::warn);
  EXPECT_EQ(f->evidence,
            "no GPU: NVML unavailable: libnvidia-ml.so.1 not found; the CPU, memory and disk side "
            "was still measured");
  EXPECT_EQ(problem_ids(findings), (std::vector<std::string>{"no_gpu", "cpu_steal"}));
}

TEST(DiagnoseWatch, SkippedGpuUtilizationIsNamedWithItsReason) {
  gb::Run run = well_fed();
  skip(run, "watch.gpu.util.pct", "utilization not supported on MIG instances");
  const auto findings = gb::diagnose::diagnose_watch(run);
  const gb::Finding* f = find(findings, "no_gpu");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->title, "GPU utilization not measured");
  EXPECT_TRUE(contains(f->evidence, "utilization not supported on MIG instances"));
  EXPECT_FALSE(has(findings, "gpu_bound"));
}

TEST(DiagnoseWatch, JobWithoutGpuTimeDoesNotUseTheGpu) {
  gb::Run run = starved_one_worker();
  set(run, "watch.gpu.util.pct", 0);
  set(run, "watch.gpu.job.sm.pct", 0);
  const auto findings = gb::diagnose::diagnose_watch(run);
  const gb::Finding* f = find(findings, "job_not_using_gpu");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->status, gb::Status::fail);
  EXPECT_EQ(f->evidence,
            "the job's processes used 0 % of the GPU's SM time (GPU busy 0 %) over "
            "300 s");
  // Nothing about feeding a GPU the job does not use.
  EXPECT_EQ(problem_ids(findings), std::vector<std::string>{"job_not_using_gpu"});
}

TEST(DiagnoseWatch, JobWithAnySmShareAboveOnePercentUsesTheGpu) {
  gb::Run run = starved_one_worker();
  set(run, "watch.gpu.job.sm.pct", t().job_no_gpu_pct + 0.1);
  EXPECT_FALSE(has(gb::diagnose::diagnose_watch(run), "job_not_using_gpu"));
}

// --- Host ----------------------------------------------------------------------------------

TEST(DiagnoseWatch, LittleAvailableMemoryIsMemoryPressure) {
  gb::Run run = well_fed();
  set(run, "watch.mem.available.pct", 3.2);
  set(run, "watch.mem.available.gib", 8);
  set(run, "watch.job.rss.gib", 221);
  const auto findings = gb::diagnose::diagnose_watch(run);
  const gb::Finding* f = find(findings, "memory_pressure");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->evidence,
            "MemAvailable fell to 8 GiB (3.2 % of 250 GiB); the job's processes held up to 221 "
            "GiB RSS (shared pages count once per process)");
  set(run, "watch.mem.available.pct", t().mem_available_min_pct);
  EXPECT_FALSE(has(gb::diagnose::diagnose_watch(run), "memory_pressure"));
}

TEST(DiagnoseWatch, StealFromTenPercentIsCpuSteal) {
  gb::Run run = well_fed();
  set(run, "watch.cpu.steal.pct", t().steal_pct - 0.1);
  EXPECT_FALSE(has(gb::diagnose::diagnose_watch(run), "cpu_steal"));
  set(run, "watch.cpu.steal.pct", 14);
  const auto findings = gb::diagnose::diagnose_watch(run);
  const gb::Finding* f = find(findings, "cpu_steal");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->evidence,
            "steal 14 %: the VM's vCPUs waited that share of the time for a "
            "physical CPU");
}

TEST(DiagnoseWatch, ShortRunGetsANote) {
  gb::Run run = well_fed();
  set(run, "watch.samples", 12);
  const auto findings = gb::diagnose::diagnose_watch(run);
  const gb::Finding* f = find(findings, "short_run");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->status, gb::Status::info);
  EXPECT_TRUE(contains(f->evidence, "watched for 12 s (12 samples)")) << f->evidence;
}

TEST(DiagnoseWatch, AWatchWithoutSamplesIsJudgedByTheRunsLengthOnlyForWatchRuns) {
  gb::Run run = well_fed();
  for (auto& r : run.results)
    if (r.key == "watch.samples") r.value.reset();
  run.duration_s = 8;
  EXPECT_NE(find(gb::diagnose::diagnose_watch(run), "short_run"), nullptr);
  // A baseline whose training stage did not run (no GPU) watched nothing: its 8 s are the
  // other stages', not a short watch.
  run.command = "baseline";
  EXPECT_EQ(find(gb::diagnose::diagnose_watch(run), "short_run"), nullptr);
  // `baseline -- CMD` watched the user's job for 3 s of its 14.
  run.duration_s = 14;
  run.environment.push_back({"watch.command", "command", "python3 train.py"});
  set(run, "watch.duration.s", 3);
  const auto findings = gb::diagnose::diagnose_watch(run);
  const gb::Finding* f = find(findings, "short_run");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(contains(f->evidence, "watched for 3 s")) << f->evidence;
}

// --- Skipped inputs ------------------------------------------------------------------------

TEST(DiagnoseWatch, RulesStaySilentWhenTheirInputsWereNotMeasured) {
  gb::Run run = starved_one_worker();
  for (const char* key :
       {"watch.job.busiest_process.cpu.pct", "watch.job.cpu.pct", "watch.cpu.iowait.pct",
        "watch.gpu.tensor_active.pct", "watch.gpu.sm_active.pct", "watch.gpu.job.sm.pct"})
    skip(run, key, "not measured here");
  const auto findings = gb::diagnose::diagnose_watch(run);
  // A starved GPU, but nothing measured says why: no guess.
  EXPECT_TRUE(problem_ids(findings).empty());
}

TEST(DiagnoseWatch, AbsentFiguresAreLikeSkippedOnes) {
  gb::Run run;
  run.results.push_back(gb::Result::measured("watch.gpu.util.pct", "util", "%", {40}));
  const auto findings = gb::diagnose::diagnose_watch(run);
  EXPECT_TRUE(problem_ids(findings).empty());
}

TEST(DiagnoseWatch, MostImportantFirst) {
  gb::Run run = starved_one_worker();
  set(run, "watch.gpu.other_processes", 1);
  set(run, "watch.samples", 10);
  const auto findings = gb::diagnose::diagnose_watch(run);
  ASSERT_GE(findings.size(), 3u);
  EXPECT_EQ(findings[0].id, "input_bound_cpu");  // fail
  EXPECT_EQ(findings[1].id, "gpu_shared");       // warn
  EXPECT_EQ(findings.back().id, "short_run");    // info
}

TEST(DiagnoseWatch, ApplyVerdictsLeavesWatchFiguresToTheWatchRules) {
  gb::Run run = well_fed();
  gb::Telemetry tel;
  tel.throttle_reasons = 0x40;
  run.results.front().telemetry = tel;
  gb::diagnose::apply_verdicts(run);
  EXPECT_EQ(run.results.front().status, gb::Status::info);  // utilization stays a fact
  EXPECT_TRUE(has(gb::diagnose::diagnose_watch(run), "throttled"));
}

// --- The checklist names the cause ---------------------------------------------------------

TEST(DiagnoseWatch, GpuAndCpuRowsNameTheCauseAndGiveItsAdvice) {
  gb::Run run = starved_one_worker();
  run.findings = gb::diagnose::diagnose_watch(run);
  const auto rows = gb::diagnose::build_checklist(run);
  const gb::ChecklistRow* gpu = row(rows, "gpu_util");
  const gb::ChecklistRow* cpu = row(rows, "cpu_util");
  ASSERT_TRUE(gpu && cpu);
  EXPECT_EQ(gpu->status, gb::Status::fail);
  EXPECT_EQ(gpu->evidence,
            "watch.gpu.util.pct 38 % (watch.gpu.util.pct); cause: input-bound on one loader "
            "process");
  EXPECT_EQ(gpu->advice, run.findings.front().advice);
  EXPECT_EQ(cpu->status, gb::Status::fail);
  EXPECT_TRUE(contains(cpu->evidence, "cause: input-bound on one loader process")) << cpu->evidence;
  EXPECT_EQ(cpu->advice, run.findings.front().advice);
}

TEST(DiagnoseWatch, RowCountsFurtherCauses) {
  gb::Run run = starved_full_host();
  set(run, "watch.cpu.iowait.pct", 20);
  set(run, "watch.disk.util.pct", 95);
  run.findings = gb::diagnose::diagnose_watch(run);
  const auto rows = gb::diagnose::build_checklist(run);
  const gb::ChecklistRow* gpu = row(rows, "gpu_util");
  ASSERT_NE(gpu, nullptr);
  EXPECT_TRUE(contains(gpu->evidence, "cause: input-bound on CPU (+1 more in the diagnosis)"))
      << gpu->evidence;
}

TEST(DiagnoseWatch, RowKeepsTheGenericAdviceWhenNoFindingExplainsIt) {
  gb::Run run = starved_one_worker();
  run.findings = {{"short_run", gb::Status::info, "short run", "watched for 12 s", "watch longer"},
                  {"throttled", gb::Status::warn, "GPU clocks slowed down", "...", "cool it"}};
  const auto rows = gb::diagnose::build_checklist(run);
  const gb::ChecklistRow* gpu = row(rows, "gpu_util");
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->status, gb::Status::fail);
  EXPECT_FALSE(contains(gpu->evidence, "cause:")) << gpu->evidence;
  EXPECT_TRUE(contains(gpu->advice, "profile a step (nsys)")) << gpu->advice;
}

TEST(DiagnoseWatch, PassingRowIgnoresFindings) {
  gb::Run run = well_fed();
  set(run, "watch.gpu.tensor_active.pct", 0.15);
  run.findings = gb::diagnose::diagnose_watch(run);
  const auto rows = gb::diagnose::build_checklist(run);
  const gb::ChecklistRow* gpu = row(rows, "gpu_util");
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->status, gb::Status::pass);
  EXPECT_TRUE(gpu->advice.empty());
}
