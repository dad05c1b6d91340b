// cli/probe_devices.hpp: `gpubase probe --devices all|0,2,5 [--concurrent]`: one run per GPU
// (bench/devices.hpp), each printed, saved or written like a one-GPU probe's; -o with several
// GPUs needs %g (one run file per GPU, what `fleet merge` reads). The exit code is the worst of
// the GPUs' (130 interrupted, else the highest).
#pragma once
#include <string>

#include "bench/probe.hpp"
#include "cli/output.hpp"

namespace gb::cli {

// -o and --json/--html/--csv with `n` GPUs: several need -o with %g (one file per GPU); throws
// gb::Error (usage) otherwise.
void check_several_outputs(const OutputOptions& out, std::size_t n);

int run_probe_devices(const std::string& command, const bench::ProbeOptions& probe,
                      const OutputOptions& out, bool save, const std::string& devices,
                      bool concurrent);

}  // namespace gb::cli
