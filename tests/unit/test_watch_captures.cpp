// test_watch_captures.cpp: each watch diagnosis rule on real captured /proc files (jobs run on
// the H200 host and on the development VM, tests/fixtures/proc/watch-*) replayed through the
// sampler, with the GPU side from the fake libnvidia-ml: capture -> samples -> summary ->
// diagnose_watch, the same path as a live run.
#include <gtest/gtest.h>

#include <cstdlib>

#include "diagnose/diagnose.hpp"
#include "sys/nvml.hpp"
#include "watch/gpu.hpp"
#include "watch/sampler.hpp"
#include "watch/summary.hpp"

namespace gb::watch {
namespace {

const std::string kFixtures = std::string(GPUBASE_FIXTURES_DIR) + "/proc/";

// The run a live `gpubase watch` would report for this capture and GPU scenario ("" = no GPU).
Run replay(const std::string& capture, const std::string& scenario, int cores) {
  std::unique_ptr<GpuReader> gpu;
  if (!scenario.empty()) {
    setenv("GPUBASE_FAKE_NVML_SCENARIO", scenario.c_str(), 1);
    const sys::Nvml nvml = sys::Nvml::load_from(GPUBASE_FAKE_NVML_PATH);
    EXPECT_TRUE(nvml.available()) << nvml.unavailable_reason();
    gpu = std::make_unique<GpuReader>(*nvml.device(0));
  }
  WatchSummary summary;
  const auto samples = replay_capture(kFixtures + capture, gpu.get());
  EXPECT_GE(samples.size(), 2u) << capture;
  for (WatchSample s : samples) {
    s.t_s += 60;  // as if after a minute of training: short_run is not what these test
    summary.add(s);
  }
  SummaryContext ctx;
  ctx.online_cores = cores;
  if (scenario.empty()) ctx.gpu_unavailable_reason = "no NVIDIA driver/GPU found";
  Run run;
  run.command = "watch";
  run.duration_s = 60;
  run.results = summary.results(ctx);
  const auto roots = capture_roots(kFixtures + capture);
  run.environment.push_back({"watch.pid", "pid", std::to_string(roots.at(0))});
  if (scenario.empty()) run.environment.push_back({"gpu.available", "GPU", "none: no driver"});
  diagnose::apply_verdicts(run);
  run.findings = diagnose::diagnose_watch(run);
  run.checklist = diagnose::build_checklist(run);
  unsetenv("GPUBASE_FAKE_NVML_SCENARIO");
  return run;
}

const Finding* find(const Run& run, const std::string& id) {
  for (const Finding& f : run.findings)
    if (f.id == id) return &f;
  return nullptr;
}

std::string ids(const Run& run) {
  std::string s;
  for (const Finding& f : run.findings) s += f.id + " ";
  return s;
}

TEST(WatchCaptures, StarvedH200JobIsInputBoundOnItsOneLoaderWorker) {
  const gb::Run run = replay("watch-h200/starved", "starved", 16);
  const Finding* f = find(run, "input_bound_cpu");
  ASSERT_NE(f, nullptr) << ids(run);
  EXPECT_EQ(f->status, Status::fail);
  EXPECT_NE(f->evidence.find("pt_data_worker"), std::string::npos) << f->evidence;
  EXPECT_NE(f->advice.find("num_workers"), std::string::npos) << f->advice;
  EXPECT_EQ(find(run, "main_process_bound"), nullptr);
  EXPECT_EQ(find(run, "storage_bound"), nullptr);
}

TEST(WatchCaptures, SmallBatchH200JobIsBoundByItsTrainingProcess) {
  const gb::Run run = replay("watch-h200/smallbatch", "starved", 16);
  const Finding* f = find(run, "main_process_bound");
  ASSERT_NE(f, nullptr) << ids(run);
  EXPECT_NE(f->evidence.find("python3"), std::string::npos) << f->evidence;
  EXPECT_EQ(find(run, "input_bound_cpu"), nullptr) << ids(run);
}

TEST(WatchCaptures, TheSameHostSideWithABusyGpuIsGpuBound) {
  const gb::Run run = replay("watch-h200/smallbatch", "healthy", 16);
  ASSERT_NE(find(run, "gpu_bound"), nullptr) << ids(run);
  EXPECT_EQ(find(run, "gpu_bound")->status, Status::pass);
  EXPECT_EQ(find(run, "main_process_bound"), nullptr) << ids(run);
}

TEST(WatchCaptures, BusyGpuWithoutTensorActivityNamesThePrecision) {
  const gb::Run run = replay("watch-h200/smallbatch", "busy_no_tensor", 16);
  const Finding* f = find(run, "tensor_cores_unused");
  ASSERT_NE(f, nullptr) << ids(run);
  EXPECT_NE(f->evidence.find("tensor"), std::string::npos);
}

TEST(WatchCaptures, SaturatedDiskWithHighIowaitIsStorageBound) {
  const gb::Run run = replay("watch-local/storage", "starved", 2);
  const Finding* f = find(run, "storage_bound");
  ASSERT_NE(f, nullptr) << ids(run);
  EXPECT_NE(f->evidence.find("vda"), std::string::npos) << f->evidence;
  EXPECT_NE(f->evidence.find("write await"), std::string::npos) << f->evidence;  // dd writes
}

TEST(WatchCaptures, MoreBusyWorkersThanCoresIsTooManyWorkers) {
  const gb::Run run = replay("watch-local/many_workers", "starved", 2);
  const Finding* f = find(run, "too_many_workers");
  ASSERT_NE(f, nullptr) << ids(run);
  EXPECT_NE(f->advice.find("num_workers"), std::string::npos) << f->advice;
}

TEST(WatchCaptures, WithoutAGpuTheHostSideIsStillDiagnosed) {
  const gb::Run run = replay("watch-local/storage", "", 2);
  EXPECT_NE(find(run, "no_gpu"), nullptr) << ids(run);
  EXPECT_NE(find(run, "storage_bound"), nullptr) << ids(run);
}

}  // namespace
}  // namespace gb::watch
