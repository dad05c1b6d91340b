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

// Fed by nvJPEG, a step and the decode of its batch take turns (nvJPEG waits for the GPU): the
// advice names that and the CPU workers, not more decode threads or a larger share.
TEST(OwnLoaderAdvice, NvjpegFedRunsAreToldOfTheHostStageAndTheCpuWorkers) {
  for (const char* decode : {"both", "gpu"}) {
    const gb::Run run = own_run(decode);
    for (const char* id : {"gpu_util", "data_loading"}) {
      const std::string& a = row(run, id).advice;
      EXPECT_TRUE(has(a, "the training step included")) << decode << " " << a;
      EXPECT_TRUE(has(a, "--decode cpu --workers N")) << decode << " " << a;
      EXPECT_TRUE(has(a, "smaller")) << decode << " " << a;
      EXPECT_FALSE(has(a, "larger share")) << decode << " " << a;
    }
  }
}


// The CPU row's advice, where no finding names another cause (a fed GPU, busy decode workers),
// says what the CPU bought, from the run's own figures, and speaks of the consumer thread only
// when it is the busiest.
gb::Run with_cpu_figures(gb::Run run, double tid, double pid) {
  run.findings.clear();
  std::erase_if(run.results, [](const gb::Result& r) {
    return r.key == "watch.job.cpu.pct" || r.key == "watch.host.cores" ||
           r.key == "watch.job.busiest_thread.cpu.pct" || r.key.ends_with(".images_per_s");
  });
  run.results.push_back(gb::Result::measured("watch.job.cpu.pct", "job CPU", "%", {1410.0}, false));
  run.results.push_back(gb::Result::measured("watch.host.cores", "cores", "", {16.0}, false));
  run.results.push_back(gb::Result::measured("train.resnet50.bf16.b256.images_per_s",
                                             "images/s", "images/s", {7029.0}, true));
  run.results.push_back(gb::Result::measured("watch.job.busiest_thread.cpu.pct",
                                             "busiest thread", "%", {91.0}, false)
                            .param("tid", tid)
                            .param("pid", pid));
  run.checklist = gb::diagnose::build_checklist(run);
  return run;
}

TEST(OwnLoaderAdvice, TheCpuRowSaysWhatTheCpuBought) {
  const gb::Run workers = with_cpu_figures(own_run("cpu"), 3270, 3262);  // a decode worker
  const std::string& a = row(workers, "cpu_util").advice;
  EXPECT_TRUE(has(a, "the job used 14.1 of 16 cores to train 7,029 images/s, 2.01 ms of CPU an "
                     "image"))
      << a;
  EXPECT_TRUE(has(a, "--decode both")) << a;
  EXPECT_FALSE(has(a, "consumer, so leave it a core")) << a;

  const gb::Run consumer = with_cpu_figures(own_run("cpu"), 3262, 3262);  // the first thread
  EXPECT_TRUE(has(row(consumer, "cpu_util").advice, "consumer, so leave it a core"))
      << row(consumer, "cpu_util").advice;
}

// nvJPEG's host stage runs on the pipeline's decode thread, not on the consumer: a busiest
// consumer is told to keep its core; busy reader or decode threads are cheap, so the cost is
// elsewhere.
TEST(OwnLoaderAdvice, AnNvjpegFedConsumerOnTheBusiestCoreIsLeftACore) {
  const gb::Run consumer = with_cpu_figures(own_run("gpu"), 3262, 3262);
  const std::string& a = row(consumer, "cpu_util").advice;
  EXPECT_TRUE(has(a, "consumer, so leave it a core")) << a;
  EXPECT_FALSE(has(a, "nvJPEG's host stage")) << a;
  const gb::Run reader = with_cpu_figures(own_run("gpu"), 3270, 3262);
  EXPECT_TRUE(has(row(reader, "cpu_util").advice, "another process"))
      << row(reader, "cpu_util").advice;
  EXPECT_FALSE(has(row(reader, "cpu_util").advice, "leave it a core"))
      << row(reader, "cpu_util").advice;
}

TEST(OwnLoaderAdvice, ASeparateJobKeepsTheDataLoaderWording) {
  gb::Run run = gb::test::watch_starved_run();
  run.findings = gb::diagnose::diagnose_watch(run);
  run.checklist = gb::diagnose::build_checklist(run);
  EXPECT_TRUE(has(row(run, "gpu_util").advice, "DataLoader num_workers"))
      << row(run, "gpu_util").advice;
}

}  // namespace
