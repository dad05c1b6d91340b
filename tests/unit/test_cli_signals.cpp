// tests/unit/test_cli_signals.cpp: what gpubase does with the signals a terminal or a pipe sends:
// SIGHUP (a closed terminal) stops a run like Ctrl-C, so the report is still made and saved;
// SIGPIPE (a closed pipe) is ignored, so a failed write is an error the run reports.
#include <gtest/gtest.h>
#include <signal.h>

#include "cli/signals.hpp"
#include "core/cancel.hpp"

namespace gb {
namespace {

TEST(Signals, AClosedTerminalStopsTheRunLikeCtrlC) {
  reset_cancel();
  cli::install_signal_handlers();
  ASSERT_EQ(::raise(SIGHUP), 0);
  EXPECT_TRUE(cancel_requested());
  reset_cancel();
}

TEST(Signals, AClosedPipeIsAFailedWriteNotADeath) {
  cli::install_signal_handlers();
  struct sigaction now {};
  ASSERT_EQ(::sigaction(SIGPIPE, nullptr, &now), 0);
  EXPECT_EQ(now.sa_handler, SIG_IGN);
}

}  // namespace
}  // namespace gb
