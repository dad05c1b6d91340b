// test_watch_host.cpp: the host side of a watch interval over the two real /proc snapshots in
// tests/fixtures/proc/watch (a busy-loop bash, an exiting child, dd writing to vda), and the
// capture/replay round trip.
#include <gtest/gtest.h>

#include <filesystem>

#include "watch/host.hpp"
#include "watch/sampler.hpp"

namespace gb::watch {
namespace {

namespace fs = std::filesystem;

const std::string kWatchDir = std::string(GPUBASE_FIXTURES_DIR) + "/proc/watch";
constexpr int kRoot = 3799;

HostSnapshot snapshot(const char* name) {
  HostReader reader(kWatchDir + "/" + name, {kRoot});
  return parse_host_files(reader.read(0));
}

TEST(WatchHost, ReaderFindsTheTreeAndReadsItsFiles) {
  HostReader reader(kWatchDir + "/snap1", {kRoot});
  const HostFiles f = reader.read(0);
  EXPECT_EQ(reader.tree(), (std::vector<int>{3799, 3801, 3802, 3803}));
  EXPECT_EQ(f.processes.size(), 4u);
  EXPECT_FALSE(f.stat.empty());
  EXPECT_FALSE(f.uptime.empty());
  EXPECT_FALSE(f.diskstats.empty());
}

TEST(WatchHost, IntervalFromTheRealSnapshots) {
  const HostInterval h = host_interval(snapshot("snap1"), snapshot("snap2"), 1.0, 100);
  // The clock comes from /proc/uptime: 5015.82 -> 5016.95.
  ASSERT_TRUE(h.cpu.mean_core_pct.has_value());
  ASSERT_EQ(h.cpu.core_busy_pct.size(), 2u);
  ASSERT_TRUE(h.cpu.busiest_core_pct.has_value());
  EXPECT_GE(*h.cpu.busiest_core_pct, *h.cpu.mean_core_pct);
  EXPECT_GT(*h.cpu.busiest_core_pct, 90.0);  // a build and a busy loop on 2 vCPUs
  ASSERT_TRUE(h.cpu.ctx_switches_per_s.has_value());
  EXPECT_GT(*h.cpu.ctx_switches_per_s, 0.0);

  // 3801 exited between the snapshots: three processes remain, the busy loop leads.
  EXPECT_TRUE(h.job.alive);
  EXPECT_EQ(h.job.processes, 3);
  ASSERT_FALSE(h.job.processes_detail.empty());
  EXPECT_EQ(h.job.processes_detail.front().pid, 3802);
  EXPECT_GT(h.job.processes_detail.front().cpu_pct, 10.0);  // it shared 2 vCPUs with a build
  EXPECT_GE(h.job.active_processes, 1);
  ASSERT_TRUE(h.job.cpu_pct.has_value());
  EXPECT_NEAR(*h.job.cpu_pct, h.job.processes_detail.front().cpu_pct, 5.0);

  // dd with oflag=direct: vda wrote 610304 sectors (298 MiB) in 1.13 s.
  ASSERT_TRUE(h.disk.busiest.has_value());
  EXPECT_EQ(*h.disk.busiest, "vda");
  ASSERT_TRUE(h.disk.write_mbps.has_value());
  EXPECT_NEAR(*h.disk.write_mbps, 610304.0 * 512 / 1.13 / 1e6, 1.0);
  ASSERT_TRUE(h.mem.available_gib.has_value());
  EXPECT_GT(*h.mem.available_gib, 1.0);
}

TEST(WatchHost, MissingFilesGiveEmptyFiguresNotZeros) {
  const HostInterval h = host_interval(HostSnapshot{}, HostSnapshot{}, 1.0, 100);
  EXPECT_FALSE(h.cpu.mean_core_pct.has_value());
  EXPECT_FALSE(h.job.alive);
  EXPECT_FALSE(h.job.cpu_pct.has_value());
  EXPECT_FALSE(h.disk.util_pct.has_value());
  EXPECT_FALSE(h.mem.available_gib.has_value());
}

TEST(WatchHost, CaptureRoundTripReplaysLikeTheLiveRead) {
  const fs::path dir = fs::temp_directory_path() / ("gb_capture_" + std::to_string(getpid()));
  fs::remove_all(dir);
  write_capture_roots(dir, {kRoot});
  int step = 0;
  for (const char* snap : {"snap1", "snap2"}) {
    HostReader reader(kWatchDir + "/" + snap, {kRoot});
    write_capture_step(dir, step++, reader.read(0));
  }
  EXPECT_EQ(capture_roots(dir), std::vector<int>{kRoot});
  ASSERT_EQ(capture_steps(dir).size(), 2u);

  const auto samples = replay_capture(dir);
  ASSERT_EQ(samples.size(), 1u);
  const HostInterval direct = host_interval(snapshot("snap1"), snapshot("snap2"), 1.0, 100);
  EXPECT_NEAR(samples[0].interval_s, 1.13, 1e-9);
  EXPECT_EQ(samples[0].job.processes, direct.job.processes);
  EXPECT_DOUBLE_EQ(*samples[0].cpu.mean_core_pct, *direct.cpu.mean_core_pct);
  EXPECT_DOUBLE_EQ(*samples[0].disk.write_mbps, *direct.disk.write_mbps);
  fs::remove_all(dir);
}

TEST(WatchHost, NotACaptureIsAClearError) {
  EXPECT_THROW(capture_steps(kWatchDir + "/no-such-dir"), std::exception);
  EXPECT_THROW(capture_roots(kWatchDir + "/snap1"), std::exception);
}

}  // namespace
}  // namespace gb::watch
