// test_sys_cpu_time.cpp: the process and thread CPU clocks (sys/cpu_time.hpp) behind the watch
// sampler's own cost and the training loop's launch_thread_cpu_pct.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "sys/cpu_time.hpp"

namespace gb::sys {
namespace {

// Spins the calling thread until its own clock has advanced `ms` (or 10 s of wall time).
double spin_thread_ms(double ms) {
  const double t0 = thread_cpu_ms();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  volatile unsigned sink = 0;
  while (thread_cpu_ms() - t0 < ms && std::chrono::steady_clock::now() < deadline)
    for (int i = 0; i < 10000; ++i) sink = sink + static_cast<unsigned>(i);
  return thread_cpu_ms() - t0;
}

TEST(CpuTime, TheThreadClockCountsTheThreadsOwnWork) {
  const double p0 = process_cpu_seconds();
  const double spun_ms = spin_thread_ms(30);
  const double p1 = process_cpu_seconds();
  EXPECT_GE(spun_ms, 30);
  // The process clock includes this thread: it advanced at least as far.
  EXPECT_GE((p1 - p0) * 1e3, spun_ms - 1e-3);
}

TEST(CpuTime, ASleepingThreadUsesNoCpu) {
  const double t0 = thread_cpu_ms();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_LT(thread_cpu_ms() - t0, 50);
}

TEST(CpuTime, AnotherThreadsWorkCountsForTheProcessOnly) {
  const double p0 = process_cpu_seconds();
  const double t0 = thread_cpu_ms();
  double other_ms = 0;
  std::thread worker([&] { other_ms = spin_thread_ms(50); });
  worker.join();
  const double own_ms = thread_cpu_ms() - t0;
  EXPECT_GE(other_ms, 50);
  EXPECT_LT(own_ms, 25);
  EXPECT_GE((process_cpu_seconds() - p0) * 1e3, other_ms - 1e-3);
}

}  // namespace
}  // namespace gb::sys
