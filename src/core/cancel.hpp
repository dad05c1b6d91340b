// core/cancel.hpp: cooperative cancellation (Ctrl-C), one idiom for every suite. The CLI's
// SIGINT handler calls request_cancel(); suites call throw_if_cancelled() between measurements,
// which throws Cancelled; the suite runner (cli/suite_run) is the one place that catches it and
// ends the run as interrupted, keeping every result already reported to the sink. Suites never
// catch Cancelled to turn it into a flag: code that catches errors broadly lets it through.
#pragma once

#include "core/error.hpp"

namespace gb {

// Ctrl-C, as an exception: an Error of kind interrupted (exit 130 where nothing catches it).
class Cancelled : public Error {
 public:
  Cancelled();
};

void request_cancel() noexcept;  // async-signal-safe
bool cancel_requested() noexcept;
void reset_cancel() noexcept;
// Throws Cancelled when cancellation was requested.
void throw_if_cancelled();

}  // namespace gb
