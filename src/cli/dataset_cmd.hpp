// cli/dataset_cmd.hpp: the `gpubase dataset` subcommand: synth, pack, verify, info and export
// over the data library (src/data). Results on stdout (text, or one JSON object with --json),
// progress on stderr, exit codes of docs/exit-codes.md.
#pragma once
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace gb::cli {

struct DatasetCli;

// Adds the subcommand; keep the returned state alive until after parsing and run.
std::shared_ptr<DatasetCli> add_dataset_command(CLI::App& app, CLI::App*& subcommand);
// Runs the parsed subcommand. Throws gb::Error (the caller maps it to an exit code); returns
// 1 when `verify` finds a bad checksum, else 0.
int run_dataset_command(const DatasetCli& cli);

// `gpubase dataset ARGS...` as main() runs it (parse, run, errors to exit codes) with results
// written to `out` and progress and errors to `err`. Signal handlers are not installed. For tests.
int run_dataset_args(const std::vector<std::string>& args, std::FILE* out, std::FILE* err);

}  // namespace gb::cli
