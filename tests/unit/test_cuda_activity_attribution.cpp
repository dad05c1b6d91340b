// Why the GPU was idle: thread-state ticks matched against interval records' masks.
#include <gtest/gtest.h>

#include "cuda_activity/attribution.hpp"
#include "cuda_activity/reduce.hpp"

namespace ca = gb::cuda_activity;

namespace {

constexpr std::uint64_t kMs = 1'000'000;
constexpr std::uint64_t T = 5000 * 100 * kMs;

// A step of 100 ms: the GPU busy for the first `busy_ms`, then idle.
ca::IntervalRecord step_record(std::uint32_t pid, std::uint64_t t0, int busy_ms,
                               int sync_from_ms = -1, int sync_to_ms = -1) {
  ca::IntervalReducer red(pid, 100 * kMs);
  red.add_kernel(0, t0, t0 + static_cast<std::uint64_t>(busy_ms) * kMs, "k");
  if (sync_from_ms >= 0)
    red.add_sync(t0 + static_cast<std::uint64_t>(sync_from_ms) * kMs,
                 t0 + static_cast<std::uint64_t>(sync_to_ms) * kMs);
  auto recs = red.close_until(t0 + 100 * kMs);
  return recs.at(0);
}

ca::ThreadTick tick(std::uint64_t t, bool running, int workers_busy, bool disk = false) {
  ca::ThreadTick k;
  k.t_ns = t;
  k.launcher_running = running;
  k.launcher_disk = disk;
  k.workers = 4;
  k.workers_busy = workers_busy;
  return k;
}

}  // namespace

TEST(CudaAttribution, ClassifyFollowsTheRulesInOrder) {
  EXPECT_EQ(ca::classify_idle(tick(0, true, 2), true), ca::IdleCause::sync)
      << "a spinning sync shows the thread running";
  EXPECT_EQ(ca::classify_idle(tick(0, true, 2), false), ca::IdleCause::host);
  EXPECT_EQ(ca::classify_idle(tick(0, false, 2), false), ca::IdleCause::data);
  EXPECT_EQ(ca::classify_idle(tick(0, false, 0, true), false), ca::IdleCause::data)
      << "the main thread reading its input from disk";
  EXPECT_EQ(ca::classify_idle(tick(0, false, 0), false), ca::IdleCause::other);
  EXPECT_EQ(ca::thread_state('R'), ca::ThreadState::running);
  EXPECT_EQ(ca::thread_state('D'), ca::ThreadState::disk);
  EXPECT_EQ(ca::thread_state('S'), ca::ThreadState::sleeping);
  EXPECT_EQ(ca::thread_state('Z'), ca::ThreadState::other);
}

TEST(CudaAttribution, DataWaitIsTheShareOfWallTimeIdleWhileWorkersWork) {
  ca::IdleAttribution a;
  // Ten steps of 100 ms: GPU busy 70 ms, then idle 30 ms while the main thread waits for
  // the workers. Ticks every 5 ms, sent before the records (as live).
  for (int s = 0; s < 10; ++s) {
    const std::uint64_t t0 = T + static_cast<std::uint64_t>(s) * 100 * kMs;
    for (int i = 0; i < 20; ++i) {
      const std::uint64_t t = t0 + static_cast<std::uint64_t>(i) * 5 * kMs + kMs / 2;
      a.add_tick(tick(t, false, 3));
    }
    a.add_record(step_record(1, t0, 70));
  }
  a.finish();
  const auto& tot = a.totals();
  EXPECT_EQ(tot.ticks, 200u);
  EXPECT_EQ(tot.idle_ticks, 60u);
  EXPECT_DOUBLE_EQ(*tot.cause_pct(ca::IdleCause::data), 30.0);
  EXPECT_DOUBLE_EQ(*tot.idle_pct(), 30.0);
  EXPECT_EQ(tot.unresolved, 0u);
}

namespace {

// Ten steps of 100 ms as above (busy 70 ms, then waiting for the workers), then `idle_ms` of
// GPU idle with the main thread running (the job shutting down), then `busy_steps` more steps.
// Ticks every 5 ms, each step's ticks sent before its records.
void steps_idle_steps(ca::IdleAttribution& a, int idle_ms, int busy_steps) {
  ca::IntervalReducer red(1, 100 * kMs);
  auto ticks = [&](std::uint64_t from, int ms, bool running, int workers_busy) {
    for (int i = 0; i < ms / 5; ++i)
      a.add_tick(tick(from + static_cast<std::uint64_t>(i) * 5 * kMs + kMs / 2, running,
                      workers_busy));
  };
  std::uint64_t t = T;
  auto step = [&]() {
    ticks(t, 100, false, 3);
    red.add_kernel(0, t, t + 70 * kMs, "k");
    for (const auto& r : red.close_until(t + 100 * kMs)) a.add_record(r);
    t += 100 * kMs;
  };
  for (int s = 0; s < 10; ++s) step();
  ticks(t, idle_ms, true, 0);
  t += static_cast<std::uint64_t>(idle_ms) * kMs;
  for (const auto& r : red.close_until(t)) a.add_record(r);
  for (int s = 0; s < busy_steps; ++s) step();
  a.finish();
}

}  // namespace

TEST(CudaAttribution, TheWindowEndsAtTheLastBusyTickNotAtTheJobsExit) {
  ca::IdleAttribution a;
  a.set_window_start(T);
  steps_idle_steps(a, 600, 0);
  // The whole CUDA life counts the shutdown's 120 ticks as host time ...
  EXPECT_EQ(a.totals().ticks, 320u);
  EXPECT_EQ(a.totals().by_cause[static_cast<int>(ca::IdleCause::host)], 120u);
  // ... the window ends with the last busy tick: 9 full steps and the last one's 14 busy ticks.
  const auto& w = a.window_totals();
  EXPECT_EQ(w.ticks, 194u);
  EXPECT_EQ(w.by_cause[static_cast<int>(ca::IdleCause::data)], 54u);
  EXPECT_EQ(w.by_cause[static_cast<int>(ca::IdleCause::host)], 0u);
}

TEST(CudaAttribution, AnIdleStretchInsideTheWindowCounts) {
  ca::IdleAttribution a;
  a.set_window_start(T);
  steps_idle_steps(a, 600, 2);
  const auto& w = a.window_totals();
  // Up to the last busy tick of the two steps after the pause: 360 ticks less the last 6.
  EXPECT_EQ(w.ticks, 354u);
  EXPECT_EQ(w.by_cause[static_cast<int>(ca::IdleCause::host)], 120u);
  EXPECT_EQ(w.by_cause[static_cast<int>(ca::IdleCause::data)], 66u);
}

TEST(CudaAttribution, AnIdleEndPastTheLimitCountsWhole) {
  ca::IdleAttribution a;
  a.set_window_start(T);
  a.set_max_idle_tail(200 * kMs);
  steps_idle_steps(a, 600, 0);
  EXPECT_EQ(a.window_totals().ticks, a.totals().ticks);
  EXPECT_EQ(a.window_totals().by_cause[static_cast<int>(ca::IdleCause::host)], 120u);
}

TEST(CudaAttribution, IdleInsideASyncIsASyncStallWhateverTheThreadShows) {
  ca::IdleAttribution a;
  for (int i = 0; i < 20; ++i)
    a.add_tick(tick(T + static_cast<std::uint64_t>(i) * 5 * kMs + kMs / 2, true, 0));
  // Busy 0-50 ms; the host syncs 40-60 ms; idle from 50 ms.
  a.add_record(step_record(1, T, 50, 40, 60));
  a.finish();
  const auto& tot = a.totals();
  EXPECT_EQ(tot.idle_ticks, 10u);
  EXPECT_EQ(tot.by_cause[static_cast<int>(ca::IdleCause::sync)], 2u);  // ticks at 50.5, 55.5
  EXPECT_EQ(tot.by_cause[static_cast<int>(ca::IdleCause::host)], 8u);
}

TEST(CudaAttribution, ATickWaitsUntilEveryRunningProducerCoversIt) {
  ca::IdleAttribution a;
  a.add_record(step_record(1, T, 100));
  a.add_record(step_record(2, T, 0));
  a.add_tick(tick(T + 150 * kMs, false, 1));
  a.add_record(step_record(1, T + 100 * kMs, 0));  // pid 2 has not reached 150 ms yet
  EXPECT_EQ(a.totals().ticks, 0u);
  a.add_record(step_record(2, T + 100 * kMs, 100));  // the GPU busy in pid 2 at 150 ms
  EXPECT_EQ(a.totals().ticks, 1u);
  EXPECT_EQ(a.totals().idle_ticks, 0u) << "busy in any process is busy";
}

TEST(CudaAttribution, AnEndedProducerNoLongerHoldsTicksBack) {
  ca::IdleAttribution a;
  a.add_record(step_record(1, T, 10));
  a.add_record(step_record(2, T, 10));
  a.add_tick(tick(T + 50 * kMs, false, 0));
  a.add_tick(tick(T + 250 * kMs, false, 0));
  a.add_record(step_record(1, T + 200 * kMs, 10));
  EXPECT_EQ(a.totals().ticks, 1u) << "the tick at 250 ms waits for pid 2";
  a.producer_ended(2);
  EXPECT_EQ(a.totals().ticks, 2u);
  EXPECT_EQ(a.totals().by_cause[static_cast<int>(ca::IdleCause::other)], 2u);
}

TEST(CudaAttribution, TicksOutsideTheRecordsAreNotCounted) {
  ca::IdleAttribution a;
  a.add_tick(tick(T - 500 * kMs, true, 0));  // before the job's first CUDA activity
  a.add_record(step_record(1, T, 10));
  a.add_tick(tick(T + 10 * kMs, true, 0));
  a.finish();
  EXPECT_EQ(a.totals().ticks, 1u);
  EXPECT_FALSE(ca::AttributionTotals{}.idle_pct().has_value());
}

TEST(CudaAttribution, PendingTicksAreBoundedWhenNoRecordComes) {
  ca::IdleAttribution a;
  a.add_record(step_record(1, T, 10));
  for (std::size_t i = 0; i < ca::IdleAttribution::kMaxPendingTicks + 100; ++i)
    a.add_tick(tick(T + 200 * kMs + i * kMs, false, 0));
  EXPECT_EQ(a.totals().unresolved, 100u);
}
