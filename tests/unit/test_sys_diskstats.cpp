// test_sys_diskstats.cpp: /proc/diskstats parser and iostat -x rates, over two snapshots
// captured ~1.13 s apart while `dd oflag=direct` wrote to vda (tests/fixtures/proc/watch).
#include <gtest/gtest.h>

#include "fixture_file.hpp"

#include <fstream>
#include <sstream>
#include <string>

#include "sys/diskstats.hpp"

namespace gb::sys {
namespace {

const std::string kWatch = std::string(GPUBASE_FIXTURES_DIR) + "/proc/watch";

constexpr double kIntervalS = 1.13;  // snap2/uptime 5016.95 - snap1/uptime 5015.82

TEST(ParseDiskstats, KeepsWholeDisksAndSkipsLoopAndRamDevices) {
  const DiskStats d = parse_diskstats(test::read_fixture("proc/watch/snap1/diskstats"));
  // The file lists loop0..loop7, vda and zram0.
  ASSERT_EQ(d.size(), 1u);
  const DiskCounters& vda = d.at("vda");
  // "254 0 vda 146519 26952 11163522 105359 21423 27964 10594432 39918 1 48704 156069 ..."
  EXPECT_EQ(vda.major, 254);
  EXPECT_EQ(vda.reads_completed, 146519u);
  EXPECT_EQ(vda.sectors_written, 10594432u);
  EXPECT_EQ(vda.write_ms, 39918u);
  EXPECT_EQ(vda.in_flight, 1u);
  EXPECT_EQ(vda.io_ticks_ms, 48704u);
  EXPECT_EQ(vda.weighted_io_ms, 156069u);
}

TEST(ParseDiskstats, FilterCanKeepVirtualDevices) {
  DiskFilter all;
  all.include_virtual = true;
  EXPECT_EQ(parse_diskstats(test::read_fixture("proc/watch/snap1/diskstats"), all).size(), 10u);
}

TEST(ParseDiskstats, SkipsPartitionsButKeepsMdAndDm) {
  const std::string text =
      "259 0 nvme0n1 1 0 8 0 1 0 8 0 0 0 0\n"
      "259 1 nvme0n1p1 1 0 8 0 1 0 8 0 0 0 0\n"
      "8 0 sda 1 0 8 0 1 0 8 0 0 0 0\n"
      "8 1 sda1 1 0 8 0 1 0 8 0 0 0 0\n"
      "9 0 md0 1 0 8 0 1 0 8 0 0 0 0\n"
      "253 0 dm-0 1 0 8 0 1 0 8 0 0 0 0\n"
      "179 1 mmcblk0p1 1 0 8 0 1 0 8 0 0 0 0\n";
  const DiskStats d = parse_diskstats(text);
  EXPECT_EQ(d.size(), 4u);
  EXPECT_TRUE(d.count("nvme0n1") && d.count("sda") && d.count("md0") && d.count("dm-0"));
}

TEST(IsPartitionName, RecognisesCommonSchemes) {
  EXPECT_TRUE(is_partition_name("sda1"));
  EXPECT_TRUE(is_partition_name("vda15"));
  EXPECT_TRUE(is_partition_name("xvdf1"));
  EXPECT_TRUE(is_partition_name("nvme10n1p3"));
  EXPECT_FALSE(is_partition_name("sdaa"));
  EXPECT_FALSE(is_partition_name("nvme0n1"));
  EXPECT_FALSE(is_partition_name("mmcblk0"));
  EXPECT_FALSE(is_partition_name("md127"));
  EXPECT_FALSE(is_partition_name("dm-3"));
}

TEST(DiskUsageBetween, DirectWritesMatchIostatFormulas) {
  const DiskStats a = parse_diskstats(test::read_fixture("proc/watch/snap1/diskstats"));
  const DiskStats b = parse_diskstats(test::read_fixture("proc/watch/snap2/diskstats"));
  const DiskUsage u = disk_usage_between(a.at("vda"), b.at("vda"), kIntervalS);
  ASSERT_TRUE(u.reads_per_s && u.writes_per_s && u.read_kb_per_s && u.write_kb_per_s &&
              u.r_await_ms && u.w_await_ms && u.aqu_sz && u.util_pct);
  EXPECT_FALSE(u.reset);
  // writes 21721 - 21423 = 298 -> 298 / 1.13 = 263.7 w/s; no reads.
  EXPECT_NEAR(*u.writes_per_s, 298 / 1.13, 1e-9);
  EXPECT_NEAR(*u.reads_per_s, 0.0, 1e-9);
  // sectors 11204736 - 10594432 = 610304 x 512 B = 305152 kB -> 270046 kB/s (~1 MiB each,
  // dd's bs=1M).
  EXPECT_NEAR(*u.write_kb_per_s, 610304 / 2.0 / 1.13, 1e-6);
  EXPECT_NEAR(*u.read_kb_per_s, 0.0, 1e-9);
  // w_await = write ms (40498 - 39918 = 580) / 298 writes = 1.946 ms; no reads -> 0.
  EXPECT_NEAR(*u.w_await_ms, 580.0 / 298, 1e-9);
  EXPECT_NEAR(*u.r_await_ms, 0.0, 1e-9);
  // aqu-sz = weighted ms (156648 - 156069 = 579) / 1130 ms = 0.512
  EXPECT_NEAR(*u.aqu_sz, 579.0 / 1130, 1e-9);
  // %util = io_ticks (49172 - 48704 = 468) / 1130 ms = 41.4 %
  EXPECT_NEAR(*u.util_pct, 468.0 / 1130 * 100, 1e-9);
}

TEST(DiskUsageBetween, ZeroIntervalGivesNoRates) {
  const DiskStats a = parse_diskstats(test::read_fixture("proc/watch/snap1/diskstats"));
  const DiskStats b = parse_diskstats(test::read_fixture("proc/watch/snap2/diskstats"));
  const DiskUsage u = disk_usage_between(a.at("vda"), b.at("vda"), 0.0);
  EXPECT_FALSE(u.writes_per_s || u.w_await_ms || u.aqu_sz || u.util_pct);
  EXPECT_FALSE(u.reset);
}

TEST(DiskUsageBetween, CounterWrapIsReportedNotTurnedIntoAHugeRate) {
  const DiskStats a = parse_diskstats(test::read_fixture("proc/watch/snap1/diskstats"));
  DiskCounters later = a.at("vda");
  later.sectors_written = 5;  // 32-bit counters wrap on old kernels; re-created devices restart
  const DiskUsage u = disk_usage_between(a.at("vda"), later, kIntervalS);
  EXPECT_TRUE(u.reset);
  EXPECT_FALSE(u.write_kb_per_s.has_value());
}

TEST(DiskUsageBetween, UtilIsCappedAtOneHundred) {
  // io_ticks can run a little ahead of the wall clock we measured the interval with.
  const DiskStats a = parse_diskstats("8 0 sda 0 0 0 0 0 0 0 0 0 0 0\n");
  const DiskStats b = parse_diskstats("8 0 sda 0 0 0 0 0 0 0 0 0 1010 0\n");
  EXPECT_DOUBLE_EQ(*disk_usage_between(a.at("sda"), b.at("sda"), 1.0).util_pct, 100.0);
}

TEST(DisksUsageBetween, DeviceOnlyInLaterSampleIsAppeared) {
  const DiskStats a = parse_diskstats(test::read_fixture("proc/watch/snap1/diskstats"));
  const DiskStats b = parse_diskstats(test::read_fixture("proc/watch/snap2/diskstats") +
                                      "8 0 sda 10 0 80 1 0 0 0 0 0 1 1\n");  // hot-plugged
  const std::vector<DiskUsage> u = disks_usage_between(a, b, kIntervalS);
  ASSERT_EQ(u.size(), 2u);
  EXPECT_EQ(u[0].name, "sda");
  EXPECT_TRUE(u[0].appeared);
  EXPECT_FALSE(u[0].reads_per_s.has_value());
  EXPECT_EQ(u[1].name, "vda");
  EXPECT_FALSE(u[1].appeared);
  EXPECT_TRUE(u[1].util_pct.has_value());
}

TEST(ReadDiskstats, ReadsFromTheGivenRoot) {
  const auto d = read_diskstats(kWatch + "/snap2");
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->at("vda").writes_completed, 21721u);
  EXPECT_FALSE(read_diskstats(kWatch + "/no_such_dir").has_value());
}

}  // namespace
}  // namespace gb::sys
