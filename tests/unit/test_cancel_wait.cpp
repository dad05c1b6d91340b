// wait_cancellable: a poll-based wait that Ctrl-C always ends (waits on GPU events use it).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "core/cancel.hpp"
#include "core/cancel_wait.hpp"

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

struct ResetCancel {
  ResetCancel() { gb::reset_cancel(); }
  ~ResetCancel() { gb::reset_cancel(); }
};

TEST(WaitCancellable, ReturnsWhenDone) {
  ResetCancel reset;
  std::atomic<bool> flag{false};
  std::thread t([&] {
    std::this_thread::sleep_for(20ms);
    flag = true;
  });
  gb::wait_cancellable([&] { return flag.load(); });
  t.join();
  EXPECT_TRUE(flag.load());
}

TEST(WaitCancellable, ReturnsAtOnceWhenAlreadyDone) {
  ResetCancel reset;
  int calls = 0;
  gb::wait_cancellable([&] { return ++calls > 0; });
  EXPECT_EQ(calls, 1);
}

TEST(WaitCancellable, CtrlCEndsAWaitThatNeverFinishes) {
  ResetCancel reset;
  gb::request_cancel();
  const auto t0 = Clock::now();
  EXPECT_THROW(gb::wait_cancellable([] { return false; }, 100us, 50ms), gb::Cancelled);
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_GE(s, 0.05);
  EXPECT_LT(s, 5.0);
}

TEST(WaitCancellable, CtrlCLetsWorkAboutToFinishFinish) {
  ResetCancel reset;
  gb::request_cancel();
  const auto t0 = Clock::now();
  // Done 20 ms after Ctrl-C, inside the grace: no exception, the caller's own path runs.
  gb::wait_cancellable([&] { return Clock::now() - t0 >= 20ms; }, 100us, 2000ms);
  EXPECT_TRUE(gb::cancel_requested());
}

TEST(WaitCancellable, CtrlCDuringTheWaitEndsIt) {
  ResetCancel reset;
  std::thread t([] {
    std::this_thread::sleep_for(20ms);
    gb::request_cancel();
  });
  EXPECT_THROW(gb::wait_cancellable([] { return false; }, 100us, 30ms), gb::Cancelled);
  t.join();
}

}  // namespace
