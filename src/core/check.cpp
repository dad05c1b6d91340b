// core/check.cpp: failure handlers for GB_CHECK_GEN.
#include "core/check.hpp"

#include <cstdio>
#include <string>

#include "core/error.hpp"

namespace gb {

namespace {
std::string describe(const char* library, int code, const char* name, const char* expr,
                     const char* func, const char* file, int line) {
  return std::string(library) + " error " + std::to_string(code) + " (" + (name ? name : "?") +
         ") in `" + expr + "` at " + func + " (" + file + ":" + std::to_string(line) + ")";
}
}  // namespace

void throw_check_failure(const char* library, int code, const char* name, const char* expr,
                         const char* func, const char* file, int line) {
  throw Error(ErrorKind::runtime, describe(library, code, name, expr, func, file, line));
}

void warn_check_failure(const char* library, int code, const char* name, const char* expr,
                        const char* func, const char* file, int line) noexcept {
  try {
    std::fprintf(stderr, "gpubase: warning: %s\n",
                 describe(library, code, name, expr, func, file, line).c_str());
  } catch (...) {
  }
}

}  // namespace gb
