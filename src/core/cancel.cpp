// core/cancel.cpp: see cancel.hpp. A lock-free atomic flag is async-signal-safe.
#include "core/cancel.hpp"

#include "core/stop_now.hpp"

#include <atomic>

namespace gb {

namespace {
std::atomic<bool> g_cancel{false};
std::atomic<bool> g_stop_now{false};
static_assert(std::atomic<bool>::is_always_lock_free);
}  // namespace

void request_cancel() noexcept { g_cancel.store(true, std::memory_order_relaxed); }
bool cancel_requested() noexcept { return g_cancel.load(std::memory_order_relaxed); }
void request_stop_now() noexcept {
  g_cancel.store(true, std::memory_order_relaxed);
  g_stop_now.store(true, std::memory_order_relaxed);
}
bool stop_now_requested() noexcept { return g_stop_now.load(std::memory_order_relaxed); }
void reset_cancel() noexcept {
  g_cancel.store(false, std::memory_order_relaxed);
  g_stop_now.store(false, std::memory_order_relaxed);
}

Cancelled::Cancelled() : Error(ErrorKind::interrupted, "interrupted by the user (Ctrl-C)") {}

void throw_if_cancelled() {
  if (cancel_requested()) throw Cancelled();
}

}  // namespace gb
