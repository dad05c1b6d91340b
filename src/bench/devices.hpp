// bench/devices.hpp: every GPU of a node. `--devices all|0,2,5` picks the GPUs (validated
// against the machine's devices like -d), the probe runs on each into its own sink (one Run per
// GPU, keyed by its index and UUID in the gpu.* facts), and `--concurrent` runs the probe on all
// of them at once after each ran alone, so that a shared PCIe switch, a NUMA node or a power or
// cooling budget shows up as figures that drop only when the GPUs run together:
//   probe.concurrent.<section>.<...>   the figure measured with all selected GPUs at once
//                                      (params: alone = the figure alone, change_pct)
//   probe.concurrent.worst_change.pct  the largest drop over the headline figures, with the
//                                      figure it was in (param `figure`) and the GPUs that ran
// CUDA-free: without CUDA or a GPU, select_devices answers no devices with the reason.
#pragma once
#include <span>
#include <string>
#include <vector>

#include "bench/probe.hpp"

namespace gb::bench {

// The devices `spec` names ("all", or indices separated by commas), in the order given, without
// repeats. Empty with `no_gpu_reason` set when the machine has no GPU. Throws gb::Error (usage)
// for a malformed list or an index the machine does not have.
std::vector<int> select_devices(const std::string& spec, std::string& no_gpu_reason);

// Runs the probe on every device at the same time, each into its own sink (sinks[i] for
// devices[i]), one thread per device; returns each device's outcome. An exception in any thread
// (Ctrl-C's Cancelled included) is rethrown here once all threads have ended, so the caller's
// suite runner handles it as for one GPU.
std::vector<ProbeOutcome> run_probe_concurrently(const ProbeOptions& options,
                                                 const std::vector<int>& devices,
                                                 const std::vector<ResultSink*>& sinks);

// Adds to `alone` (the GPU's run by itself) the probe.concurrent.* results from `together` (the
// same GPU while all of `devices` ran), and the fact probe.concurrent.devices.
void add_concurrent_comparison(ResultSink& alone, const std::vector<Result>& together,
                               const std::vector<int>& devices, double slowed_threshold = 0.03);

// The section the probe.concurrent.* results print in.
std::span<const SectionRule> concurrent_section_rules();

}  // namespace gb::bench
