// cli/run_args.hpp: one subcommand run from an argument list exactly as main() would run it
// (parse, run, errors to exit codes and a "gpubase: ..." line on err), without signal handlers.
// The CLI tests drive commands through this.
#pragma once
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace gb::cli {

// add(app, cmd) registers the subcommand and returns its state; run(state) runs it.
template <typename Add, typename Run>
int run_subcommand_args(const std::string& name, const std::vector<std::string>& args, Add add,
                        Run run, std::FILE* err = stderr) {
  CLI::App app{"gpubase"};
  app.require_subcommand(1);
  CLI::App* cmd = nullptr;
  const auto state = add(app, cmd);
  std::vector<std::string> argv_strings = {"gpubase", name};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_strings) argv.push_back(a.data());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    std::fprintf(err, "gpubase: %s\n", e.what());
    return static_cast<int>(ExitCode::usage);
  }
  try {
    return run(state);
  } catch (const Error& e) {
    std::fprintf(err, "gpubase: %s\n", e.what());
    return static_cast<int>(exit_code_for(e.kind()));
  }
}

}  // namespace gb::cli
