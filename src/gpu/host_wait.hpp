// gpu/host_wait.hpp: how this process's host threads wait for the GPU (the device's schedule
// flag). CUDA's default ("auto") spins a waiting thread on its core while the process has fewer
// contexts than the machine has cores: a launching thread that waits for each step then uses a
// whole core that the input pipeline's workers could use. GPUBASE_CUDA_WAIT chooses:
//   auto   CUDA's default heuristic
//   spin   spin on the core (lowest wake-up latency)
//   yield  spin, yielding the core to other runnable threads
//   block  sleep until the GPU interrupts (no core used while waiting)
// Applied by gpubase's own commands when they open a device; never to a process that imports
// gpubase as a library (the job owns its context's flags).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gb::gpu {

enum class HostWait { automatic, spin, yield, block };

// The policy a gpubase command uses when GPUBASE_CUDA_WAIT is unset.
inline constexpr HostWait kDefaultHostWait = HostWait::automatic;

std::optional<HostWait> parse_host_wait(std::string_view text);
std::string_view to_string(HostWait w);

// GPUBASE_CUDA_WAIT, else the default; throws gb::Error (usage) for a value it does not know.
HostWait host_wait_from_env();

// Sets the current device's schedule flag to `w` (the device's context may already exist: CUDA
// replaces its flag). Throws gb::Error when CUDA refuses.
void apply_host_wait(HostWait w);

}  // namespace gb::gpu
