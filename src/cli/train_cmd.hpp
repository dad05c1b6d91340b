// cli/train_cmd.hpp: the `gpubase train` subcommand: training throughput of the engine in
// src/nn (bench/train) per model and precision on a synthetic batch, reported as a Run like
// probe's (terminal, --md, --json, -o, --save); exit 3 without a GPU, 1 when a configuration
// failed (out of memory, a non-finite loss), 130 on Ctrl-C with the configurations measured.
#pragma once
#include <memory>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace gb::cli {

struct TrainCli;

// Adds the subcommand; keep the returned state alive until after parsing and run.
std::shared_ptr<TrainCli> add_train_command(CLI::App& app, CLI::App*& subcommand);
int run_train_command(const TrainCli& cli);

// `gpubase train ARGS...` as main() runs it (parse, run, errors to exit codes; errors on
// stderr). Signal handlers are not installed. For tests.
int run_train_args(const std::vector<std::string>& args);

}  // namespace gb::cli
