// test_watch_threads.cpp: the job's threads under `gpubase watch`: task stat parsing over a fake
// /proc tree, per-thread differencing (new, exited and reused tids), the busiest-thread pick,
// the watch.job.busiest_thread.cpu.pct result and series columns, and one live run where a
// named spinning thread of this process must come out as the busiest.
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/thread_name.hpp"
#include "sys/procfs.hpp"
#include "watch/host.hpp"
#include "watch/sampler.hpp"
#include "watch/series_io.hpp"
#include "watch/summary.hpp"

namespace gb::watch {
namespace {

namespace fs = std::filesystem;

// A /proc/<pid>/stat (or task stat) line with the fields the parser reads: utime (14), stime
// (15), num_threads (20), starttime (22) and rss (24).
std::string stat_line(int id, const std::string& comm, unsigned utime, unsigned stime,
                      unsigned starttime, int ppid = 1) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "%d (%s) S %d %d %d 0 -1 4194560 10 0 0 0 %u %u 0 0 20 0 2 0 %u 123456789 250 "
                "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n",
                id, comm.c_str(), ppid, id, id, utime, stime, starttime);
  return buf;
}

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

// A throw-away /proc tree under the temp directory, removed with the test.
class FakeProc {
 public:
  explicit FakeProc(const std::string& name)
      : root_(fs::temp_directory_path() /
              ("gb_threads_" + name + "_" + std::to_string(getpid()))) {
    fs::remove_all(root_);
  }
  ~FakeProc() { fs::remove_all(root_); }
  const fs::path& root() const { return root_; }
  std::string str() const { return root_.string(); }
  void uptime(double s) const { write(root_ / "uptime", std::to_string(s) + " 100.00\n"); }
  void process(int pid, const std::string& comm, int ppid = 1) const {
    write(root_ / std::to_string(pid) / "stat", stat_line(pid, comm, 0, 0, 500, ppid));
    write(root_ / std::to_string(pid) / "status", "Name:\t" + comm + "\nVmRSS:\t1024 kB\n");
  }
  void thread(int pid, int tid, const std::string& comm, unsigned utime, unsigned stime,
              unsigned starttime = 500) const {
    write(root_ / std::to_string(pid) / "task" / std::to_string(tid) / "stat",
          stat_line(tid, comm, utime, stime, starttime, 1));
  }

 private:
  fs::path root_;
};

sys::ThreadSample ts(int tid, const std::string& comm, std::uint64_t ticks,
                     std::uint64_t start) {
  return sys::ThreadSample{tid, comm, ticks, start};
}

// ---- parsing and reading --------------------------------------------------------------

TEST(ProcfsThreads, ReadsTaskStatsWithSpacesAndParenthesesInTheName) {
  FakeProc proc("read");
  proc.thread(800, 800, "gpubase", 40, 10);
  proc.thread(800, 812, "gb-load 3", 150, 50);
  proc.thread(800, 813, "a) (b", 7, 3, 900);
  write(proc.root() / "800" / "task" / "not-a-tid" / "stat", "junk");

  EXPECT_EQ(sys::list_threads(800, proc.str()), (std::vector<int>{800, 812, 813}));
  const auto threads = sys::read_threads(800, proc.str());
  ASSERT_EQ(threads.size(), 3u);
  EXPECT_EQ(threads.at(812).tid, 812);
  EXPECT_EQ(threads.at(812).comm, "gb-load 3");
  EXPECT_EQ(threads.at(812).cpu_ticks, 200u);  // utime + stime
  EXPECT_EQ(threads.at(812).starttime_ticks, 500u);
  EXPECT_EQ(threads.at(813).comm, "a) (b");  // ends at the last ')'
  EXPECT_EQ(threads.at(813).cpu_ticks, 10u);
  EXPECT_EQ(threads.at(813).starttime_ticks, 900u);

  EXPECT_FALSE(sys::parse_task_stat("not a stat line").has_value());
  EXPECT_TRUE(sys::read_threads(999, proc.str()).empty());  // a process that is gone
}

TEST(ProcfsThreads, ReadsAtMostTheCap) {
  FakeProc proc("cap");
  for (int tid = 800; tid < 810; ++tid) proc.thread(800, tid, "w", 1, 1);
  EXPECT_EQ(sys::list_threads(800, proc.str(), 4).size(), 4u);
  EXPECT_EQ(sys::read_threads(800, proc.str(), 4).size(), 4u);
  EXPECT_EQ(sys::read_threads(800, proc.str()).size(), 10u);
}

// ---- differencing ---------------------------------------------------------------------

TEST(ProcfsThreads, DifferencesOnlyThreadsSeenTwiceWithTheSameStart) {
  const std::map<int, sys::ThreadSample> earlier = {
      {1, ts(1, "main", 100, 10)},
      {2, ts(2, "exits", 50, 20)},
      {3, ts(3, "old", 0, 30)},
  };
  const std::map<int, sys::ThreadSample> later = {
      {1, ts(1, "main", 250, 10)},    // 150 ticks in 2 s at 100 Hz: 75 % of a core
      {3, ts(3, "reused", 5, 99)},    // tid 3 reused by a new thread: no baseline
      {4, ts(4, "appeared", 80, 120)},  // new: no baseline
  };
  const auto u = sys::threads_usage_between(earlier, later, 2.0, 100);
  ASSERT_EQ(u.size(), 3u);  // the exited tid 2 is left out
  EXPECT_EQ(u[0].tid, 1);
  EXPECT_FALSE(u[0].started);
  ASSERT_TRUE(u[0].cpu_pct.has_value());
  EXPECT_DOUBLE_EQ(*u[0].cpu_pct, 75.0);
  EXPECT_EQ(u[1].tid, 3);
  EXPECT_EQ(u[1].comm, "reused");
  EXPECT_TRUE(u[1].started);
  EXPECT_FALSE(u[1].cpu_pct.has_value());
  EXPECT_EQ(u[2].tid, 4);
  EXPECT_TRUE(u[2].started);
  EXPECT_FALSE(u[2].cpu_pct.has_value());

  // No clock or no interval: no rate, never a 0.
  EXPECT_FALSE(sys::threads_usage_between(earlier, later, 2.0, 0)[0].cpu_pct.has_value());
  EXPECT_FALSE(sys::threads_usage_between(earlier, later, 0.0, 100)[0].cpu_pct.has_value());
  // A counter that went backwards gives no rate either.
  const std::map<int, sys::ThreadSample> back = {{1, ts(1, "main", 90, 10)}};
  EXPECT_FALSE(sys::threads_usage_between(earlier, back, 1.0, 100)[0].cpu_pct.has_value());
}

// ---- the busiest thread of the job ----------------------------------------------------

HostSnapshot snapshot_with(std::map<int, std::map<int, sys::ThreadSample>> threads,
                           std::map<int, std::string> processes) {
  HostSnapshot s;
  for (const auto& [pid, comm] : processes) {
    sys::ProcessSample p;
    p.stat.pid = pid;
    p.stat.comm = comm;
    s.processes.emplace(pid, p);
  }
  s.threads = std::move(threads);
  return s;
}

TEST(WatchThreads, PicksTheBusiestThreadOverTheJobsProcesses) {
  const HostSnapshot a = snapshot_with(
      {{100, {{100, ts(100, "python", 0, 5)}, {105, ts(105, "pt_main_thread", 0, 6)}}},
       {200, {{200, ts(200, "pt_data_worker", 0, 7)}}},
       {300, {{300, ts(300, "gone", 0, 8)}}}},
      {{100, "python"}, {200, "pt_data_worker"}, {300, "gone"}});
  const HostSnapshot b = snapshot_with(
      {{100, {{100, ts(100, "python", 10, 5)}, {105, ts(105, "pt_main_thread", 99, 6)}}},
       {200, {{200, ts(200, "pt_data_worker", 60, 7)}}},
       {300, {{300, ts(300, "gone", 500, 8)}}}},    // its process left the job's snapshot
      {{100, "python"}, {200, "pt_data_worker"}});
  const auto t = busiest_thread(a, b, 1.0, 100);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->pid, 100);
  EXPECT_EQ(t->tid, 105);
  EXPECT_EQ(t->comm, "pt_main_thread");
  EXPECT_EQ(t->process_comm, "python");
  EXPECT_DOUBLE_EQ(t->cpu_pct, 99.0);

  // Ties go to the lower pid, then tid; threads without a baseline are no candidates.
  const HostSnapshot tie = snapshot_with(
      {{100, {{100, ts(100, "python", 60, 5)}, {105, ts(105, "pt_main_thread", 60, 6)}}},
       {200, {{200, ts(200, "pt_data_worker", 60, 7)}, {201, ts(201, "new", 900, 9)}}}},
      {{100, "python"}, {200, "pt_data_worker"}});
  EXPECT_EQ(busiest_thread(a, tie, 1.0, 100)->tid, 100);

  // Nothing to difference: no busiest thread (not a 0 % one).
  EXPECT_FALSE(busiest_thread(HostSnapshot{}, b, 1.0, 100).has_value());
  EXPECT_FALSE(host_interval(HostSnapshot{}, HostSnapshot{}, 1.0, 100).job.busiest_thread);
}

// Two moments of a fake /proc tree read through HostReader, directly and through a capture.
TEST(WatchThreads, HostReaderReadsTheThreadsAndCapturesThem) {
  FakeProc proc("host");
  proc.process(800, "gpubase");
  proc.process(801, "child", 800);
  auto moment = [&](double uptime, unsigned main_ticks, unsigned load_ticks) {
    proc.uptime(uptime);
    proc.thread(800, 800, "gpubase", main_ticks, 0);
    proc.thread(800, 812, "gb-load 3", load_ticks, 0);
    proc.thread(801, 801, "child", 0, 0);
  };
  const fs::path capture = proc.root() / "capture";
  write_capture_roots(capture, {800});

  moment(100.0, 10, 20);
  HostReader reader(proc.str(), {800});
  const HostFiles f1 = reader.read(0);
  ASSERT_EQ(f1.processes.size(), 2u);
  EXPECT_EQ(f1.processes.at(800).tasks.size(), 2u);
  const HostSnapshot s1 = parse_host_files(f1);
  write_capture_step(capture, 0, f1);

  moment(102.0, 30, 200);  // 2 s: the main thread 10 %, gb-load 3 90 %
  const HostFiles f2 = reader.read(1);
  const HostSnapshot s2 = parse_host_files(f2);
  write_capture_step(capture, 1, f2);

  const HostInterval h = host_interval(s1, s2, 1.0, 100);
  ASSERT_TRUE(h.job.busiest_thread.has_value());
  EXPECT_EQ(h.job.busiest_thread->tid, 812);
  EXPECT_EQ(h.job.busiest_thread->pid, 800);
  EXPECT_EQ(h.job.busiest_thread->comm, "gb-load 3");
  EXPECT_EQ(h.job.busiest_thread->process_comm, "gpubase");
  EXPECT_NEAR(h.job.busiest_thread->cpu_pct, 90.0, 1e-9);

  const auto replayed = replay_capture(capture);
  ASSERT_EQ(replayed.size(), 1u);
  ASSERT_TRUE(replayed[0].job.busiest_thread.has_value());
  EXPECT_EQ(replayed[0].job.busiest_thread->tid, 812);
  EXPECT_EQ(replayed[0].job.busiest_thread->comm, "gb-load 3");
}

// ---- the run result and the series ----------------------------------------------------

WatchSample job_sample(double t, std::optional<ThreadInterval> thread) {
  WatchSample s;
  s.t_s = t;
  s.interval_s = 1.0;
  s.job.alive = true;
  s.job.cpu_pct = 100;
  s.job.processes = 1;
  s.job.busiest_thread = std::move(thread);
  return s;
}

ThreadInterval thread(int pid, int tid, const std::string& comm, double pct) {
  return ThreadInterval{pid, tid, comm, "gpubase", pct};
}

const Result* find(const std::vector<Result>& results, const std::string& key) {
  for (const Result& r : results)
    if (r.key == key) return &r;
  return nullptr;
}

TEST(WatchSummaryThreads, BusiestThreadIsTheMeanAndNamesTheMostFrequent) {
  WatchSummary summary;
  int t = 0;
  for (int i = 0; i < 4; ++i) summary.add(job_sample(++t, thread(800, 812, "gb-load 3", 90)));
  summary.add(job_sample(++t, thread(800, 800, "gpubase", 50)));
  summary.add(job_sample(++t, thread(800, 800, "gpubase", 0)));  // idle: credits no thread
  summary.add(job_sample(++t, std::nullopt));                     // no figure: not counted
  const auto results = summary.results(SummaryContext{});
  const Result* r = find(results, "watch.job.busiest_thread.cpu.pct");
  ASSERT_NE(r, nullptr);
  ASSERT_TRUE(r->value.has_value());
  EXPECT_NEAR(*r->value, (4 * 90.0 + 50 + 0) / 6, 1e-9);
  EXPECT_EQ(r->unit, "%");
  EXPECT_EQ(*r->text_param("thread"),
            "gb-load 3 (tid 812 of pid 800, busiest in 4 of 6 intervals)");
  EXPECT_EQ(*r->text_param("process"), "gpubase");
  EXPECT_EQ(r->number_param("tid"), 812.0);
  EXPECT_EQ(r->number_param("pid"), 800.0);
}

TEST(WatchSummaryThreads, NoThreadFiguresIsSkippedWithAReason) {
  WatchSummary summary;
  summary.add(job_sample(1, std::nullopt));
  const auto results = summary.results(SummaryContext{});
  const Result* r = find(results, "watch.job.busiest_thread.cpu.pct");
  ASSERT_NE(r, nullptr);
  EXPECT_FALSE(r->value.has_value());
  EXPECT_EQ(r->status, Status::skipped);
  EXPECT_NE(r->reason.find("threads"), std::string::npos);
}

TEST(WatchSummaryThreads, ManyShortLivedBusiestThreadsStayBounded) {
  SampleAccumulator acc;
  for (int i = 0; i < 5000; ++i) acc.add(job_sample(i + 1, thread(800, 10000 + i, "short", 80)));
  for (int i = 0; i < 3; ++i) acc.add(job_sample(6000 + i, thread(800, 812, "gb-load 3", 95)));
  const auto results = acc.results(SummaryContext{});
  const Result* r = find(results, "watch.job.busiest_thread.cpu.pct");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(*r->text_param("thread"),
            "gb-load 3 (tid 812 of pid 800, busiest in 3 of 5003 intervals)");
}

TEST(WatchSeriesThreads, ColumnsCarryTheBusiestThread) {
  WatchSample s = job_sample(1, thread(800, 812, "gb,load \"3\"", 91.5));
  const std::string header = csv_header();
  EXPECT_TRUE(header.ends_with(",job_busiest_thread")) << header;
  EXPECT_NE(header.find(",job_busiest_thread_pct,"), std::string::npos);
  const std::string row = csv_row(s);
  EXPECT_TRUE(row.ends_with(",gb_load _3_ (tid 812 of pid 800)")) << row;  // one cell
  EXPECT_NE(row.find(",91.5,"), std::string::npos);

  const auto j = nlohmann::json::parse(jsonl_line(s));
  EXPECT_DOUBLE_EQ(j.at("job_busiest_thread_pct").get<double>(), 91.5);
  EXPECT_EQ(j.at("job_busiest_thread").get<std::string>(), "gb,load \"3\" (tid 812 of pid 800)");
  const auto none = nlohmann::json::parse(jsonl_line(job_sample(1, std::nullopt)));
  EXPECT_TRUE(none.at("job_busiest_thread_pct").is_null());
  EXPECT_TRUE(none.at("job_busiest_thread").is_null());
}

// ---- live: a named spinning thread of this process ------------------------------------

TEST(WatchThreadsLive, ASpinningNamedThreadIsTheBusiest) {
  std::atomic<bool> stop{false};
  std::atomic<int> spin_tid{0};
  std::thread spinner([&] {
    name_this_thread("gb-spin");
    spin_tid.store(static_cast<int>(::syscall(SYS_gettid)));
    volatile std::uint64_t n = 0;
    while (!stop.load(std::memory_order_relaxed)) n = n + 1;
  });
  while (spin_tid.load() == 0) std::this_thread::yield();

  long clk_tck = sysconf(_SC_CLK_TCK);
  if (clk_tck <= 0) clk_tck = 100;
  HostReader reader("/proc", {static_cast<int>(getpid())});
  const HostSnapshot a = parse_host_files(reader.read(0));
  const auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const HostSnapshot b = parse_host_files(reader.read(1));
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  stop = true;
  spinner.join();

  const auto busiest = host_interval(a, b, wall_s, clk_tck).job.busiest_thread;
  ASSERT_TRUE(busiest.has_value());
  EXPECT_EQ(busiest->comm, "gb-spin");
  EXPECT_EQ(busiest->tid, spin_tid.load());
  EXPECT_EQ(busiest->pid, static_cast<int>(getpid()));
  EXPECT_GT(busiest->cpu_pct, 50.0);  // lenient: 2 shared cores
}

}  // namespace
}  // namespace gb::watch
