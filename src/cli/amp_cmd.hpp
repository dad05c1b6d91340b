// cli/amp_cmd.hpp: the `gpubase amp` subcommand: the mixed-precision study of bench/amp
// (FP32, TF32, FP16 with loss scaling, BF16 over seeds on a real dataset), reported as a Run
// with the checklist row "AMP accuracy loss < 1 %"; exit 3 without a GPU, 1 when a verdict
// fails, 130 on Ctrl-C with the runs finished so far.
#pragma once
#include <memory>

namespace CLI {
class App;
}

namespace gb::cli {

struct AmpCli;

// Adds the subcommand; keep the returned state alive until after parsing and run.
std::shared_ptr<AmpCli> add_amp_command(CLI::App& app, CLI::App*& subcommand);
int run_amp_command(const AmpCli& cli);

}  // namespace gb::cli
