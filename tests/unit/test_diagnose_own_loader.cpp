// tests/unit/test_diagnose_own_loader.cpp: a training run gpubase fed itself (the baseline's
// training stage under the in-process sampler) gets advice about gpubase's own loader -- its
// decode path, `--decode`, `--gpu-share`, `--workers` -- and never a DataLoader's num_workers;
// the same starved figures from a separate job keep the DataLoader wording.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "diagnose/diagnose.hpp"
#include "test_report_fixture.hpp"

namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The starved watch figures (GPU busy ~40 %, one pegged process) as the baseline's training
// stage would have them: the in-process mark, and the loader-fed run's data wait.
gb::Run own_run(const std::string& decode) {
  gb::Run run = gb::test::watch_starved_run();
  run.command = "baseline";
  run.environment.push_back(
      {"watch.target", "watched", "in_process: gpubase's own work and its loader threads"});
  run.results.push_back(gb::Result::measured("train.resnet50.bf16.b256.data_wait_pct",
                                             "ResNet-50 BF16 b256: GPU waiting for data", "%",
                                             {41.5}, false)
                            .param("decode", decode));
  run.findings = gb::diagnose::diagnose_watch(run);
  run.checklist = gb::diagnose::build_checklist(run);
  return run;
}

const gb::ChecklistRow& row(const gb::Run& run, const std::string& id) {
  for (const gb::ChecklistRow& r : run.checklist)
    if (r.id == id) return r;
  throw std::runtime_error("no row " + id);
}

TEST(OwnLoaderAdvice, CpuFedRowsPointAtTheSplitNotAtNumWorkers) {
  const gb::Run run = own_run("cpu");
  for (const char* id : {"gpu_util", "cpu_util", "data_loading"}) {
    const gb::ChecklistRow& r = row(run, id);
    ASSERT_NE(r.status, gb::Status::pass) << id;
    EXPECT_FALSE(has(r.advice, "num_workers")) << id << ": " << r.advice;
    EXPECT_FALSE(has(r.advice, "DataLoader")) << id << ": " << r.advice;
    EXPECT_TRUE(has(r.advice, "gpubase's loader")) << id << ": " << r.advice;
    EXPECT_TRUE(has(r.advice, "--decode both")) << id << ": " << r.advice;
  }
  for (const gb::Finding& f : run.findings) {
    EXPECT_FALSE(has(f.advice, "num_workers")) << f.id << ": " << f.advice;
    EXPECT_FALSE(has(f.advice, "DataLoader")) << f.id << ": " << f.advice;
  }
}

TEST(OwnLoaderAdvice, SplitFedRunsAreToldAboutTheShareAndNvjpegAlone) {
  const gb::Run run = own_run("both");
  const gb::ChecklistRow& r = row(run, "gpu_util");
  EXPECT_TRUE(has(r.advice, "--gpu-share")) << r.advice;
  EXPECT_TRUE(has(r.advice, "--decode gpu")) << r.advice;
}

TEST(OwnLoaderAdvice, ASeparateJobKeepsTheDataLoaderWording) {
  gb::Run run = gb::test::watch_starved_run();
  run.findings = gb::diagnose::diagnose_watch(run);
  run.checklist = gb::diagnose::build_checklist(run);
  EXPECT_TRUE(has(row(run, "gpu_util").advice, "DataLoader num_workers"))
      << row(run, "gpu_util").advice;
}

}  // namespace
