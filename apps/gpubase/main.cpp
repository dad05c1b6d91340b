// gpubase: single-GPU performance baseline. Thin entry point: options -> runner -> exit code.
#include "cli/app.hpp"

int main(int argc, char** argv) { return gb::cli::main(argc, argv); }
