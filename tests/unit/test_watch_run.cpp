// test_watch_run.cpp: run_watch end to end with real child processes on this machine: the
// job's exit code, a command that does not exist, --duration, Ctrl-C (cancel), --pid, the
// series file, and the GPU side through the fake libnvidia-ml.
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/cancel.hpp"
#include "core/error.hpp"
#include "sys/child_process.hpp"
#include "sys/procfs.hpp"
#include "watch/watch.hpp"

namespace gb::watch {
namespace {

namespace fs = std::filesystem;

const Result* find(const WatchOutcome& out, const std::string& key) {
  for (const Result& r : out.results)
    if (r.key == key) return &r;
  return nullptr;
}

std::string fact(const WatchOutcome& out, const std::string& key) {
  for (const Fact& f : out.facts)
    if (f.key == key) return f.value;
  return "";
}

// No NVML for these tests unless one asks for the fake.
class WatchRun : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("GPUBASE_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
    reset_cancel();
  }
  void TearDown() override {
    unsetenv("GPUBASE_NVML_LIBRARY");
    reset_cancel();
  }
  WatchOptions options(std::vector<std::string> command) {
    WatchOptions o;
    o.command = std::move(command);
    o.interval_s = 0.1;
    o.stop_grace_s = 0.3;
    return o;
  }
};

TEST_F(WatchRun, ReturnsTheJobsExitCodeAndMonitorsItsCpu) {
  // A busy loop for ~0.8 s in a child of the job's shell, then exit 3. (CPU time of processes
  // that live less than an interval is only in the perf counters, so the loop is one process.)
  const WatchOutcome out = run_watch(
      options({"/bin/sh", "-c", "timeout 0.8 /bin/sh -c 'while :; do :; done'; exit 3"}));
  ASSERT_TRUE(out.exit.has_value());
  EXPECT_EQ(out.exit->shell_code(), 3);
  EXPECT_FALSE(out.interrupted);
  EXPECT_NE(out.end_reason.find("exited with code 3"), std::string::npos) << out.end_reason;
  const Result* job = find(out, "watch.job.cpu.pct");
  ASSERT_NE(job, nullptr);
  ASSERT_TRUE(job->value.has_value()) << job->reason;
  EXPECT_GT(*job->value, 5.0);  // the loop ran (it may share 2 cores with a build)
  EXPECT_GE(*find(out, "watch.samples")->value, 3.0);
  // No NVML here: the GPU side says why, the CPU side is measured.
  EXPECT_FALSE(out.gpu_available);
  EXPECT_EQ(find(out, "watch.gpu.util.pct")->status, Status::skipped);
  EXPECT_NE(fact(out, "gpu.available").find("no NVIDIA driver/GPU found"), std::string::npos);
  EXPECT_TRUE(find(out, "watch.cpu.busiest_core.pct")->value.has_value());
  const Result* self = find(out, "watch.sampler.cpu.pct");
  ASSERT_TRUE(self->value.has_value());
  EXPECT_LT(*self->value, 50.0);
}

TEST_F(WatchRun, CommandThatDoesNotExistIsAClearUsageError) {
  try {
    run_watch(options({"gpubase-no-such-command"}));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
    EXPECT_NE(std::string(e.what()).find("command not found"), std::string::npos) << e.what();
  }
}

TEST_F(WatchRun, BadOptionsAreUsageErrors) {
  WatchOptions o = options({});
  EXPECT_THROW(validate(o), Error);
  o = options({"true"});
  o.interval_s = 0.01;
  EXPECT_THROW(validate(o), Error);
  o = options({"true"});
  o.pid = 1;
  EXPECT_THROW(validate(o), Error);
  o = options({"true"});
  o.duration_s = 0;
  EXPECT_THROW(validate(o), Error);
}

TEST_F(WatchRun, DurationStopsTheJobAndReportsIt) {
  WatchOptions o = options({"sleep", "30"});
  o.duration_s = 0.4;
  const auto t0 = std::chrono::steady_clock::now();
  const WatchOutcome out = run_watch(o);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  EXPECT_TRUE(out.stopped_by_duration);
  ASSERT_TRUE(out.exit.has_value());
  EXPECT_TRUE(out.exit->signaled);  // sleep dies of the SIGINT
  EXPECT_NE(out.end_reason.find("--duration"), std::string::npos) << out.end_reason;
}

TEST_F(WatchRun, CancelGivesTheJobAGraceThenTerminatesAndStillReports) {
  // The job ignores SIGINT, as a stuck job would: gpubase must still end it and report.
  WatchOptions o = options({"/bin/sh", "-c", "trap '' INT; sleep 30"});
  std::thread canceller([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    request_cancel();
  });
  const WatchOutcome out = run_watch(o);
  canceller.join();
  EXPECT_TRUE(out.interrupted);
  ASSERT_TRUE(out.exit.has_value());
  // SIGTERM reaches the shell and its sleep together: either the shell dies of it, or it sees
  // its child die first and exits with 128 + SIGTERM, as shells report a terminated child.
  // Both are the job ended by the terminate gpubase sent after the grace.
  EXPECT_EQ(out.exit->shell_code(), 128 + SIGTERM) << out.exit->describe();
  EXPECT_NE(out.end_reason.find("interrupted"), std::string::npos);
  EXPECT_GE(*find(out, "watch.samples")->value, 2.0);
}

TEST_F(WatchRun, StoppingReachesTheJobBehindALauncher) {
  // The shell ignores SIGINT and SIGTERM does not reach its child by itself: the sleep must
  // still be gone when run_watch returns.
  const fs::path marker = fs::temp_directory_path() / ("gb_tree_" + std::to_string(getpid()));
  WatchOptions o = options({"/bin/sh", "-c", "trap '' INT; sleep 30 & echo $! > " +
                                                  marker.string() + "; wait"});
  o.duration_s = 0.5;
  run_watch(o);
  std::ifstream in(marker);
  int pid = 0;
  in >> pid;
  ASSERT_GT(pid, 0);
  // Gone, or a zombie waiting for whoever adopted it to reap it (not every PID 1 does).
  bool gone = false;
  for (int i = 0; i < 50 && !gone; ++i) {
    const auto p = sys::read_process(pid);
    gone = !p || p->stat.state == 'Z' || p->stat.state == 'X';
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(gone) << "pid " << pid << " outlived the watch";
  fs::remove(marker);
}

TEST_F(WatchRun, AttachesToAPidAndStopsWhenItEnds) {
  sys::ChildProcess job = sys::ChildProcess::spawn({"sleep", "0.6"});
  WatchOptions o;
  o.pid = job.pid();
  o.interval_s = 0.1;
  std::thread reaper([&] { job.wait(); });  // the parent reaps; watch sees the pid vanish
  const WatchOutcome out = run_watch(o);
  reaper.join();
  EXPECT_FALSE(out.exit.has_value());
  EXPECT_NE(out.end_reason.find("ended"), std::string::npos) << out.end_reason;
  EXPECT_NE(fact(out, "watch.command").find("sleep"), std::string::npos);
}

TEST_F(WatchRun, AttachToMissingPidIsAUsageError) {
  WatchOptions o;
  o.pid = 0x3ffffff0;
  EXPECT_THROW(run_watch(o), Error);
}

TEST_F(WatchRun, WritesTheSeriesFile) {
  const fs::path path = fs::temp_directory_path() / ("gb_series_" + std::to_string(getpid()) +
                                                     ".csv");
  WatchOptions o = options({"sleep", "0.5"});
  o.series_path = path.string();
  const WatchOutcome out = run_watch(o);
  std::ifstream in(path);
  std::string header, line;
  std::getline(in, header);
  int rows = 0;
  while (std::getline(in, line)) ++rows;
  EXPECT_EQ(header.rfind("t_s,interval_s,gpu_util_pct", 0), 0u);
  EXPECT_EQ(rows, static_cast<int>(*find(out, "watch.samples")->value));
  fs::remove(path);
}

TEST_F(WatchRun, GpuSideThroughTheFakeNvml) {
  setenv("GPUBASE_NVML_LIBRARY", GPUBASE_FAKE_NVML_PATH, 1);
  setenv("GPUBASE_FAKE_NVML_SCENARIO", "starved", 1);
  const WatchOutcome out = run_watch(options({"sleep", "0.4"}));
  unsetenv("GPUBASE_FAKE_NVML_SCENARIO");
  EXPECT_TRUE(out.gpu_available);
  const Result* util = find(out, "watch.gpu.util.pct");
  ASSERT_TRUE(util->value.has_value()) << util->reason;
  EXPECT_NEAR(*util->value, 40.0, 3.0);  // the starved card: driver samples 38-42 %
  EXPECT_TRUE(find(out, "watch.gpu.power.w")->value.has_value());
  EXPECT_FALSE(fact(out, "gpu.name").empty());
}

}  // namespace
}  // namespace gb::watch
