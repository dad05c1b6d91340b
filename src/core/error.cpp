// core/error.cpp: mapping of error kinds to process exit codes.
#include "core/error.hpp"

namespace gb {

ExitCode exit_code_for(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::usage: return ExitCode::usage;
    case ErrorKind::no_gpu: return ExitCode::no_gpu;
    case ErrorKind::interrupted: return ExitCode::interrupted;
    case ErrorKind::runtime: break;
  }
  return ExitCode::runtime_error;
}

}  // namespace gb
