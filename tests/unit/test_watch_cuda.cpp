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

TEST(WatchCudaTotals, MergingGivesTheFiguresOfAddingEveryRecord) {
  const auto records = two_seconds(10);
  ASSERT_EQ(records.size(), 2u);
  CudaTotals all, first, second;
  for (const auto& r : records) all.add(r);
  first.add(records[0]);
  second.add(records[1]);
  first.merge(second);
  first.merge(CudaTotals());  // an empty one changes nothing
  CudaTotals::Inputs in;
  in.processes = 1;
  const auto want = all.results(in);
  const auto got = first.results(in);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].key, want[i].key);
    EXPECT_EQ(got[i].value, want[i].value) << want[i].key;
    EXPECT_EQ(got[i].params.size(), want[i].params.size()) << want[i].key;
  }
  EXPECT_EQ(first.wall_ns(), all.wall_ns());
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

TEST(WatchCudaSetup, TheJobsNvtxIsRoutedThroughTheLibraryUnlessAToolIsNamed) {
  const fs::path lib = fs::temp_directory_path() / ("gb_inject_" + std::to_string(::getpid()) + ".so");
  std::ofstream(lib) << "not really a library";
  ::setenv("GPUBASE_CUDA_INJECT_LIB", lib.c_str(), 1);
  auto env_of = [](const gb::watch::CudaActivitySetup& s, const std::string& key) {
    for (const auto& [k, v] : s.env)
      if (k == key) return v;
    return std::string("(unset)");
  };
  auto s = gb::watch::prepare_cuda_activity(true, true, 1.0);
  ASSERT_TRUE(s.enabled) << s.reason;
  EXPECT_EQ(env_of(s, "NVTX_INJECTION64_PATH"), lib.string());
  EXPECT_EQ(env_of(s, "CUDA_INJECTION64_PATH"), lib.string());
  fs::remove_all(s.ring_dir);
  ::setenv("NVTX_INJECTION64_PATH", "/opt/nsys/libToolsInjection64.so", 1);
  s = gb::watch::prepare_cuda_activity(true, true, 1.0);
  ::unsetenv("NVTX_INJECTION64_PATH");
  ::unsetenv("GPUBASE_CUDA_INJECT_LIB");
  fs::remove_all(s.ring_dir);
  fs::remove(lib);
  EXPECT_EQ(env_of(s, "NVTX_INJECTION64_PATH"), "(unset)") << "the user's tool is left alone";
}

TEST(WatchCudaTotals, NvtxRangesPerNameWithTheirShareOfWallTime) {
  ca::IntervalReducer red(10, 1000 * kMs);
  for (int s = 0; s < 2; ++s) {
    const std::uint64_t t0 = T + static_cast<std::uint64_t>(s) * 1000 * kMs;
    red.add_kernel(0, t0, t0 + 500 * kMs, "gemm");
    for (int i = 0; i < 10; ++i) {
      const std::uint64_t step = t0 + static_cast<std::uint64_t>(i) * 100 * kMs;
      red.add_range_start(2 * static_cast<std::uint64_t>(s * 10 + i), step, "", "data");
      red.add_range_end(2 * static_cast<std::uint64_t>(s * 10 + i), step + 30 * kMs);
      red.add_range_start(2 * static_cast<std::uint64_t>(s * 10 + i) + 1, step + 30 * kMs, "",
                          "forward");
      red.add_range_end(2 * static_cast<std::uint64_t>(s * 10 + i) + 1, step + 80 * kMs);
    }
  }
  CudaTotals tot;
  for (const auto& r : red.close_until(T + 2000 * kMs)) tot.add(r);
  const auto rs = tot.results(CudaTotals::Inputs{});
  EXPECT_DOUBLE_EQ(value(rs, "watch.cuda.nvtx.ranges.per_s"), 20.0);
  EXPECT_NEAR(value(rs, "watch.cuda.nvtx.top1.pct"), 50.0, 1e-9);
  EXPECT_EQ(*result(rs, "watch.cuda.nvtx.top1.pct")->text_param("name"), "forward");
  EXPECT_EQ(*result(rs, "watch.cuda.nvtx.top1.pct")->text_param("ranges"), "20");
  EXPECT_EQ(*result(rs, "watch.cuda.nvtx.top1.pct")->text_param("mean"), "50.000 ms");
  EXPECT_NEAR(value(rs, "watch.cuda.nvtx.top2.pct"), 30.0, 1e-9);
  EXPECT_EQ(result(rs, "watch.cuda.nvtx.top3.pct"), nullptr);
}

TEST(WatchCudaTotals, NoNvtxRangesIsSkippedWithTheReason) {
  CudaTotals tot;
  for (const auto& r : two_seconds(10)) tot.add(r);
  const auto rs = tot.results(CudaTotals::Inputs{});
  const gb::Result* r = result(rs, "watch.cuda.nvtx.ranges.per_s");
  ASSERT_NE(r, nullptr);
  EXPECT_FALSE(r->value);
  EXPECT_NE(r->reason.find("no NVTX ranges"), std::string::npos);
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
  // As live: the monitor samples the threads every 10 ms over each record's interval, then
  // the record arrives through the ring.
  static void feed(CudaMonitor& m, ca::RingWriter& w, const std::vector<ca::IntervalRecord>& rs) {
    for (const ca::IntervalRecord& r : rs) {
      for (std::uint64_t t = r.t0_ns + kMs / 2; t < r.t1_ns; t += 10 * kMs) m.tick(t);
      w.write(r);
      m.read_rings();
    }
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


namespace {

// A job's CUDA life: 3 s of start-up copies (model to the GPU), 5 s of warm-up at 20 % busy
// (autotuning, the loader filling), 12 s of steady training at 60 % busy; then `idle_s`
// seconds without GPU work (the job shutting down, or a pause) and `busy_s` more at 60 %.
std::vector<ca::IntervalRecord> job_life(std::uint32_t pid, int idle_s = 0, int busy_s = 0) {
  ca::IntervalReducer red(pid, 1000 * kMs);
  for (int s = 0; s < 20 + idle_s + busy_s; ++s) {
    const std::uint64_t t0 = T + static_cast<std::uint64_t>(s) * 1000 * kMs;
    if (s < 3)
      red.add_copy(0, t0, t0 + 10 * kMs, 50'000'000, ca::CopyKind::h2d_pageable);
    else if (s < 20 || s >= 20 + idle_s)
      red.add_kernel(0, t0, t0 + (s < 8 ? 200 : 600) * kMs, "sm90_xmma_gemm_bf16bf16");
  }
  return red.close_until(T + static_cast<std::uint64_t>(20 + idle_s + busy_s) * 1000 * kMs);
}

}  // namespace

class WatchCudaMonitorJob : public WatchCudaMonitor {
 protected:
  // The job's records, fed as live with the main thread blocked and a worker busy (idle time
  // is data wait); the results once it ended, and the last interval's figures before that.
  std::vector<gb::Result> watch(const std::vector<ca::IntervalRecord>& records,
                                gb::watch::CudaInterval* last_interval = nullptr) {
    const auto me = static_cast<std::uint32_t>(::getpid());
    process(static_cast<int>(me), "python3", 'S');
    process(static_cast<int>(me) + 1, "pt_data_worker", 'R');
    gb::watch::CudaActivitySetup on;
    on.enabled = true;
    on.ring_dir = (root_ / "rings").string();
    fs::create_directories(on.ring_dir);
    std::string why;
    auto w = ca::RingWriter::create(on.ring_dir, me, me, 0, 128, why);
    EXPECT_TRUE(w) << why;
    if (!w) return {};
    CudaMonitor m(on, root_.string());
    m.set_tree({static_cast<int>(me), static_cast<int>(me) + 1});
    feed(m, *w, records);
    if (last_interval) *last_interval = m.take_interval().first;
    m.finish();
    return m.results(std::nullopt);
  }
};

TEST_F(WatchCudaMonitorJob, FiguresJudgeTheSteadyStateAfterTheFirstKernelAndAWarmUp) {
  gb::watch::CudaInterval interval;
  const auto rs = watch(job_life(static_cast<std::uint32_t>(::getpid())), &interval);
  ASSERT_TRUE(interval.since_first_kernel_s);
  // 08 s to the last kernel's end at 19.6 s: 12 x 600 ms busy in 11.6 s; the whole CUDA life
  // would say (3 x 1 % + 5 x 20 % + 12 x 60 %) / 20.
  EXPECT_NEAR(value(rs, "watch.cuda.busy.pct"), 100.0 * 7.2 / 11.6, 0.01);
  EXPECT_NEAR(value(rs, "watch.cuda.data_wait.pct"), 100.0 * 4.4 / 11.6, 1.0);
  EXPECT_DOUBLE_EQ(value(rs, "watch.cuda.kernels.count"), 12.0);
  EXPECT_EQ(*result(rs, "watch.cuda.kernels.count")->text_param("whole run"), "17");
  const std::string covers = *result(rs, "watch.cuda.busy.pct")->text_param("covers");
  EXPECT_NE(covers.find("11.6 s, the steady state"), std::string::npos) << covers;
  EXPECT_NE(covers.find("5-s warm-up excluded"), std::string::npos) << covers;
  EXPECT_EQ(covers.find("idle end"), std::string::npos) << covers;
}

TEST_F(WatchCudaMonitorJob, TheIdleEndAfterTheLastGpuWorkIsLeftOut) {
  // 3 s of shutdown after the last interval with kernels (freeing memory, destroying the
  // context): judged with it, 7.2 s busy in 15 s would read 48 % and the data wait 52 %. The
  // window ends with the last kernel, at 19.6 s.
  const auto rs = watch(job_life(static_cast<std::uint32_t>(::getpid()), 3, 0));
  EXPECT_NEAR(value(rs, "watch.cuda.busy.pct"), 100.0 * 7.2 / 11.6, 0.01);
  EXPECT_NEAR(value(rs, "watch.cuda.data_wait.pct"), 100.0 * 4.4 / 11.6, 1.0);
  const std::string covers = *result(rs, "watch.cuda.busy.pct")->text_param("covers");
  EXPECT_NE(covers.find("11.6 s, the steady state"), std::string::npos) << covers;
  EXPECT_NE(covers.find("the idle end after the last GPU work (3.4 s)"), std::string::npos)
      << covers;
}

TEST_F(WatchCudaMonitorJob, AnIdleStretchFollowedByGpuWorkCounts) {
  // A 3-s pause (an evaluation on the CPU, a checkpoint) then 2 s more of training.
  // 08 s to the last kernel's end at 24.6 s: 14 x 600 ms busy in 16.6 s, the pause included.
  const auto rs = watch(job_life(static_cast<std::uint32_t>(::getpid()), 3, 2));
  EXPECT_NEAR(value(rs, "watch.cuda.busy.pct"), 100.0 * 8.4 / 16.6, 0.01);
  EXPECT_NEAR(value(rs, "watch.cuda.data_wait.pct"), 100.0 * (13 * 0.4 + 3) / 16.6, 1.0);
  const std::string covers = *result(rs, "watch.cuda.busy.pct")->text_param("covers");
  EXPECT_NE(covers.find("16.6 s"), std::string::npos) << covers;
  EXPECT_EQ(covers.find("idle end"), std::string::npos) << covers;
}

TEST_F(WatchCudaMonitorJob, AnIdleEndLongerThanTheLimitCountsWhole) {
  // The job went idle for good (70 s > kMaxIdleTailS): all of it counts.
  const auto rs = watch(job_life(static_cast<std::uint32_t>(::getpid()), 70, 0));
  EXPECT_NEAR(value(rs, "watch.cuda.busy.pct"), 100.0 * 7.2 / 82, 0.01);
  EXPECT_NEAR(value(rs, "watch.cuda.data_wait.pct"), 100.0 * (12 * 0.4 + 70) / 82, 1.0);
}

TEST_F(WatchCudaMonitorJob, RingsInTheFolderAreReadAndIdleTimeAttributed) {
  // The GPU is idle 39 % of each second while the main thread waits and a worker works.
  gb::watch::CudaInterval interval;
  const auto rs = watch(two_seconds(static_cast<std::uint32_t>(::getpid())), &interval);
  ASSERT_TRUE(interval.busy_pct);
  EXPECT_NEAR(*interval.busy_pct, 61.05, 0.01);
  EXPECT_NEAR(value(rs, "watch.cuda.data_wait.pct"), 39.0, 1.5);
  EXPECT_NEAR(value(rs, "watch.cuda.idle.pct"), 39.0, 1.5);
  EXPECT_DOUBLE_EQ(value(rs, "watch.cuda.idle.host.pct"), 0.0);
}

TEST_F(WatchCudaMonitorJob, AShortCudaLifeIsJudgedWholeAndSaysSo) {
  const auto rs = watch(two_seconds(static_cast<std::uint32_t>(::getpid())));
  EXPECT_NEAR(value(rs, "watch.cuda.busy.pct"), 61.05, 0.01);
  const std::string covers = *result(rs, "watch.cuda.busy.pct")->text_param("covers");
  EXPECT_NE(covers.find("no warm-up was left out"), std::string::npos) << covers;
}

TEST_F(WatchCudaMonitor, TheJobsStorageReadsComeFromEachProcessesIoCounters) {
  process(100, "python3", 'D');
  process(101, "pt_data_worker", 'S');
  auto io = [&](int pid, std::uint64_t read_bytes) {
    std::ofstream(root_ / std::to_string(pid) / "io")
        << "rchar: 1\nwchar: 2\nsyscr: 3\nsyscw: 4\nread_bytes: " << read_bytes
        << "\nwrite_bytes: 0\ncancelled_write_bytes: 0\n";
  };
  gb::watch::CudaActivitySetup off;
  off.reason = "turned off (--no-cuda-activity)";
  CudaMonitor m(off, root_.string());
  m.set_tree({100, 101});
  // Read once a second: 5 s in which the two processes read 40 + 10 MB a second.
  for (int s = 0; s <= 5; ++s) {
    io(100, 1'000'000'000ull + static_cast<std::uint64_t>(s) * 40'000'000);
    io(101, static_cast<std::uint64_t>(s) * 10'000'000);
    m.tick(T + static_cast<std::uint64_t>(s) * 1000 * kMs);
  }
  m.finish();
  const auto rs = m.results(std::nullopt);
  EXPECT_NEAR(value(rs, "watch.job.disk_read.mbps"), 50.0, 1e-9);
}
