// cli/watch_cmd.hpp: the `gpubase watch` subcommand: options, live view, diagnosis, report,
// saved run and series, exit code (the job's own).
#pragma once
#include <CLI/CLI.hpp>
#include <memory>

namespace gb::cli {

struct WatchCli;

// Adds the subcommand; keep the returned state alive until after parsing and run.
std::shared_ptr<WatchCli> add_watch_command(CLI::App& app, CLI::App*& subcommand);
int run_watch_command(const WatchCli& cli);

}  // namespace gb::cli
