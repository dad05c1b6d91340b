// cli/fleet_cmd.hpp: `gpubase fleet merge DIR|FILES...`: merges the run files of many GPUs and
// nodes (fleet/merge) and prints the report: terminal, --json or --html, to stdout or -o FILE.
// Exit 0 when no GPU is flagged, 1 when any is (or a run file cannot be read), 2 for usage.
#pragma once
#include <memory>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace gb::cli {

struct FleetCli;

// Adds `fleet` with its `merge` subcommand; keep the state alive until after parsing and run.
std::shared_ptr<FleetCli> add_fleet_command(CLI::App& app, CLI::App*& subcommand);
int run_fleet_command(const FleetCli& cli);

// `gpubase fleet ARGS...` as main() runs it, for tests.
int run_fleet_args(const std::vector<std::string>& args);

}  // namespace gb::cli
