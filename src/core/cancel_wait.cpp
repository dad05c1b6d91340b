// core/cancel_wait.cpp: see cancel_wait.hpp.
#include "core/cancel_wait.hpp"

#include <thread>

#include "core/cancel.hpp"

namespace gb {

void wait_cancellable(const std::function<bool()>& done, std::chrono::microseconds poll,
                      std::chrono::milliseconds grace) {
  using Clock = std::chrono::steady_clock;
  bool cancel_seen = false;
  Clock::time_point cancel_at;
  while (!done()) {
    if (cancel_requested()) {
      const Clock::time_point now = Clock::now();
      if (!cancel_seen) {
        cancel_seen = true;
        cancel_at = now;
      } else if (now - cancel_at >= grace) {
        throw Cancelled();
      }
    }
    std::this_thread::sleep_for(poll);
  }
}

}  // namespace gb
