// tests/gpu/test_cuda_activity.cpp: `gpubase watch` sees inside a CUDA program it did not
// change. cuda_activity_job (tests/gpu/cuda_activity_job.cu) does known work per step; the
// injection library's figures must match it exactly where CUPTI counts (bytes, calls), and the
// job's exit code, an error exit and a SIGKILL must come through unchanged.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <cuda_runtime.h>

#include <cstdlib>
#include <string>

#include "watch/watch.hpp"

namespace {

#if defined(GPUBASE_CUDA_INJECT_PATH) && defined(GPUBASE_CUDA_ACTIVITY_JOB)

constexpr double kCopyGb = 8.0 * 1024 * 1024 / 1e9;  // 8 MiB per copy

bool has_gpu() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

const gb::Result* find(const gb::watch::WatchOutcome& out, const std::string& key) {
  for (const gb::Result& r : out.results)
    if (r.key == key) return &r;
  return nullptr;
}

double value(const gb::watch::WatchOutcome& out, const std::string& key) {
  const gb::Result* r = find(out, key);
  EXPECT_TRUE(r && r->value) << key << ": " << (r ? r->reason : "absent");
  return r && r->value ? *r->value : -1;
}

std::string param(const gb::watch::WatchOutcome& out, const std::string& key,
                  const std::string& name) {
  const gb::Result* r = find(out, key);
  return r ? r->text_param(name).value_or("") : "";
}

// The count behind a per-second result: the rate times the seconds the timeline covers. The
// "covers" param is printed to 0.1 s, so a short job's count is only known to rate x 0.05 s.
double count_from_rate(const gb::watch::WatchOutcome& out, const std::string& key) {
  return value(out, key) * std::stod(param(out, "watch.cuda.busy.pct", "covers"));
}

double count_tolerance(const gb::watch::WatchOutcome& out, const std::string& key,
                       double expected) {
  return expected * 0.1 + value(out, key) * 0.05;
}

gb::watch::WatchOutcome watch_job(const std::vector<std::string>& args, bool cuda = true) {
  ::setenv("GPUBASE_CUDA_INJECT_LIB", GPUBASE_CUDA_INJECT_PATH, 1);
  gb::watch::WatchOptions o;
  o.command = {GPUBASE_CUDA_ACTIVITY_JOB};
  o.command.insert(o.command.end(), args.begin(), args.end());
  o.interval_s = 0.5;
  o.perf_counters = false;
  o.cuda_activity = cuda;
  return gb::watch::run_watch(o);
}

// The calls of the top kernel whose name holds `part`, over the run.
long kernel_calls(const gb::watch::WatchOutcome& out, const std::string& part) {
  for (int i = 1; i <= 5; ++i) {
    const std::string key = "watch.cuda.top" + std::to_string(i) + ".pct";
    if (param(out, key, "name").find(part) != std::string::npos)
      return std::stol(param(out, key, "calls"));
  }
  return -1;
}

#define REQUIRE_GPU() \
  if (!has_gpu()) GTEST_SKIP() << "no CUDA device"

TEST(CudaActivity, KnownWorkIsCountedExactly) {
  REQUIRE_GPU();
  const int steps = 300;
  const auto out = watch_job({std::to_string(steps)});
  ASSERT_TRUE(out.exit);
  EXPECT_EQ(out.exit->code, 0);
  const gb::Result* busy = find(out, "watch.cuda.busy.pct");
  ASSERT_TRUE(busy && busy->value) << (busy ? busy->reason : "absent");
  EXPECT_GT(*busy->value, 1.0);
  EXPECT_LE(*busy->value, 100.0);
  EXPECT_NEAR(value(out, "watch.cuda.h2d.pageable.gb"), steps * kCopyGb, 1e-9);
  EXPECT_NEAR(value(out, "watch.cuda.h2d.pinned.gb"), steps * kCopyGb, 1e-9);
  EXPECT_NEAR(value(out, "watch.cuda.h2d.pageable.share.pct"), 50.0, 1e-9);
  EXPECT_EQ(param(out, "watch.cuda.d2h.pageable.gb", "copies"), std::to_string(steps));
  EXPECT_EQ(kernel_calls(out, "busy_kernel"), 10L * steps);
  EXPECT_EQ(kernel_calls(out, "tiny_kernel"), 20L * steps);
  EXPECT_NEAR(value(out, "watch.cuda.tiny_kernels.pct"), 100.0 * 20 / 30, 0.01);
  // One stream synchronize per step: syncs per second x the seconds covered.
  EXPECT_NEAR(count_from_rate(out, "watch.cuda.syncs.per_s"), steps,
              count_tolerance(out, "watch.cuda.syncs.per_s", steps));
  EXPECT_GT(value(out, "watch.cuda.h2d.pinned.gbps"), value(out, "watch.cuda.h2d.pageable.gbps"))
      << "pinned copies are faster than pageable ones";
  const gb::Result* wait = find(out, "watch.cuda.data_wait.pct");
  ASSERT_TRUE(wait && wait->value) << (wait ? wait->reason : "absent");
  EXPECT_LT(*wait->value, 5.0) << "a single process never waits for loader workers";
}

TEST(CudaActivity, TheJobsNvtxRangesAreCountedPerName) {
  REQUIRE_GPU();
  const int steps = 200;
  const auto out = watch_job({std::to_string(steps)});
  ASSERT_TRUE(out.exit);
  EXPECT_EQ(out.exit->code, 0);
  EXPECT_NEAR(count_from_rate(out, "watch.cuda.nvtx.ranges.per_s"), 2.0 * steps,
              count_tolerance(out, "watch.cuda.nvtx.ranges.per_s", 2.0 * steps));
  // "step" holds everything of a step, so it has the most time; "copies" nests inside it.
  EXPECT_EQ(param(out, "watch.cuda.nvtx.top1.pct", "name"), "step");
  EXPECT_EQ(param(out, "watch.cuda.nvtx.top1.pct", "ranges"), std::to_string(steps));
  EXPECT_EQ(param(out, "watch.cuda.nvtx.top2.pct", "name"), "copies");
  EXPECT_EQ(param(out, "watch.cuda.nvtx.top2.pct", "ranges"), std::to_string(steps));
  EXPECT_GT(value(out, "watch.cuda.nvtx.top1.pct"), value(out, "watch.cuda.nvtx.top2.pct"));
}

TEST(CudaActivity, AnErrorExitCodeIsTheJobsAndItsFiguresStay) {
  REQUIRE_GPU();
  const auto out = watch_job({"50", "3"});
  ASSERT_TRUE(out.exit);
  EXPECT_FALSE(out.exit->signaled);
  EXPECT_EQ(out.exit->code, 3);
  EXPECT_NEAR(value(out, "watch.cuda.h2d.pinned.gb"), 50 * kCopyGb, 1e-9);
}

TEST(CudaActivity, AJobKilledBySigkillKeepsWhatItsRingHeld) {
  REQUIRE_GPU();
  const auto out = watch_job({"1000000", "0", "3000"});  // a few seconds of work
  ASSERT_TRUE(out.exit);
  EXPECT_TRUE(out.exit->signaled);
  EXPECT_EQ(out.exit->signal, SIGKILL);
  // The last interval died with the process; the ones before it were read.
  const double gb = value(out, "watch.cuda.h2d.pinned.gb");
  EXPECT_GT(gb, 0.0);
  EXPECT_LE(gb, 3001 * kCopyGb + 1e-9);
}

// The job forks two workers before touching CUDA; each runs the same steps in a context of
// its own: three rings, every process's work counted once, the job's exit code unchanged.
TEST(CudaActivity, AJobThatForksWorkersIsSeenInEveryProcess) {
  REQUIRE_GPU();
  const int steps = 50;
  ::setenv("GB_JOB_FORKS", "2", 1);
  const auto out = watch_job({std::to_string(steps)});
  ::unsetenv("GB_JOB_FORKS");
  ASSERT_TRUE(out.exit);
  EXPECT_FALSE(out.exit->signaled);
  EXPECT_EQ(out.exit->code, 0);
  EXPECT_EQ(param(out, "watch.cuda.busy.pct", "processes"), "3");
  EXPECT_EQ(kernel_calls(out, "busy_kernel"), 3L * 10 * steps);
  EXPECT_NEAR(value(out, "watch.cuda.h2d.pinned.gb"), 3 * steps * kCopyGb, 1e-9);
}

// The busy kernels of each step run side by side on 16 streams: each counted once, the busy
// share a union (never past 100 %), the job unchanged.
TEST(CudaActivity, ManyStreamsAreCountedOnceAndTheirOverlapNotTwice) {
  REQUIRE_GPU();
  const int steps = 50;
  ::setenv("GB_JOB_STREAMS", "16", 1);
  const auto out = watch_job({std::to_string(steps)});
  ::unsetenv("GB_JOB_STREAMS");
  ASSERT_TRUE(out.exit);
  EXPECT_EQ(out.exit->code, 0);
  EXPECT_EQ(kernel_calls(out, "busy_kernel"), 10L * steps);
  EXPECT_EQ(kernel_calls(out, "tiny_kernel"), 20L * steps);
  const double busy = value(out, "watch.cuda.busy.pct");
  EXPECT_GT(busy, 0.0);
  EXPECT_LE(busy, 100.0);
}

TEST(CudaActivity, TurnedOffItIsSkippedWithTheReason) {
  REQUIRE_GPU();
  const auto out = watch_job({"20"}, false);
  const gb::Result* busy = find(out, "watch.cuda.busy.pct");
  ASSERT_NE(busy, nullptr);
  EXPECT_FALSE(busy->value);
  EXPECT_EQ(busy->reason, "turned off (--no-cuda-activity)");
  EXPECT_EQ(out.exit->code, 0);
}

#endif

}  // namespace
