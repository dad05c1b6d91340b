// gpu/cublaslt_lazy.hpp: cuBLASLt loaded on first use instead of at process start.
//
// libcublasLt's load-time initialisation costs about 0.35 s of CPU and 210 MB of resident
// memory in every process that links it, even one that only prints its version or lists the
// run history. So the binary does not link it: gpu/cublaslt_lazy.cpp defines the cuBLASLt
// functions gpubase calls (the signatures of the toolkit's cublasLt.h, which stays the source of
// the types) and forwards each to the real one, resolved with dlopen/dlsym the first time any
// of them is called (once, thread-safe). When the library cannot be loaded every forwarder
// returns CUBLAS_STATUS_NOT_INITIALIZED and cublaslt_load_error() says why, so a GEMM stage
// reports "skipped: libcublasLt.so.13 not found: ..." instead of the binary failing to start.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace gb::gpu {

// The names tried, in order: the soname of the toolkit the build used (libcublasLt.so.<major>,
// found through the binary's run path and the system's library path), then that file in the
// toolkit's library folder of the build. GPUBASE_CUBLASLT_LIBRARY, when set, is the only name
// tried (a path or a name).
std::vector<std::string> default_cublaslt_library_names();

// The outcome of loading cuBLASLt from a list of names: the first name that opened and had every
// function, or why none did.
struct CublasLtLoad {
  bool ok = false;
  std::string library;              // the name that loaded
  std::string error;                // when !ok: "libcublasLt.so.13 not found: <dlerror>", ...
  std::size_t functions = 0;        // how many functions the forwarders need
  std::size_t resolved = 0;         // how many of them the loaded library has
  std::vector<std::string> absent;  // those it lacks (for the first name that opened)
};

// Tries the names in turn and closes what it opened (the process-wide table is separate): what
// the unit tests use to check a missing name and the complete symbol table.
CublasLtLoad probe_cublaslt(const std::vector<std::string>& names);

// The process-wide table: loads it on the first call (as the first forwarder call does) and
// returns why it is unusable, or an empty string when every function resolved.
const std::string& cublaslt_load_error();
inline bool cublaslt_available() { return cublaslt_load_error().empty(); }

}  // namespace gb::gpu
