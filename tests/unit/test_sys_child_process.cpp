// test_sys_child_process.cpp: starting and supervising the command `gpubase watch` monitors —
// exit statuses, exec errors reported as gb::Error, before_exec ordering, termination, the
// destructor's clean-up, attaching to a running pid and telling a terminal's Ctrl-C from kill().
// Real processes through /bin/sh; timeouts are generous so a loaded CI machine does not flake.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>

#include "core/error.hpp"
#include "sys/child_process.hpp"
#include "sys/text_parse.hpp"

namespace gb::sys {
namespace {

using namespace std::chrono_literals;

ChildProcess sh(const std::string& script) {
  return ChildProcess::spawn({"/bin/sh", "-c", script});
}

// A pid no process can have: pids are below /proc/sys/kernel/pid_max.
int nonexistent_pid() {
  const auto text = text::read_text_file("/proc/sys/kernel/pid_max");
  const auto pid_max = text ? text::parse_number<int>(*text) : std::nullopt;
  return pid_max.value_or(4194304);
}

// The message of the gb::Error that fn throws, checking its kind; empty when it throws none.
template <typename Fn>
std::string error_message(Fn fn, ErrorKind kind = ErrorKind::usage) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    return e.what();
  }
  return "";
}

// A fresh path in the test's temporary directory.
std::string temp_path(const std::string& name) {
  const std::string path =
      testing::TempDir() + "gb_child_" + std::to_string(::getpid()) + "_" + name;
  std::filesystem::remove(path);
  return path;
}

// True once pid is no longer in the process table at all (neither running nor a zombie).
bool gone(int pid) {
  return ::kill(pid, 0) != 0 && errno == ESRCH;
}

// ---- exit status --------------------------------------------------------------------------

TEST(ChildProcessExit, ZeroExitCode) {
  const ExitStatus s = sh("exit 0").wait();
  EXPECT_FALSE(s.signaled);
  EXPECT_EQ(s.code, 0);
  EXPECT_EQ(s.shell_code(), 0);
  EXPECT_EQ(s.describe(), "exited with code 0");
}

TEST(ChildProcessExit, NonZeroExitCode) {
  ChildProcess child = sh("exit 3");
  const ExitStatus s = child.wait();
  EXPECT_FALSE(s.signaled);
  EXPECT_EQ(s.code, 3);
  EXPECT_EQ(s.shell_code(), 3);
  EXPECT_EQ(s.describe(), "exited with code 3");
  ASSERT_TRUE(child.exit_status().has_value());
  EXPECT_EQ(child.exit_status()->code, 3);
}

TEST(ChildProcessExit, KilledBySignalReads128PlusSignal) {
  const ExitStatus s = sh("kill -9 $$").wait();
  EXPECT_TRUE(s.signaled);
  EXPECT_EQ(s.signal, SIGKILL);
  EXPECT_EQ(s.shell_code(), 128 + 9);
  EXPECT_EQ(s.describe(), "killed by SIGKILL");
}

TEST(ChildProcessExit, DescribesACoreDumpAndAnUnnamedSignal) {
  ExitStatus s;
  s.signaled = true;
  s.signal = SIGSEGV;
  s.core_dumped = true;
  EXPECT_EQ(s.describe(), "killed by SIGSEGV (core dumped)");
  EXPECT_EQ(signal_name(SIGRTMIN + 1), "signal " + std::to_string(SIGRTMIN + 1));
}

// ---- exec errors --------------------------------------------------------------------------

TEST(ChildProcessSpawn, UnknownCommandIsAUsageErrorNotExitCode127) {
  const std::string msg = error_message([] {
    ChildProcess::spawn({"gpubase-no-such-command-xyz", "--flag"});
  });
  EXPECT_EQ(msg, "command not found: gpubase-no-such-command-xyz (No such file or directory)");
}

TEST(ChildProcessSpawn, MissingPathIsCommandNotFound) {
  const std::string path = temp_path("missing");
  EXPECT_EQ(error_message([&] { ChildProcess::spawn({path}); }),
            "command not found: " + path + " (No such file or directory)");
}

TEST(ChildProcessSpawn, NonExecutableFileIsPermissionDenied) {
  // No execute bit at all: exec refuses even root.
  const std::string path = temp_path("not_executable.sh");
  std::ofstream(path) << "#!/bin/sh\nexit 0\n";
  ::chmod(path.c_str(), 0644);
  EXPECT_EQ(error_message([&] { ChildProcess::spawn({path}); }),
            "cannot run " + path + ": Permission denied");
  std::filesystem::remove(path);
}

TEST(ChildProcessSpawn, EmptyArgvIsAUsageError) {
  EXPECT_NE(error_message([] { ChildProcess::spawn({}); }), "");
}

// ---- before_exec --------------------------------------------------------------------------

TEST(ChildProcessSpawn, BeforeExecRunsWithThePidBeforeTheCommandStarts) {
  // before_exec writes the pid to a file; the command (same pid after exec) finds it there.
  const std::string path = temp_path("before_exec");
  int seen_pid = 0;
  ChildProcess child =
      ChildProcess::spawn({"/bin/sh", "-c", "test \"$(cat \"$0\")\" = \"$$\"", path}, [&](int pid) {
        seen_pid = pid;
        std::ofstream(path) << pid;
      });
  EXPECT_EQ(seen_pid, child.pid());
  EXPECT_EQ(child.wait().describe(), "exited with code 0");
  std::filesystem::remove(path);
}

TEST(ChildProcessSpawn, BeforeExecThatThrowsLeavesNoChild) {
  int pid = 0;
  EXPECT_THROW(ChildProcess::spawn({"/bin/sh", "-c", "sleep 60"},
                                   [&](int p) {
                                     pid = p;
                                     throw std::runtime_error("counters failed");
                                   }),
               std::runtime_error);
  ASSERT_GT(pid, 0);
  EXPECT_TRUE(gone(pid));
}

TEST(ChildProcessSpawn, CommandGetsDefaultSignalsAndAnEmptyMask) {
  // gpubase ignoring SIGUSR1 or blocking SIGUSR2 must not leak into the command.
  struct sigaction ignore = {}, previous_action = {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGUSR1, &ignore, &previous_action);
  sigset_t usr2, previous_mask;
  sigemptyset(&usr2);
  sigaddset(&usr2, SIGUSR2);
  ::pthread_sigmask(SIG_BLOCK, &usr2, &previous_mask);

  // grep is the exec'd process itself, so /proc/self/status is the command's.
  const ExitStatus ignored =
      ChildProcess::spawn({"grep", "-qE", "^SigIgn:[[:space:]]*0+$", "/proc/self/status"}).wait();
  const ExitStatus blocked =
      ChildProcess::spawn({"grep", "-qE", "^SigBlk:[[:space:]]*0+$", "/proc/self/status"}).wait();

  ::pthread_sigmask(SIG_SETMASK, &previous_mask, nullptr);
  ::sigaction(SIGUSR1, &previous_action, nullptr);
  EXPECT_EQ(ignored.describe(), "exited with code 0");
  EXPECT_EQ(blocked.describe(), "exited with code 0");
}

// ---- supervision --------------------------------------------------------------------------

TEST(ChildProcessSupervise, PollAndWaitForAreEmptyWhileRunning) {
  ChildProcess child = ChildProcess::spawn({"sleep", "60"});
  EXPECT_FALSE(child.poll().has_value());
  EXPECT_FALSE(child.wait_for(50ms).has_value());
  EXPECT_FALSE(child.exit_status().has_value());
  child.terminate();
}

TEST(ChildProcessSupervise, WaitForReturnsWhenTheChildExits) {
  ChildProcess child = sh("exit 5");
  const auto s = child.wait_for(30s);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->code, 5);
  EXPECT_EQ(child.poll()->code, 5);  // reaped once, remembered
}

TEST(ChildProcessSupervise, TerminateStopsASleepingChildWithSigterm) {
  ChildProcess child = ChildProcess::spawn({"sleep", "60"});
  const auto start = std::chrono::steady_clock::now();
  const ExitStatus s = child.terminate(30s);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 20s);
  EXPECT_TRUE(s.signaled);
  EXPECT_EQ(s.signal, SIGTERM);
  EXPECT_EQ(s.shell_code(), 143);
}

TEST(ChildProcessSupervise, TerminateEscalatesToSigkillAfterTheGrace) {
  const std::string ready = temp_path("trap_ready");
  ChildProcess child = ChildProcess::spawn(
      {"/bin/sh", "-c", "trap '' TERM; : > \"$0\"; while :; do sleep 1; done", ready});
  // SIGTERM before the trap is set would end it with SIGTERM; wait until it is.
  for (int i = 0; i < 3000 && !std::filesystem::exists(ready); ++i) {
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_TRUE(std::filesystem::exists(ready));
  const ExitStatus s = child.terminate(200ms);
  EXPECT_TRUE(s.signaled);
  EXPECT_EQ(s.signal, SIGKILL);
  std::filesystem::remove(ready);
}

TEST(ChildProcessSupervise, SendSignalAfterReapingIsANoOp) {
  ChildProcess child = sh("exit 0");
  child.wait();
  EXPECT_NO_THROW(child.send_signal(SIGTERM));
  EXPECT_EQ(child.terminate().code, 0);
}

TEST(ChildProcessSupervise, SendSignalReachesTheChild) {
  ChildProcess child = ChildProcess::spawn({"sleep", "60"});
  child.send_signal(SIGUSR1);
  const ExitStatus s = child.wait();
  EXPECT_EQ(s.describe(), "killed by SIGUSR1");
}

TEST(ChildProcessSupervise, DestructorLeavesNeitherOrphanNorZombie) {
  int pid = 0;
  {
    ChildProcess child = ChildProcess::spawn({"sleep", "60"});
    pid = child.pid();
    ASSERT_FALSE(gone(pid));
  }
  EXPECT_TRUE(gone(pid));
}

TEST(ChildProcessSupervise, MovedChildIsSupervisedByItsNewOwner) {
  ChildProcess first = sh("exit 7");
  const int pid = first.pid();
  ChildProcess second = std::move(first);
  EXPECT_EQ(second.pid(), pid);
  EXPECT_EQ(second.wait().code, 7);
}

// ---- attach -------------------------------------------------------------------------------

TEST(ChildProcessAttach, AttachesToItself) {
  const AttachedProcess self = AttachedProcess::attach(::getpid());
  EXPECT_EQ(self.pid(), ::getpid());
  EXPECT_FALSE(self.comm().empty());
  EXPECT_TRUE(self.alive());
}

TEST(ChildProcessAttach, NonexistentPidIsAUsageError) {
  const int pid = nonexistent_pid();
  EXPECT_EQ(error_message([&] { AttachedProcess::attach(pid); }),
            "no process with pid " + std::to_string(pid));
  EXPECT_EQ(error_message([] { AttachedProcess::attach(0); }), "not a process id: 0");
}

TEST(ChildProcessAttach, PidOneIsAttachedOrNotPermitted) {
  // As root pid 1 can be watched; as another user kill(1, 0) says EPERM.
  try {
    const AttachedProcess init = AttachedProcess::attach(1);
    EXPECT_TRUE(init.alive());
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
    EXPECT_NE(std::string(e.what()).find("not permitted"), std::string::npos) << e.what();
  }
}

TEST(ChildProcessAttach, AZombieIsNoLongerAlive) {
  ChildProcess child = ChildProcess::spawn({"sleep", "60"});
  const AttachedProcess attached = AttachedProcess::attach(child.pid());
  EXPECT_TRUE(attached.alive());
  child.send_signal(SIGKILL);  // not reaped yet: a zombie until wait()
  bool alive = true;
  for (int i = 0; i < 3000 && alive; ++i) {
    alive = attached.alive();
    if (alive) std::this_thread::sleep_for(10ms);
  }
  EXPECT_FALSE(alive);
  child.wait();
  EXPECT_FALSE(attached.alive());
}

TEST(ChildProcessAttach, AReusedPidIsAnotherProcess) {
  ProcStat now;
  now.state = 'S';
  now.starttime_ticks = 1000;
  EXPECT_TRUE(is_same_live_process(now, 1000));
  EXPECT_FALSE(is_same_live_process(now, 999));  // same pid, started at another time
  now.state = 'Z';
  EXPECT_FALSE(is_same_live_process(now, 1000));
}

// ---- signal origin ------------------------------------------------------------------------

TEST(ChildProcessSignalOrigin, KernelSentSignalCameFromTheTerminal) {
  siginfo_t info = {};
  info.si_signo = SIGINT;
  info.si_code = SI_KERNEL;
  EXPECT_TRUE(signal_came_from_terminal(&info));
}

TEST(ChildProcessSignalOrigin, KillAndSigqueueDidNotComeFromTheTerminal) {
  siginfo_t info = {};
  info.si_signo = SIGTERM;
  info.si_code = SI_USER;
  EXPECT_FALSE(signal_came_from_terminal(&info));
  info.si_code = SI_QUEUE;
  EXPECT_FALSE(signal_came_from_terminal(&info));
  info.si_code = SI_TKILL;
  EXPECT_FALSE(signal_came_from_terminal(&info));
  EXPECT_FALSE(signal_came_from_terminal(nullptr));
}

}  // namespace
}  // namespace gb::sys
