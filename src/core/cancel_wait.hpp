// core/cancel_wait.hpp: a wait that Ctrl-C always ends, for things a signal handler cannot wake
// (a GPU event, a driver call's completion): it polls instead of blocking.
#pragma once

#include <chrono>
#include <functional>

namespace gb {

// Waits until done() returns true, looking every `poll`. Once Ctrl-C is requested it waits at
// most `grace` more -- work about to finish still finishes, so the caller's own interrupted path
// runs -- then throws Cancelled, so that a wait that would never end cannot make the process
// deaf to Ctrl-C.
void wait_cancellable(const std::function<bool()>& done,
                      std::chrono::microseconds poll = std::chrono::microseconds(50),
                      std::chrono::milliseconds grace = std::chrono::milliseconds(2000));

}  // namespace gb
