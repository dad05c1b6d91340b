// cli/loader_cmd.hpp: the `gpubase loader` subcommand: the CPU input-pipeline benchmark
// (bench/loader) on --data or a built-in synthetic set, swept over worker counts, reported as a
// Run like probe's (terminal, --md, --json, --save), exit 130 on Ctrl-C with the points measured.
#pragma once
#include <CLI/CLI.hpp>
#include <memory>

namespace gb::cli {

struct LoaderCli;

// Adds the subcommand; keep the returned state alive until after parsing and run.
std::shared_ptr<LoaderCli> add_loader_command(CLI::App& app, CLI::App*& subcommand);
int run_loader_command(const LoaderCli& cli);

}  // namespace gb::cli
