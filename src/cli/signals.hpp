// cli/signals.hpp: what SIGINT and SIGTERM do. A first signal asks the running suite to stop
// (core/cancel) so it reports what it measured. For most commands a second signal more than
// a second later exits at once (130). While `gpubase watch` runs a job, signals never exit
// gpubase early (the report must be written); a signal sent to gpubase alone (kill, a process
// manager) is forwarded to the job, while one the terminal sent to the whole foreground group
// (Ctrl-C) is not, because the job already got it.
#pragma once

namespace gb::cli {

void install_signal_handlers();
// Forward signals to this pid from now on (watch); 0 stops forwarding.
void set_signal_forward_pid(int pid);

}  // namespace gb::cli
