// cli/signals.hpp: what SIGINT, SIGTERM and SIGHUP do. A first signal asks the running suite to
// stop (core/cancel) so it reports what it measured. If the command has not ended
// stop_timeout_s() later (a stage stuck in a wait that never returns), or at a second signal
// more than a second after the first, a watchdog thread makes the report from what the suite
// measured so far (StopReport), prints it and exits 130; a third signal exits at once. Signals
// within a second of the first count as one (`timeout` and process managers signal the process
// and its group together).
//
// While `gpubase watch` runs a job, a first signal gives the job its grace and a second one
// (core/cancel's stop_now) has watch kill the job and report at once (130); a signal sent to
// gpubase alone (kill, a process manager) is forwarded to the job, while one the terminal sent
// to the whole foreground group (Ctrl-C) is not, because the job already got it.
#pragma once
#include <functional>

namespace gb::cli {

void install_signal_handlers();
// Forward signals to this pid from now on (watch); 0 stops forwarding.
void set_signal_forward_pid(int pid);

// Seconds the watchdog gives a command to end after the first signal: $GPUBASE_STOP_TIMEOUT_S
// when set (> 0), else 30.
double stop_timeout_s();

// The command this process runs (cli::main, for its whole length): the watchdog ends only a
// command that was running when the signal came and still runs at the timeout.
class RunningCommand {
 public:
  RunningCommand();
  ~RunningCommand();
  RunningCommand(const RunningCommand&) = delete;
  RunningCommand& operator=(const RunningCommand&) = delete;
};

// The report the watchdog makes if the command does not end: set for the scope of a running
// suite (cli/suite_run). Leaving the scope waits for a report being made, so the suite's own
// ending never races it.
class StopReport {
 public:
  explicit StopReport(std::function<void()> report);
  ~StopReport();
  StopReport(const StopReport&) = delete;
  StopReport& operator=(const StopReport&) = delete;
};

// The watchdog's work, callable directly by tests: runs the report set by StopReport, if any
// (false when none is set), without exiting.
bool make_stop_report();

}  // namespace gb::cli
