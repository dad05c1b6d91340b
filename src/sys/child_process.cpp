// sys/child_process.cpp: fork/exec with exec errors reported back, reaping, termination, and
// attaching to a running process; see child_process.hpp.
//
// Between fork() and exec the child may only make async-signal-safe calls (gpubase has sampler
// threads, whose locks the child inherits in whatever state they were): everything it needs,
// argv as char* included, is built before fork(). glibc's execvp() searches PATH on the stack
// without allocating.
#include "sys/child_process.hpp"

#include <fcntl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>
#include <thread>
#include <utility>

#include "core/error.hpp"

namespace gb::sys {

namespace {

std::string errno_text(int err) {
  return std::generic_category().message(err);
}

// Closes a file descriptor once; -1 means none.
void close_fd(int& fd) noexcept {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// Both ends of a pipe, closed on scope exit; O_CLOEXEC so the exec'd command inherits neither.
struct Pipe {
  int read_end = -1;
  int write_end = -1;
  Pipe() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
      throw Error(ErrorKind::runtime, "cannot start the command: pipe: " + errno_text(errno));
    }
    read_end = fds[0];
    write_end = fds[1];
  }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
  ~Pipe() {
    close_fd(read_end);
    close_fd(write_end);
  }
};

// waitpid() that retries on EINTR; returns its result (pid, 0 with WNOHANG, or -1 with errno).
pid_t waitpid_retrying(pid_t pid, int* wait_status, int options) noexcept {
  for (;;) {
    const pid_t r = ::waitpid(pid, wait_status, options);
    if (r >= 0 || errno != EINTR) return r;
  }
}

// The child's side of spawn(): only async-signal-safe calls from here to exec.
[[noreturn]] void run_child(char* const* argv, int go_read, int go_write, int error_read,
                            int error_write, bool stdout_to_stderr) noexcept {
  ::close(go_write);
  ::close(error_read);

  // The parent blocked every signal around fork(), so none of gpubase's handlers runs here.
  struct sigaction default_action = {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  for (int sig = 1; sig < NSIG; ++sig) {
    ::sigaction(sig, &default_action, nullptr);  // fails harmlessly for KILL, STOP, glibc's own
  }

  // Wait for the parent's before_exec(pid); EOF without the byte means it gave up.
  char go = 0;
  ssize_t n;
  do {
    n = ::read(go_read, &go, 1);
  } while (n < 0 && errno == EINTR);
  if (n != 1) ::_exit(127);

  // A signal that arrived while blocked (a Ctrl-C during before_exec) is delivered here, with
  // its default action.
  sigset_t empty;
  sigemptyset(&empty);
  ::sigprocmask(SIG_SETMASK, &empty, nullptr);

  if (stdout_to_stderr) ::dup2(STDERR_FILENO, STDOUT_FILENO);
  ::execvp(argv[0], argv);
  const int err = errno;
  ssize_t written;
  do {
    written = ::write(error_write, &err, sizeof err);
  } while (written < 0 && errno == EINTR);
  ::_exit(127);
}

// The user-facing message for an exec that failed with err.
std::string exec_error_message(const std::string& command, int err) {
  if (err == ENOENT) {
    // A path that exists but gives ENOENT is a script whose #! interpreter is missing.
    if (command.find('/') != std::string::npos && ::access(command.c_str(), F_OK) == 0) {
      return "cannot run " + command + ": " + errno_text(err) +
             " (the interpreter on its #! line may be missing)";
    }
    return "command not found: " + command + " (" + errno_text(err) + ")";
  }
  return "cannot run " + command + ": " + errno_text(err);
}

}  // namespace

// ---- ExitStatus ---------------------------------------------------------------------------

std::string signal_name(int sig) {
  struct Named {
    int sig;
    const char* name;
  };
  static constexpr Named kNames[] = {
      {SIGHUP, "SIGHUP"},       {SIGINT, "SIGINT"},   {SIGQUIT, "SIGQUIT"},   {SIGILL, "SIGILL"},
      {SIGTRAP, "SIGTRAP"},     {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},     {SIGFPE, "SIGFPE"},
      {SIGKILL, "SIGKILL"},     {SIGUSR1, "SIGUSR1"}, {SIGSEGV, "SIGSEGV"},   {SIGUSR2, "SIGUSR2"},
      {SIGPIPE, "SIGPIPE"},     {SIGALRM, "SIGALRM"}, {SIGTERM, "SIGTERM"},   {SIGCHLD, "SIGCHLD"},
      {SIGCONT, "SIGCONT"},     {SIGSTOP, "SIGSTOP"}, {SIGTSTP, "SIGTSTP"},   {SIGTTIN, "SIGTTIN"},
      {SIGTTOU, "SIGTTOU"},     {SIGURG, "SIGURG"},   {SIGXCPU, "SIGXCPU"},   {SIGXFSZ, "SIGXFSZ"},
      {SIGVTALRM, "SIGVTALRM"}, {SIGPROF, "SIGPROF"}, {SIGWINCH, "SIGWINCH"}, {SIGIO, "SIGIO"},
      {SIGSYS, "SIGSYS"}};
  for (const Named& n : kNames) {
    if (n.sig == sig) return n.name;
  }
  return "signal " + std::to_string(sig);
}

std::string ExitStatus::describe() const {
  if (!signaled) return "exited with code " + std::to_string(code);
  return "killed by " + signal_name(signal) + (core_dumped ? " (core dumped)" : "");
}

ExitStatus exit_status_from_wait_status(int wait_status) {
  ExitStatus s;
  if (WIFSIGNALED(wait_status)) {
    s.signaled = true;
    s.signal = WTERMSIG(wait_status);
    s.core_dumped = WCOREDUMP(wait_status);
  } else {
    s.code = WEXITSTATUS(wait_status);
  }
  return s;
}

// ---- ChildProcess -------------------------------------------------------------------------

ChildProcess ChildProcess::spawn(const std::vector<std::string>& argv,
                                 const std::function<void(int pid)>& before_exec,
                                 bool stdout_to_stderr) {
  if (argv.empty() || argv[0].empty()) throw Error(ErrorKind::usage, "no command to run");
  const std::string& command = argv[0];

  std::vector<std::string> args = argv;  // execvp wants char*, not const char*
  std::vector<char*> c_argv;
  c_argv.reserve(args.size() + 1);
  for (std::string& a : args) c_argv.push_back(a.data());
  c_argv.push_back(nullptr);

  Pipe go;          // parent -> child: "before_exec is done, exec now"
  Pipe exec_error;  // child -> parent: errno of a failed exec; EOF (closed on exec) on success

  // Block every signal across fork() so the child cannot run gpubase's handlers before it has
  // reset them.
  sigset_t all, previous;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &previous);
  const pid_t pid = ::fork();
  if (pid == 0) {
    run_child(c_argv.data(), go.read_end, go.write_end, exec_error.read_end, exec_error.write_end,
              stdout_to_stderr);
  }
  const int fork_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (pid < 0) {
    throw Error(ErrorKind::runtime,
                "cannot start " + command + ": fork: " + errno_text(fork_errno));
  }
  close_fd(go.read_end);
  close_fd(exec_error.write_end);

  ChildProcess child(pid);  // from here on its destructor reaps the child on any throw
  if (before_exec) {
    try {
      before_exec(pid);
    } catch (...) {
      ::kill(pid, SIGKILL);
      int ws = 0;
      if (waitpid_retrying(pid, &ws, 0) == pid) child.status_ = exit_status_from_wait_status(ws);
      throw;
    }
  }

  const char go_byte = 1;
  ssize_t n;
  do {
    n = ::write(go.write_end, &go_byte, 1);
  } while (n < 0 && errno == EINTR);
  close_fd(go.write_end);

  int exec_errno = 0;
  std::size_t got = 0;
  while (got < sizeof exec_errno) {
    n = ::read(exec_error.read_end, reinterpret_cast<char*>(&exec_errno) + got,
               sizeof exec_errno - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  if (got == 0) return child;  // EOF: the pipe was closed by a successful exec

  child.wait();  // it _exit(127)s right after writing
  if (got < sizeof exec_errno) {
    throw Error(ErrorKind::runtime, "cannot run " + command + ": the child ended before exec");
  }
  throw Error(ErrorKind::usage, exec_error_message(command, exec_errno));
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)), status_(std::exchange(other.status_, std::nullopt)) {}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    terminate_quietly();
    pid_ = std::exchange(other.pid_, -1);
    status_ = std::exchange(other.status_, std::nullopt);
  }
  return *this;
}

ChildProcess::~ChildProcess() {
  terminate_quietly();
}

void ChildProcess::terminate_quietly() noexcept {
  if (pid_ <= 0 || status_) return;
  try {
    terminate();
  } catch (...) {
    // Nothing left to do in a destructor: the child was reaped elsewhere or cannot be.
  }
}

std::optional<ExitStatus> ChildProcess::poll() {
  if (status_ || pid_ <= 0) return status_;
  int ws = 0;
  const pid_t r = waitpid_retrying(pid_, &ws, WNOHANG);
  if (r == 0) return std::nullopt;
  if (r < 0) {
    throw Error(ErrorKind::runtime, "waitpid(" + std::to_string(pid_) + "): " + errno_text(errno));
  }
  status_ = exit_status_from_wait_status(ws);
  return status_;
}

ExitStatus ChildProcess::wait() {
  if (status_) return *status_;
  if (pid_ <= 0) throw Error(ErrorKind::runtime, "wait on a moved-from ChildProcess");
  int ws = 0;
  if (waitpid_retrying(pid_, &ws, 0) < 0) {
    throw Error(ErrorKind::runtime, "waitpid(" + std::to_string(pid_) + "): " + errno_text(errno));
  }
  status_ = exit_status_from_wait_status(ws);
  return *status_;
}

std::optional<ExitStatus> ChildProcess::wait_for(std::chrono::milliseconds timeout) {
  // Polling, with a step that grows from 1 ms to 20 ms: an exit is seen within 20 ms, and a
  // long wait costs ~50 wake-ups a second.
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto step = std::chrono::milliseconds(1);
  for (;;) {
    if (auto s = poll()) return s;
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return std::nullopt;
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(step, deadline - now));
    step = std::min(step * 2, std::chrono::milliseconds(20));
  }
}

void ChildProcess::send_signal(int sig) {
  if (pid_ <= 0 || status_) return;
  // An unreaped child always exists (as a zombie at worst), so ESRCH cannot happen here.
  if (::kill(pid_, sig) != 0) {
    throw Error(ErrorKind::runtime, "cannot send " + signal_name(sig) + " to pid " +
                                        std::to_string(pid_) + ": " + errno_text(errno));
  }
}

ExitStatus ChildProcess::terminate(std::chrono::milliseconds grace) {
  if (status_) return *status_;
  send_signal(SIGTERM);
  if (auto s = wait_for(grace)) return *s;
  send_signal(SIGKILL);
  return wait();
}

// ---- AttachedProcess ----------------------------------------------------------------------

bool is_same_live_process(const ProcStat& now, std::uint64_t starttime_ticks_at_attach) {
  return now.starttime_ticks == starttime_ticks_at_attach && now.state != 'Z' && now.state != 'X';
}

AttachedProcess AttachedProcess::attach(int pid) {
  if (pid <= 0) throw Error(ErrorKind::usage, "not a process id: " + std::to_string(pid));
  const std::string no_such = "no process with pid " + std::to_string(pid);
  if (::kill(pid, 0) != 0) {
    if (errno == EPERM) {
      throw Error(ErrorKind::usage,
                  "not permitted to watch pid " + std::to_string(pid) +
                      " (it belongs to another user; run gpubase as that user or as root)");
    }
    throw Error(ErrorKind::usage, no_such);
  }
  const auto sample = read_process(pid);
  if (!sample) throw Error(ErrorKind::usage, no_such);  // exited since kill(), or /proc hides it
  if (sample->stat.state == 'Z' || sample->stat.state == 'X') {
    throw Error(ErrorKind::usage, no_such + " (" + sample->stat.comm + " has exited)");
  }
  return AttachedProcess(pid, sample->stat.comm, sample->stat.starttime_ticks);
}

bool AttachedProcess::alive() const {
  const auto sample = read_process(pid_);
  return sample && is_same_live_process(sample->stat, starttime_ticks_);
}

// ---- signals ------------------------------------------------------------------------------

bool signal_came_from_terminal(const siginfo_t* info) noexcept {
  // The tty line discipline signals the foreground group through kill_pgrp() with
  // SEND_SIG_PRIV, which the receiver sees as si_code SI_KERNEL.
  return info != nullptr && info->si_code == SI_KERNEL;
}

}  // namespace gb::sys
