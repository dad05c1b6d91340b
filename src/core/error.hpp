// core/error.hpp: the one exception type of gpubase and the exit codes the CLI maps it to.
// The library throws gb::Error; only apps/gpubase decides the process exit code.
#pragma once
#include <stdexcept>
#include <string>

namespace gb {

// Documented in docs/exit-codes.md. Keep values stable: scripts depend on them.
enum class ExitCode : int {
  ok = 0,             // everything ran; no figure failed its verdict
  check_failed = 1,   // at least one figure or checklist row is "fail"
  usage = 2,          // bad command line or bad input file
  no_gpu = 3,         // no NVIDIA driver / GPU: nothing on the GPU could be measured
  runtime_error = 4,  // a CUDA/library/system call failed unexpectedly
  interrupted = 130,  // Ctrl-C (128 + SIGINT)
};

enum class ErrorKind { usage, no_gpu, runtime, interrupted };

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

ExitCode exit_code_for(ErrorKind kind);

}  // namespace gb
