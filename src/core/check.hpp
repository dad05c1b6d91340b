// core/check.hpp: the one generator behind every error-check macro (GB_CHECK_CUDA, _CUBLAS in
// gpu/check.hpp; NVML queries do not throw: they degrade to "N/A"). On failure it calls
// fail_fn(library, code, name, expression, function, file, line); the throwing variants raise
// gb::Error, the _NOTHROW variants (for destructors) print a warning and continue.
#pragma once

#define GB_CHECK_GEN(expr, success, library, name_fn, fail_fn)                                 \
  do {                                                                                        \
    const auto gb_check_status_ = (expr);                                                     \
    if (gb_check_status_ != (success)) {                                                      \
      fail_fn(library, static_cast<int>(gb_check_status_), name_fn(gb_check_status_), #expr,  \
              __func__, __FILE__, __LINE__);                                                  \
    }                                                                                         \
  } while (0)

namespace gb {

// Formats "<library> error <code> (<name>) in `<expr>` at <function> (<file>:<line>)".
[[noreturn]] void throw_check_failure(const char* library, int code, const char* name,
                                      const char* expr, const char* func, const char* file,
                                      int line);
void warn_check_failure(const char* library, int code, const char* name, const char* expr,
                        const char* func, const char* file, int line) noexcept;

}  // namespace gb
