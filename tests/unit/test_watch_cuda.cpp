// The watcher's side of the CUDA activity: run figures from interval records (CudaTotals),
// thread states read from a fixture /proc tree, rings found and read by the monitor, and the
// reasons it gives when it does not collect.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "cuda_activity/reduce.hpp"
#include "cuda_activity/ring.hpp"
#include "watch/cuda_monitor.hpp"
#include "watch/cuda_totals.hpp"

namespace ca = gb::cuda_activity;
namespace fs = std::filesystem;
using gb::watch::CudaMonitor;
using gb::watch::CudaTotals;

namespace {

constexpr std::uint64_t kMs = 1'000'000;
constexpr std::uint64_t T = 7000ull * 1000 * kMs;

const gb::Result* result(const std::vector<gb::Result>& rs, const std::string& key) {
  for (const gb::Result& r : rs)
    if (r.key == key) return &r;
  return nullptr;
}

double value(const std::vector<gb::Result>& rs, const std::string& key) {
  const gb::Result* r = result(rs, key);
  EXPECT_NE(r, nullptr) << key;
  EXPECT_TRUE(r && r->value) << key << ": " << (r ? r->reason : "");
  return r && r->value ? *r->value : -1;
}

// Two seconds of a job: 600 ms of kernels a second, 100 tiny ones, a pinned and a pageable
// copy, one sync per second.
std::vector<ca::IntervalRecord> two_seconds(std::uint32_t pid) {
  ca::IntervalReducer red(pid, 1000 * kMs);
  for (int s = 0; s < 2; ++s) {
    const std::uint64_t t0 = T + static_cast<std::uint64_t>(s) * 1000 * kMs;
    red.add_kernel(0, t0, t0 + 500 * kMs, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n");
    for (int i = 0; i < 100; ++i)
      red.add_kernel(0, t0 + 500 * kMs + i * kMs, t0 + 500 * kMs + i * kMs + 5000, "tiny");
    red.add_copy(0, t0 + 700 * kMs, t0 + 710 * kMs, 500'000'000, ca::CopyKind::h2d_pinned);
    red.add_copy(0, t0 + 720 * kMs, t0 + 820 * kMs, 500'000'000, ca::CopyKind::h2d_pageable);
    red.add_sync(t0 + 900 * kMs, t0 + 910 * kMs);
  }
  return red.close_until(T + 2000 * kMs);
}

}  // namespace

TEST(WatchCudaTotals, RunFiguresFromIntervalRecords) {
  CudaTotals tot;
  for (const auto& r : two_seconds(10)) tot.add(r);
  CudaTotals::Inputs in;
  in.processes = 1;
  const auto rs = tot.results(in);
  // Busy: 500 ms of GEMM + 100 x 5 µs + 10 ms + 100 ms of copies per second.
  EXPECT_NEAR(value(rs, "watch.cuda.busy.pct"), 61.05, 0.01);
  EXPECT_NEAR(value(rs, "watch.cuda.kernels.per_s"), 101, 1e-9);
  EXPECT_NEAR(value(rs, "watch.cuda.tiny_kernels.pct"), 100.0 * 100 / 101, 1e-9);
  EXPECT_NEAR(value(rs, "watch.cuda.h2d.pageable.share.pct"), 50, 1e-9);
  EXPECT_NEAR(value(rs, "watch.cuda.h2d.pinned.gbps"), 50, 1e-9);
  EXPECT_NEAR(value(rs, "watch.cuda.h2d.pageable.gbps"), 5, 1e-9);
  EXPECT_NEAR(value(rs, "watch.cuda.syncs.per_s"), 1, 1e-9);
  EXPECT_NEAR(value(rs, "watch.cuda.sync.mean.ms"), 10, 1e-9);
  const gb::Result* top = result(rs, "watch.cuda.top1.pct");
  ASSERT_NE(top, nullptr);
  EXPECT_EQ(top->text_param("tensor cores").value_or(""), "likely (the name says MMA)");
  EXPECT_GT(value(rs, "watch.cuda.tensor_core_time.pct"), 99.0);
  // Gaps: between the tiny kernels (~1 ms) and before each copy/sync-separated span.
  EXPECT_GT(value(rs, "watch.cuda.idle_gaps.count"), 100);
}

TEST(WatchCudaTotals, SkippedWithTheReasonWhenNotCollected) {
  CudaTotals tot;
  CudaTotals::Inputs in;
  in.skipped_reason = "turned off (--no-cuda-activity)";
  const auto rs = tot.results(in);
  ASSERT_NE(result(rs, "watch.cuda.data_wait.pct"), nullptr);
  EXPECT_FALSE(result(rs, "watch.cuda.data_wait.pct")->value);
  EXPECT_EQ(result(rs, "watch.cuda.busy.pct")->reason, "turned off (--no-cuda-activity)");
}

TEST(WatchCudaSetup, ReasonsForNotCollecting) {
  EXPECT_EQ(gb::watch::prepare_cuda_activity(false, true, 1.0).reason,
            "turned off (--no-cuda-activity)");
  EXPECT_NE(gb::watch::prepare_cuda_activity(true, false, 1.0).reason.find("--pid"),
            std::string::npos);
  ::setenv("CUDA_INJECTION64_PATH", "/opt/other/libinject.so", 1);
  const auto s = gb::watch::prepare_cuda_activity(true, true, 1.0);
  ::unsetenv("CUDA_INJECTION64_PATH");
  EXPECT_FALSE(s.enabled);
  EXPECT_NE(s.reason.find("/opt/other/libinject.so"), std::string::npos) << s.reason;
}

namespace {

class WatchCudaMonitor : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("gb_proc_" + std::to_string(::getpid()));
    fs::remove_all(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  void process(int pid, const std::string& comm, char state) {
    fs::create_directories(root_ / std::to_string(pid) / "task" / std::to_string(pid));
    const std::string stat = std::to_string(pid) + " (" + comm + ") " + state +
                             " 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 100 0 0\n";
    std::ofstream(root_ / std::to_string(pid) / "stat") << stat;
    std::ofstream(root_ / std::to_string(pid) / "task" / std::to_string(pid) / "stat") << stat;
    std::ofstream(root_ / std::to_string(pid) / "task" / std::to_string(pid) / "comm") << comm;
  }
  fs::path root_;
};

}  // namespace

TEST_F(WatchCudaMonitor, ThreadStatesGiveDiskWaitAndRunnableProcesses) {
  process(100, "python3", 'D');    // the training process, reading from disk
  process(101, "pt_data_worker", 'R');
  process(102, "pt_data_worker", 'S');
  gb::watch::CudaActivitySetup off;
  off.reason = "turned off (--no-cuda-activity)";
  CudaMonitor m(off, root_.string());
  m.set_tree({100, 101, 102});
  for (int i = 0; i < 10; ++i) m.tick(T + static_cast<std::uint64_t>(i) * 10 * kMs);
  const auto [cuda, threads] = m.take_interval();
  EXPECT_FALSE(cuda.busy_pct);
  ASSERT_TRUE(threads.io_wait_pct);
  EXPECT_DOUBLE_EQ(*threads.io_wait_pct, 100.0);
  EXPECT_EQ(threads.io_wait_pid, 100);
  EXPECT_EQ(threads.io_wait_comm, "python3");
  EXPECT_DOUBLE_EQ(*threads.runnable_processes, 1.0);
  m.finish();
  const auto rs = m.results(std::nullopt);
  EXPECT_DOUBLE_EQ(value(rs, "watch.job.io_wait.pct"), 100.0);
  EXPECT_EQ(result(rs, "watch.cuda.busy.pct")->reason, "turned off (--no-cuda-activity)");
}

TEST_F(WatchCudaMonitor, RingsInTheFolderAreReadAndIdleTimeAttributed) {
  const auto me = static_cast<std::uint32_t>(::getpid());
  process(static_cast<int>(me), "python3", 'S');  // blocked ...
  process(static_cast<int>(me) + 1, "pt_data_worker", 'R');  // ... while a worker works
  gb::watch::CudaActivitySetup on;
  on.enabled = true;
  on.ring_dir = (root_ / "rings").string();
  fs::create_directories(on.ring_dir);
  std::string why;
  auto w = ca::RingWriter::create(on.ring_dir, me, me, 0, 8, why);
  ASSERT_TRUE(w) << why;
  CudaMonitor m(on, root_.string());
  m.set_tree({static_cast<int>(me), static_cast<int>(me) + 1});
  // Ticks every 10 ms over two seconds; the GPU is idle 39 % of each second.
  for (int i = 0; i < 200; ++i) m.tick(T + static_cast<std::uint64_t>(i) * 10 * kMs + kMs / 2);
  for (const auto& r : two_seconds(me)) w->write(r);
  m.read_rings();
  const auto interval = m.take_interval().first;
  ASSERT_TRUE(interval.busy_pct);
  EXPECT_NEAR(*interval.busy_pct, 61.05, 0.01);
  m.finish();
  const auto rs = m.results(std::nullopt);
  EXPECT_NEAR(value(rs, "watch.cuda.data_wait.pct"), 39.0, 1.5);
  EXPECT_NEAR(value(rs, "watch.cuda.idle.pct"), 39.0, 1.5);
  EXPECT_DOUBLE_EQ(value(rs, "watch.cuda.idle.host.pct"), 0.0);
}
