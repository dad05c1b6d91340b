// test_sys_procfs.cpp: /proc/stat, /proc/meminfo and /proc/<pid> parsers and rates for
// `gpubase watch`, over two snapshots captured ~1.13 s apart on a real machine while dd and a
// busy loop ran (tests/fixtures/proc/watch; README.md there says how).
#include <gtest/gtest.h>

#include "fixture_file.hpp"

#include <fstream>
#include <sstream>
#include <string>

#include "sys/procfs.hpp"

namespace gb::sys {
namespace {

const std::string kWatch = std::string(GPUBASE_FIXTURES_DIR) + "/proc/watch";

// The captured tree: bash 3799 -> { "a) (b" 3801 (killed between the snapshots),
// bash busy loop 3802 -> sleep 3803 }.
constexpr int kRoot = 3799, kWeird = 3801, kBusy = 3802, kSleep = 3803;

// snap2/uptime 5016.95 - snap1/uptime 5015.82
constexpr double kIntervalS = 1.13;

// ---- /proc/stat ---------------------------------------------------------------------------

TEST(ParseProcStat, ReadsAggregatePerCpuAndCounters) {
  const CpuTimes t = parse_proc_stat(test::read_fixture("proc/watch/snap1/stat"));
  ASSERT_TRUE(t.aggregate.has_value());
  // "cpu  478262 0 34661 484691 2747 0 335 1470 0 0"
  EXPECT_EQ(t.aggregate->user, 478262u);
  EXPECT_EQ(t.aggregate->system, 34661u);
  EXPECT_EQ(t.aggregate->idle, 484691u);
  EXPECT_EQ(t.aggregate->iowait, 2747u);
  EXPECT_EQ(t.aggregate->softirq, 335u);
  EXPECT_EQ(t.aggregate->steal, 1470u);
  ASSERT_EQ(t.per_cpu.size(), 2u);
  EXPECT_EQ(t.per_cpu.at(1).user, 245583u);
  EXPECT_EQ(t.context_switches, 1803493u);
  EXPECT_EQ(t.procs_running, 6);
  EXPECT_EQ(t.procs_blocked, 1);
}

TEST(CpuUsageBetween, TotalSharesAreOfTheElapsedTicks) {
  const CpuUsage u = cpu_usage_between(parse_proc_stat(test::read_fixture("proc/watch/snap1/stat")),
                                       parse_proc_stat(test::read_fixture("proc/watch/snap2/stat")), kIntervalS);
  ASSERT_TRUE(u.total.has_value());
  // Deltas: user 478420-478262 = 158, system 34677-34661 = 16, idle 0, iowait 0, softirq 0,
  // steal 1516-1470 = 46; total 220 ticks (2 CPUs x ~1.1 s).
  EXPECT_NEAR(u.total->user_pct, 158.0 / 220 * 100, 1e-9);   // 71.82
  EXPECT_NEAR(u.total->system_pct, 16.0 / 220 * 100, 1e-9);  // 7.27
  EXPECT_NEAR(u.total->steal_pct, 46.0 / 220 * 100, 1e-9);   // 20.91: a busy VM host
  EXPECT_NEAR(u.total->iowait_pct, 0.0, 1e-9);
  EXPECT_NEAR(u.total->busy_pct, 100.0, 1e-9);                // idle + iowait did not advance
}

TEST(CpuUsageBetween, PerCoreSharesUseEachCoresTicks) {
  const CpuUsage u = cpu_usage_between(parse_proc_stat(test::read_fixture("proc/watch/snap1/stat")),
                                       parse_proc_stat(test::read_fixture("proc/watch/snap2/stat")), kIntervalS);
  ASSERT_EQ(u.per_cpu.size(), 2u);
  // cpu0: user 232759-232678 = 81, system 16843-16837 = 6, steal 724-701 = 23; total 110.
  EXPECT_NEAR(u.per_cpu.at(0).user_pct, 81.0 / 110 * 100, 1e-9);
  EXPECT_NEAR(u.per_cpu.at(0).steal_pct, 23.0 / 110 * 100, 1e-9);
  // cpu1: user 245661-245583 = 78, system 17833-17823 = 10, steal 791-768 = 23; total 111.
  EXPECT_NEAR(u.per_cpu.at(1).user_pct, 78.0 / 111 * 100, 1e-9);
  EXPECT_NEAR(u.per_cpu.at(1).system_pct, 10.0 / 111 * 100, 1e-9);
}

TEST(CpuUsageBetween, ContextSwitchesPerSecondAndRunQueue) {
  const CpuUsage u = cpu_usage_between(parse_proc_stat(test::read_fixture("proc/watch/snap1/stat")),
                                       parse_proc_stat(test::read_fixture("proc/watch/snap2/stat")), kIntervalS);
  // ctxt 1804627 - 1803493 = 1134 over 1.13 s = 1003.5/s
  ASSERT_TRUE(u.context_switches_per_s.has_value());
  EXPECT_NEAR(*u.context_switches_per_s, 1134 / 1.13, 1e-9);
  EXPECT_EQ(u.procs_running, 6);
  EXPECT_EQ(u.procs_blocked, 1);
}

TEST(CpuUsageBetween, BusyExcludesIdleAndIowait) {
  const CpuTimes a = parse_proc_stat("cpu 100 0 100 100 100 0 0 0\n");
  // +30 user, +10 system, +40 idle, +20 iowait = 100 ticks: busy = 100 - 40 - 20 = 40 %.
  const CpuTimes b = parse_proc_stat("cpu 130 0 110 140 120 0 0 0\n");
  const CpuUsage u = cpu_usage_between(a, b, 1.0);
  ASSERT_TRUE(u.total.has_value());
  EXPECT_NEAR(u.total->busy_pct, 40.0, 1e-9);
  EXPECT_NEAR(u.total->iowait_pct, 20.0, 1e-9);
}

TEST(CpuUsageBetween, ZeroIntervalGivesNoRateButStillShares) {
  const CpuTimes a = parse_proc_stat(test::read_fixture("proc/watch/snap1/stat"));
  const CpuTimes b = parse_proc_stat(test::read_fixture("proc/watch/snap2/stat"));
  const CpuUsage u = cpu_usage_between(a, b, 0.0);
  EXPECT_FALSE(u.context_switches_per_s.has_value());
  EXPECT_TRUE(u.total.has_value());
}

TEST(CpuUsageBetween, SameSampleTwiceHasNoShares) {
  const CpuTimes a = parse_proc_stat(test::read_fixture("proc/watch/snap1/stat"));
  const CpuUsage u = cpu_usage_between(a, a, 1.0);
  EXPECT_FALSE(u.total.has_value());  // 0 ticks elapsed: no 0/0
  EXPECT_TRUE(u.per_cpu.empty());
  EXPECT_EQ(u.context_switches_per_s, 0.0);
}

TEST(CpuUsageBetween, CounterThatWentBackwardsIsLeftOut) {
  // cpu1 hot-plugged off and on between samples: its counters restarted.
  const CpuTimes a = parse_proc_stat("cpu0 100 0 100 100 0 0 0 0\ncpu1 500 0 500 500 0 0 0 0\n");
  const CpuTimes b = parse_proc_stat("cpu0 150 0 100 150 0 0 0 0\ncpu1 10 0 10 10 0 0 0 0\n");
  const CpuUsage u = cpu_usage_between(a, b, 1.0);
  ASSERT_EQ(u.per_cpu.size(), 1u);
  EXPECT_NEAR(u.per_cpu.at(0).user_pct, 50.0, 1e-9);
}

TEST(ReadProcStat, ReadsFromTheGivenRoot) {
  const auto t = read_proc_stat(kWatch + "/snap2");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->context_switches, 1804627u);
  EXPECT_FALSE(read_proc_stat(kWatch + "/no_such_dir").has_value());
}

// ---- meminfo, loadavg, uptime -------------------------------------------------------------

TEST(ParseMeminfo, ReadsTheWatchedFieldsInBytes) {
  const MemInfo m = parse_meminfo(test::read_fixture("proc/watch/snap1/meminfo"));
  EXPECT_EQ(m.total_bytes, 24683584ULL * 1024);
  EXPECT_EQ(m.available_bytes, 23944656ULL * 1024);
  EXPECT_EQ(m.cached_bytes, 571184ULL * 1024);  // "Cached:", not "SwapCached:"
  EXPECT_EQ(m.buffers_bytes, 3200ULL * 1024);
  EXPECT_EQ(m.dirty_bytes, 17564ULL * 1024);
}

TEST(ParseMeminfo, MissingFieldsStayEmpty) {
  const MemInfo m = parse_meminfo("MemTotal: 1000 kB\n");  // pre-3.14 kernels lack MemAvailable
  EXPECT_EQ(m.total_bytes, 1024000u);
  EXPECT_FALSE(m.available_bytes.has_value());
  EXPECT_FALSE(m.dirty_bytes.has_value());
}

TEST(ParseLoadavg, ReadsLoadsAndTaskCounts) {
  const auto l = parse_loadavg(test::read_fixture("proc/watch/snap1/loadavg"));  // "2.65 0.94 1.05 6/114 3848"
  ASSERT_TRUE(l.has_value());
  EXPECT_DOUBLE_EQ(l->load_1m, 2.65);
  EXPECT_DOUBLE_EQ(l->load_15m, 1.05);
  EXPECT_EQ(l->runnable_tasks, 6);
  EXPECT_EQ(l->total_tasks, 114);
  EXPECT_FALSE(parse_loadavg("garbage").has_value());
}

TEST(ParseUptime, FirstFieldIsSecondsSinceBoot) {
  EXPECT_DOUBLE_EQ(*parse_uptime_s(test::read_fixture("proc/watch/snap2/uptime")), 5016.95);
  EXPECT_FALSE(parse_uptime_s("").has_value());
}

// ---- /proc/<pid> ----------------------------------------------------------------------------

TEST(ParsePidStat, CommWithParenthesesEndsAtTheLastParen) {
  const auto s = parse_pid_stat(test::read_fixture("proc/watch/snap1/3801/stat"));  // a real "a) (b" process
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->pid, kWeird);
  EXPECT_EQ(s->comm, "a) (b");
  EXPECT_EQ(s->state, 'S');
  EXPECT_EQ(s->ppid, kRoot);
  EXPECT_EQ(s->num_threads, 1);
  EXPECT_EQ(s->starttime_ticks, 501399u);
  EXPECT_EQ(s->rss_pages, 395);
}

TEST(ParsePidStat, ReadsCpuTicksOfTheBusyLoop) {
  const auto s = parse_pid_stat(test::read_fixture("proc/watch/snap2/3802/stat"));
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->comm, "bash");
  EXPECT_EQ(s->state, 'R');
  EXPECT_EQ(s->utime_ticks, 68u);
  EXPECT_EQ(s->stime_ticks, 13u);
}

TEST(ParsePidStat, RejectsTruncatedText) {
  EXPECT_FALSE(parse_pid_stat("42 (x) S 1 2 3").has_value());
  EXPECT_FALSE(parse_pid_stat("").has_value());
}

TEST(ParsePidStatus, ReadsContextSwitchesAndRss) {
  const ProcStatus s = parse_pid_status(test::read_fixture("proc/watch/snap1/3802/status"));
  EXPECT_EQ(s.voluntary_ctxt_switches, 0u);
  EXPECT_EQ(s.nonvoluntary_ctxt_switches, 242u);
  EXPECT_EQ(s.vm_rss_bytes, 3132ULL * 1024);
}

TEST(ParsePidStatus, KernelThreadHasNoRss) {
  const ProcStatus s = parse_pid_status("Name:\tkworker\nvoluntary_ctxt_switches:\t5\n");
  EXPECT_FALSE(s.vm_rss_bytes.has_value());
  EXPECT_EQ(s.voluntary_ctxt_switches, 5u);
}

TEST(ProcessTree, FindsRootAndAllDescendants) {
  EXPECT_EQ(process_tree(kRoot, kWatch + "/snap1"),
            (std::vector<int>{kRoot, kWeird, kBusy, kSleep}));  // 3803 is a grandchild
}

TEST(ProcessTree, ExitedChildIsGoneFromTheLaterTree) {
  EXPECT_EQ(process_tree(kRoot, kWatch + "/snap2"), (std::vector<int>{kRoot, kBusy, kSleep}));
}

TEST(ProcessTree, UnknownRootGivesEmptyTree) {
  EXPECT_TRUE(process_tree(999999, kWatch + "/snap1").empty());
  EXPECT_TRUE(process_tree(kRoot, kWatch + "/no_such_dir").empty());
}

TEST(ProcessUsageBetween, BusyLoopCpuAndInvoluntarySwitches) {
  const auto a = read_process(kBusy, kWatch + "/snap1");
  const auto b = read_process(kBusy, kWatch + "/snap2");
  ASSERT_TRUE(a && b);
  const ProcessUsage u = process_usage_between(*a, *b, kIntervalS, 100);
  EXPECT_FALSE(u.exited);
  // (utime + stime) 68+13 - (45+9) = 27 ticks = 0.27 s of CPU in 1.13 s = 23.9 % of a core
  // (the 2-vCPU VM was also compiling and writing with dd).
  ASSERT_TRUE(u.cpu_pct.has_value());
  EXPECT_NEAR(*u.cpu_pct, 0.27 / 1.13 * 100, 1e-9);
  // nonvoluntary 372 - 242 = 130 in 1.13 s = 115.0/s (preempted); voluntary 0 - 0.
  EXPECT_NEAR(*u.nonvoluntary_ctxt_switches_per_s, 130 / 1.13, 1e-9);
  EXPECT_NEAR(*u.voluntary_ctxt_switches_per_s, 0.0, 1e-9);
  EXPECT_EQ(u.num_threads, 1);
  EXPECT_EQ(u.rss_bytes, 3132ULL * 1024);  // VmRSS of the later sample
}

TEST(ProcessUsageBetween, PidReusedByAnotherProcessCountsAsExited) {
  auto a = read_process(kBusy, kWatch + "/snap1");
  auto b = read_process(kBusy, kWatch + "/snap2");
  ASSERT_TRUE(a && b);
  b->stat.starttime_ticks += 1000;  // same pid, started later: not the process we sampled
  const ProcessUsage u = process_usage_between(*a, *b, kIntervalS, 100);
  EXPECT_TRUE(u.exited);
  EXPECT_FALSE(u.cpu_pct.has_value());
}

TEST(ProcessUsageBetween, ZeroIntervalGivesNoRates) {
  const auto a = read_process(kBusy, kWatch + "/snap1");
  const auto b = read_process(kBusy, kWatch + "/snap2");
  ASSERT_TRUE(a && b);
  const ProcessUsage u = process_usage_between(*a, *b, 0.0, 100);
  EXPECT_FALSE(u.cpu_pct.has_value());
  EXPECT_FALSE(u.nonvoluntary_ctxt_switches_per_s.has_value());
  EXPECT_EQ(u.rss_bytes, 3132ULL * 1024);
}

TEST(ProcessUsageBetween, RssFallsBackToStatPagesWithoutVmRss) {
  auto a = read_process(kSleep, kWatch + "/snap1");
  auto b = read_process(kSleep, kWatch + "/snap2");
  ASSERT_TRUE(a && b);
  b->status.vm_rss_bytes.reset();
  // stat rss 394 pages x 4096 (VmRSS said 1752 kB = 438 pages: it also counts shmem)
  EXPECT_EQ(process_usage_between(*a, *b, kIntervalS, 100, 4096).rss_bytes, 394ULL * 4096);
}

TEST(ProcessesUsageBetween, ProcessThatVanishedIsReportedAsExited) {
  const auto a = read_processes(process_tree(kRoot, kWatch + "/snap1"), kWatch + "/snap1");
  // The later read asks for the earlier tree's pids; 3801 is gone and simply absent.
  const auto b = read_processes({kRoot, kWeird, kBusy, kSleep}, kWatch + "/snap2");
  ASSERT_EQ(a.size(), 4u);
  ASSERT_EQ(b.size(), 3u);
  const std::vector<ProcessUsage> u = processes_usage_between(a, b, kIntervalS, 100);
  ASSERT_EQ(u.size(), 4u);
  EXPECT_EQ(u[1].pid, kWeird);
  EXPECT_TRUE(u[1].exited);
  EXPECT_EQ(u[1].comm, "a) (b");
  EXPECT_FALSE(u[1].cpu_pct.has_value());
  EXPECT_FALSE(u[0].exited);
  // root bash: voluntary 2 - 1 = 1 in 1.13 s
  EXPECT_NEAR(*u[0].voluntary_ctxt_switches_per_s, 1 / 1.13, 1e-9);
}

TEST(ProcessesUsageBetween, ProcessOnlyInLaterSampleIsStartedWithoutRates) {
  const auto b = read_processes({kBusy}, kWatch + "/snap2");
  const std::vector<ProcessUsage> u = processes_usage_between({}, b, kIntervalS, 100);
  ASSERT_EQ(u.size(), 1u);
  EXPECT_TRUE(u[0].started);
  EXPECT_FALSE(u[0].cpu_pct.has_value());
  EXPECT_EQ(u[0].rss_bytes, 3132ULL * 1024);
}

TEST(ReadProcess, MissingPidIsEmpty) {
  EXPECT_FALSE(read_process(kWeird, kWatch + "/snap2").has_value());
}

}  // namespace
}  // namespace gb::sys
