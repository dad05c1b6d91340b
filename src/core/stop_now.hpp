// core/stop_now.hpp: the second stop request. A first Ctrl-C asks a run to stop (core/cancel);
// a second one, more than a second later, asks it to stop at once, without the grace a first
// one gives (watch: the job is killed instead of waited for). Set by the CLI's signal handler,
// cleared by reset_cancel().
#pragma once

namespace gb {

void request_stop_now() noexcept;  // async-signal-safe; also requests cancel
bool stop_now_requested() noexcept;

}  // namespace gb
