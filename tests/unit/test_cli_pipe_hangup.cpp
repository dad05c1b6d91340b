// tests/unit/test_cli_pipe_hangup.cpp: gpubase (cli::main, in a forked child, as the binary
// runs it) under a closed pipe and a hang-up. A report written into a pipe nobody reads
// (`gpubase dataset info SET | head -1`, `gpubase watch --json ... | head -c 10`) is a failed
// write, exit 4, never a death by SIGPIPE, and a run is saved whole before it is printed; a
// SIGHUP (a closed terminal, a dropped ssh session) ends `watch` with its report and the run
// saved, and its job does not outlive it. A report or run that cannot be written whole (a full
// disk; here a file-size limit) leaves the file it was to replace as it was, never a part.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "cli/app.hpp"
#include "core/json.hpp"
#include "test_cli_util.hpp"
#include "test_data_util.hpp"

namespace gb {
namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

struct ChildEnd {
  bool exited = false;  // by exit(), not by a signal
  int code = -1;        // exit code, or the signal that ended it
};

ChildEnd wait_child(pid_t pid, double limit_s) {
  int status = 0;
  pid_t done = 0;
  const auto t0 = std::chrono::steady_clock::now();
  while ((done = ::waitpid(pid, &status, WNOHANG)) == 0 &&
         std::chrono::steady_clock::now() - t0 < std::chrono::duration<double>(limit_s))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (done == 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    return {};
  }
  if (WIFEXITED(status)) return {true, WEXITSTATUS(status)};
  return {false, WIFSIGNALED(status) ? WTERMSIG(status) : -1};
}

// Runs `gpubase ARGS...` in a child whose stdout is a pipe with no reader left and whose
// stderr goes to err_file; `before` runs in the child first.
pid_t spawn_gpubase(std::vector<std::string> args, const fs::path& err_file, bool closed_stdout,
                    const std::function<void()>& before = {}) {
  int fds[2];
  if (closed_stdout && ::pipe(fds) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (closed_stdout) {
      ::close(fds[0]);  // nobody will read: a write gets EPIPE (and SIGPIPE unless ignored)
      ::dup2(fds[1], STDOUT_FILENO);
      ::close(fds[1]);
    }
    if (FILE* f = std::freopen(err_file.c_str(), "w", stderr); f == nullptr) ::_exit(99);
    if (before) before();
    args.insert(args.begin(), "gpubase");
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    const int code = cli::main(static_cast<int>(argv.size()), argv.data());
    std::fflush(nullptr);
    ::_exit(code);
  }
  if (closed_stdout) {
    ::close(fds[0]);
    ::close(fds[1]);
  }
  return pid;
}

class PipeAndHangup : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("GPUBASE_HOME", (dir_ / "home").c_str(), 1);
    ::setenv("GPUBASE_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
  }
  void TearDown() override {
    ::unsetenv("GPUBASE_HOME");
    ::unsetenv("GPUBASE_NVML_LIBRARY");
  }
  std::vector<fs::path> saved_runs() const {
    std::vector<fs::path> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir_ / "home" / "runs", ec))
      if (e.path().extension() == ".json") out.push_back(e.path());
    return out;
  }
  test::TempDir dir_;
};

TEST_F(PipeAndHangup, DatasetInfoIntoAClosedPipeIsAWriteErrorNotADeath) {
  const fs::path set = test::tiny_jpeg_set(dir_ / "set");
  const pid_t pid = spawn_gpubase({"dataset", "info", set.string()}, dir_ / "err", true);
  ASSERT_GT(pid, 0);
  const ChildEnd end = wait_child(pid, 60);
  const std::string err = read_text(dir_ / "err");
  ASSERT_TRUE(end.exited) << "ended by signal " << end.code << "; stderr: " << err;
  EXPECT_EQ(end.code, 4) << err;
  EXPECT_NE(err.find("writing to standard output failed"), std::string::npos) << err;
}

TEST_F(PipeAndHangup, AWatchReportIntoAClosedPipeIsExit4AndTheRunIsSavedWhole) {
  const pid_t pid = spawn_gpubase(
      {"watch", "--json", "--no-perf", "--view", "none", "-i", "0.1", "--", "/bin/true"},
      dir_ / "err", true);
  ASSERT_GT(pid, 0);
  const ChildEnd end = wait_child(pid, 60);
  const std::string err = read_text(dir_ / "err");
  ASSERT_TRUE(end.exited) << "ended by signal " << end.code << "; stderr: " << err;
  EXPECT_EQ(end.code, 4) << err;
  // Saved before it was printed, and whole: one file that parses as a run, nothing half-written.
  const std::vector<fs::path> runs = saved_runs();
  ASSERT_EQ(runs.size(), 1u) << err;
  const Json j = Json::parse(read_text(runs[0]), nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded()) << runs[0];
  EXPECT_EQ(j.value("schema", ""), "gpubase.run");
  for (const auto& e : fs::directory_iterator(dir_ / "home" / "runs"))
    EXPECT_TRUE(e.path().extension() == ".json" || e.path().extension() == ".jsonl") << e.path();
}

TEST_F(PipeAndHangup, AHangupEndsWatchWithItsReportSavedAndNoOrphanedJob) {
  const fs::path pid_file = dir_ / "job.pid";
  const fs::path report = dir_ / "report.json";
  const pid_t pid = spawn_gpubase(
      {"watch", "--json", "-o", report.string(), "--no-perf", "--view", "none", "-i", "0.1",
       "--", "/bin/sh", "-c", "echo $$ > '" + pid_file.string() + "'; exec sleep 60"},
      dir_ / "err", false);
  ASSERT_GT(pid, 0);
  for (int i = 0; i < 3000 && read_text(pid_file).empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const int job = std::atoi(read_text(pid_file).c_str());
  ASSERT_GT(job, 0) << "the job never started: " << read_text(dir_ / "err");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // a few samples
  ASSERT_EQ(::kill(pid, SIGHUP), 0);
  const ChildEnd end = wait_child(pid, 30);
  const std::string err = read_text(dir_ / "err");
  ASSERT_TRUE(end.exited) << "ended by signal " << end.code << "; stderr: " << err;
  EXPECT_EQ(end.code, 128 + SIGHUP) << "the job's exit code: it got the hang-up too; " << err;
  EXPECT_NE(::kill(job, 0), 0) << "the job outlived watch";
  const Json j = Json::parse(read_text(report), nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded()) << read_text(report);
  std::string ended;
  for (const auto& f : j["environment"])
    if (f.value("key", "") == "watch.exit") ended = f.value("value", "");
  EXPECT_NE(ended.find("SIGHUP"), std::string::npos) << ended;
  EXPECT_EQ(saved_runs().size(), 1u) << "the run is saved as well as printed";
}

TEST_F(PipeAndHangup, AReportThatCannotBeWrittenWholeLeavesTheOldFileNotAPartOne) {
  const std::string run_file =
      std::string(GPUBASE_FIXTURES_DIR) + "/../../bench/results/h200-probe-v3.json";
  const fs::path out = dir_ / "report.json";
  std::ofstream(out) << "the previous report";
  const pid_t pid = spawn_gpubase({"report", run_file, "--json", "-o", out.string()}, dir_ / "err",
                                  false, [] {
                                    // Files end at 4 KiB (the report is larger): a write past it
                                    // fails with EFBIG, as one on a full disk fails with ENOSPC.
                                    ::signal(SIGXFSZ, SIG_IGN);
                                    const rlimit limit{4096, 4096};
                                    ::setrlimit(RLIMIT_FSIZE, &limit);
                                  });
  ASSERT_GT(pid, 0);
  const ChildEnd end = wait_child(pid, 60);
  const std::string err = read_text(dir_ / "err");
  ASSERT_TRUE(end.exited) << "ended by signal " << end.code << "; stderr: " << err;
  EXPECT_EQ(end.code, 4) << err;
  EXPECT_EQ(read_text(out), "the previous report");
  for (const auto& e : fs::directory_iterator(dir_.path()))
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
}

}  // namespace
}  // namespace gb
