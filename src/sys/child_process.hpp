// sys/child_process.hpp: start and supervise the command that `gpubase watch -- CMD` monitors,
// or attach to one that is already running (`--pid`).
//
// spawn() forks; the child waits on a pipe until the parent has run before_exec(pid) (where the
// perf counters are opened with enable_on_exec, so they count from the exec on), then execvp()s.
// An exec that fails comes back through a close-on-exec pipe as an errno, so a mistyped command
// is a clear gb::Error ("command not found: pyhton (No such file or directory)"), never a child
// that quietly exits 127. The child stays in gpubase's process group, like `time CMD`: a Ctrl-C
// at the terminal reaches both at once, and the caller's handler uses signal_came_from_terminal()
// to forward only the signals the child did not already get.
//
// Exit statuses are reaped by waitpid() on the child's pid only; a caller that sets SIGCHLD to
// SIG_IGN (the kernel then reaps for it) breaks poll()/wait(), which then throw.
#pragma once
#include <signal.h>  // siginfo_t

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sys/procfs.hpp"

namespace gb::sys {

// How a process ended, from a waitpid() status.
struct ExitStatus {
  bool signaled = false;     // killed by a signal (code is then meaningless)
  int code = 0;              // exit code, when !signaled
  int signal = 0;            // the terminating signal, when signaled
  bool core_dumped = false;  // when signaled
  // What a shell would put in $?: the code, or 128 + signal (137 for SIGKILL).
  int shell_code() const { return signaled ? 128 + signal : code; }
  // "exited with code 3", "killed by SIGKILL", "killed by SIGSEGV (core dumped)".
  std::string describe() const;
};

// The status word of waitpid() as an ExitStatus (exited or signaled; nothing else is asked for).
ExitStatus exit_status_from_wait_status(int wait_status);

// "SIGTERM" for SIGTERM; "signal 42" for one without a name (real-time signals).
std::string signal_name(int sig);

inline constexpr std::chrono::milliseconds kDefaultTerminateGrace{2000};

// The monitored command, a child of gpubase. Move-only.
//
// The destructor terminates a child that is still running (SIGTERM, up to kDefaultTerminateGrace
// for it to exit, then SIGKILL) and reaps it, so leaving a scope by an exception leaves neither
// an orphan nor a zombie. It can therefore block for up to ~2 s. Only the child itself is
// signalled: it shares gpubase's process group, so the group cannot be killed without killing
// gpubase too; launchers (torchrun, a shell script) are expected to pass SIGTERM on.
class ChildProcess {
 public:
  // Starts argv[0] (searched in PATH like a shell does, when it has no '/') with argv.
  // before_exec(pid) runs in the parent while the child waits before exec; if it throws, the
  // child is killed and reaped, and the exception propagates.
  // Throws gb::Error(usage) for an empty argv or a command that cannot be executed
  // ("command not found: foo (No such file or directory)", "cannot run ./x: Permission
  // denied"), gb::Error(runtime) when fork or pipe fail.
  // In the child: default dispositions for every signal (signals gpubase ignores, SIGPIPE for
  // one, are not ignored by the command; this also undoes a `nohup` in front of gpubase) and an
  // empty signal mask. stdin/stdout/stderr and the environment are inherited; with
  // stdout_to_stderr the command's standard output goes to gpubase's standard error instead
  // (`watch --json`: the job's prints must not land inside the JSON document on stdout).
  static ChildProcess spawn(const std::vector<std::string>& argv,
                            const std::function<void(int pid)>& before_exec = {},
                            bool stdout_to_stderr = false);

  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();

  int pid() const { return pid_; }
  // The exit status once reaped by poll/wait/wait_for/terminate; empty while running.
  const std::optional<ExitStatus>& exit_status() const { return status_; }

  // Non-blocking: the exit status when the child has ended (reaping it), else empty.
  std::optional<ExitStatus> poll();
  // Blocks until the child ends.
  ExitStatus wait();
  // Waits up to timeout (checking every few ms); empty when the child is still running.
  std::optional<ExitStatus> wait_for(std::chrono::milliseconds timeout);
  // Sends sig to the child only (not to its own children); does nothing once it is reaped.
  void send_signal(int sig);
  // SIGTERM, up to grace for the child to exit, then SIGKILL; returns how it ended. Returns the
  // known status at once when the child was already reaped.
  ExitStatus terminate(std::chrono::milliseconds grace = kDefaultTerminateGrace);

 private:
  explicit ChildProcess(int pid) : pid_(pid) {}
  void terminate_quietly() noexcept;

  int pid_ = -1;  // -1 in a moved-from object
  std::optional<ExitStatus> status_;
};

// A process gpubase did not start (`gpubase watch --pid N`). It cannot be reaped or waited for,
// so alive() looks at /proc: the process is gone when its /proc entry is, when it is a zombie
// (waiting for its own parent to reap it), or when the pid now belongs to another process (the
// starttime in /proc/<pid>/stat differs from the one seen at attach).
class AttachedProcess {
 public:
  // Throws gb::Error(usage): "no process with pid 123" (it does not exist or has exited),
  // "not permitted to watch pid 123 (...)" (kill(pid, 0) says EPERM: another user's process),
  // "not a process id: 0" for pid <= 0.
  static AttachedProcess attach(int pid);

  int pid() const { return pid_; }
  const std::string& comm() const { return comm_; }
  std::uint64_t starttime_ticks() const { return starttime_ticks_; }
  bool alive() const;

 private:
  AttachedProcess(int pid, std::string comm, std::uint64_t starttime_ticks)
      : pid_(pid), comm_(std::move(comm)), starttime_ticks_(starttime_ticks) {}

  int pid_;
  std::string comm_;
  std::uint64_t starttime_ticks_;
};

// Pure part of AttachedProcess::alive(): the process read now from /proc/<pid>/stat is the one
// attached to (same starttime) and has not exited (state is not Z or X).
bool is_same_live_process(const ProcStat& now, std::uint64_t starttime_ticks_at_attach);

// For the caller's SA_SIGINFO handler of SIGINT/SIGTERM/SIGQUIT: true when the kernel sent the
// signal (si_code SI_KERNEL), as the terminal does to the whole foreground process group on
// Ctrl-C / Ctrl-\ — the child got it too and must not get it twice. False for kill(), sigqueue()
// and the like (SI_USER, SI_QUEUE, SI_TKILL: someone signalled gpubase alone, so the caller
// forwards it to the child), and for a null info. Async-signal-safe.
bool signal_came_from_terminal(const siginfo_t* info) noexcept;

}  // namespace gb::sys
