// cli/app.hpp: the gpubase command line. Parses options, runs suites, prints or saves the run
// and maps errors to the exit codes of docs/exit-codes.md. main() only calls gb::cli::main.
#pragma once

namespace gb::cli {

int main(int argc, char** argv);

}  // namespace gb::cli
