// cli/history_cmd.hpp: `gpubase history` (the saved runs, or one key's trend, from the SQLite
// index store/history) and `gpubase compare A B | --last` (key by key with a noise-aware verdict;
// exit 1 on a regression, so it can gate a CI job or a node health check).
#pragma once
#include <CLI/CLI.hpp>
#include <memory>

namespace gb::cli {

struct HistoryCli;
struct CompareCli;

std::shared_ptr<HistoryCli> add_history_command(CLI::App& app, CLI::App*& subcommand);
int run_history_command(const HistoryCli& cli);
std::shared_ptr<CompareCli> add_compare_command(CLI::App& app, CLI::App*& subcommand);
int run_compare_command(const CompareCli& cli);

}  // namespace gb::cli
