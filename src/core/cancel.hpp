// core/cancel.hpp: cooperative cancellation (Ctrl-C). The CLI's SIGINT handler calls
// request_cancel(); long-running suites call throw_if_cancelled() between measurements so the
// results gathered so far are kept and written.
#pragma once

namespace gb {

void request_cancel() noexcept;  // async-signal-safe
bool cancel_requested() noexcept;
void reset_cancel() noexcept;
// Throws gb::Error(ErrorKind::interrupted) when cancellation was requested.
void throw_if_cancelled();

}  // namespace gb
