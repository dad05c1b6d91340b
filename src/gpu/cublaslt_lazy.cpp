// gpu/cublaslt_lazy.cpp: the cuBLASLt functions gpubase calls, forwarded to libcublasLt opened
// with dlopen on first use (see cublaslt_lazy.hpp). The toolkit's cublasLt.h declares them; this
// file defines them (hidden from other modules: the build compiles it with -fvisibility=hidden,
// so a process that has its own cuBLASLt, PyTorch for one, never binds to these forwarders).
//
// Adding a cuBLASLt call to gpubase: add the function to GB_CUBLASLT_FUNCTIONS and a forwarder
// below; a call without a forwarder fails to link, since the library is no longer linked.
#include "gpu/cublaslt_lazy.hpp"

#include <cublasLt.h>
#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

namespace gb::gpu {

#define GB_CUBLASLT_FUNCTIONS(X)              \
  X(cublasLtGetVersion)                       \
  X(cublasLtCreate)                           \
  X(cublasLtDestroy)                          \
  X(cublasLtMatmul)                           \
  X(cublasLtMatmulAlgoGetHeuristic)           \
  X(cublasLtMatmulAlgoConfigGetAttribute)     \
  X(cublasLtMatmulDescCreate)                 \
  X(cublasLtMatmulDescDestroy)                \
  X(cublasLtMatmulDescSetAttribute)           \
  X(cublasLtMatmulPreferenceCreate)           \
  X(cublasLtMatmulPreferenceDestroy)          \
  X(cublasLtMatmulPreferenceSetAttribute)     \
  X(cublasLtMatrixLayoutCreate)               \
  X(cublasLtMatrixLayoutDestroy)

namespace {

#define GB_STRINGIFY_(x) #x
#define GB_STRINGIFY(x) GB_STRINGIFY_(x)
constexpr const char* kSoname = "libcublasLt.so." GB_STRINGIFY(CUBLAS_VER_MAJOR);

// One pointer per function, typed from the header's own declaration.
struct Table {
#define GB_FIELD(name) decltype(&::name) name = nullptr;
  GB_CUBLASLT_FUNCTIONS(GB_FIELD)
#undef GB_FIELD
};

#define GB_COUNT(name) +1
constexpr std::size_t kFunctions = 0 GB_CUBLASLT_FUNCTIONS(GB_COUNT);
#undef GB_COUNT

struct Loaded {
  void* so = nullptr;
  Table table;
  CublasLtLoad outcome;
};

// Binds every function of an opened library; returns how many resolved, naming the absent ones.
std::size_t bind(void* so, Table& t, std::vector<std::string>& absent) {
  std::size_t resolved = 0;
#define GB_BIND(name)                                                 \
  t.name = reinterpret_cast<decltype(&::name)>(dlsym(so, #name));     \
  if (t.name) ++resolved;                                             \
  else absent.emplace_back(#name);
  GB_CUBLASLT_FUNCTIONS(GB_BIND)
#undef GB_BIND
  return resolved;
}

Loaded load(const std::vector<std::string>& names) {
  Loaded l;
  l.outcome.functions = kFunctions;
  std::string not_found;  // "<name>: <dlerror>" per name that did not open
  std::string unusable;   // a library that opened without every function
  for (const std::string& name : names) {
    dlerror();
    void* so = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!so) {
      const char* why = dlerror();
      not_found += (not_found.empty() ? "" : "; ") + name + ": " + (why ? why : "not found");
      continue;
    }
    Table t;
    std::vector<std::string> absent;
    const std::size_t resolved = bind(so, t, absent);
    if (unusable.empty()) {  // the first library that opened is the one the counts describe
      l.outcome.resolved = resolved;
      l.outcome.absent = absent;
    }
    if (!absent.empty()) {
      unusable += (unusable.empty() ? "" : "; ") + name + " lacks " + absent.front() +
                  (absent.size() > 1 ? " and " + std::to_string(absent.size() - 1) + " more" : "") +
                  " (not cuBLASLt " + GB_STRINGIFY(CUBLAS_VER_MAJOR) + ")";
      dlclose(so);
      continue;
    }
    l.so = so;
    l.table = t;
    l.outcome.ok = true;
    l.outcome.library = name;
    l.outcome.resolved = resolved;
    l.outcome.absent.clear();
    return l;
  }
  if (!unusable.empty())
    l.outcome.error = unusable;
  else
    l.outcome.error = std::string(kSoname) + " not found: " +
                      (not_found.empty() ? std::string("no library name to try") : not_found);
  return l;
}

// The process-wide table, loaded once by the first forwarder call (or cublaslt_load_error()).
// The library stays loaded for the life of the process: it registers exit-time handlers.
const Loaded& process_table() {
  static Loaded loaded;
  static std::once_flag once;
  std::call_once(once, [] { loaded = load(default_cublaslt_library_names()); });
  return loaded;
}

const Table* table() {
  const Loaded& l = process_table();
  return l.outcome.ok ? &l.table : nullptr;
}

}  // namespace

std::vector<std::string> default_cublaslt_library_names() {
  std::vector<std::string> names;
  if (const char* forced = std::getenv("GPUBASE_CUBLASLT_LIBRARY"); forced && *forced) {
    names.emplace_back(forced);  // this library or none: never silently another one
    return names;
  }
  names.emplace_back(kSoname);
#ifdef GPUBASE_CUDA_LIBRARY_DIR
  names.emplace_back(std::string(GPUBASE_CUDA_LIBRARY_DIR) + "/" + kSoname);
#endif
  return names;
}

CublasLtLoad probe_cublaslt(const std::vector<std::string>& names) {
  Loaded l = load(names);
  // A library already in the process (the process-wide table's, PyTorch's) only loses the
  // reference this call took.
  if (l.so) dlclose(l.so);
  return l.outcome;
}

const std::string& cublaslt_load_error() { return process_table().outcome.error; }

}  // namespace gb::gpu

// --- the forwarders: the header's declarations, defined here ---------------------------------

namespace {

template <typename Fn, typename... Args>
cublasStatus_t forward(Fn gb::gpu::Table::*member, Args... args) {
  const gb::gpu::Table* t = gb::gpu::table();
  if (!t) return CUBLAS_STATUS_NOT_INITIALIZED;
  return (t->*member)(args...);
}

}  // namespace

using gb::gpu::Table;

extern "C" {

size_t CUBLASWINAPI cublasLtGetVersion(void) {
  const Table* t = gb::gpu::table();
  return t ? t->cublasLtGetVersion() : 0;
}

cublasStatus_t CUBLASWINAPI cublasLtCreate(cublasLtHandle_t* lightHandle) {
  return forward(&Table::cublasLtCreate, lightHandle);
}

cublasStatus_t CUBLASWINAPI cublasLtDestroy(cublasLtHandle_t lightHandle) {
  return forward(&Table::cublasLtDestroy, lightHandle);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmul(cublasLtHandle_t lightHandle,
                                           cublasLtMatmulDesc_t computeDesc, const void* alpha,
                                           const void* A, cublasLtMatrixLayout_t Adesc,
                                           const void* B, cublasLtMatrixLayout_t Bdesc,
                                           const void* beta, const void* C,
                                           cublasLtMatrixLayout_t Cdesc, void* D,
                                           cublasLtMatrixLayout_t Ddesc,
                                           const cublasLtMatmulAlgo_t* algo, void* workspace,
                                           size_t workspaceSizeInBytes, cudaStream_t stream) {
  return forward(&Table::cublasLtMatmul, lightHandle, computeDesc, alpha, A, Adesc, B, Bdesc,
                 beta, C, Cdesc, D, Ddesc, algo, workspace, workspaceSizeInBytes, stream);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc,
    cublasLtMatrixLayout_t Adesc, cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc,
    cublasLtMatrixLayout_t Ddesc, cublasLtMatmulPreference_t preference, int requestedAlgoCount,
    cublasLtMatmulHeuristicResult_t heuristicResultsArray[], int* returnAlgoCount) {
  return forward(&Table::cublasLtMatmulAlgoGetHeuristic, lightHandle, operationDesc, Adesc,
                 Bdesc, Cdesc, Ddesc, preference, requestedAlgoCount, heuristicResultsArray,
                 returnAlgoCount);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulAlgoConfigGetAttribute(
    const cublasLtMatmulAlgo_t* algo, cublasLtMatmulAlgoConfigAttributes_t attr, void* buf,
    size_t sizeInBytes, size_t* sizeWritten) {
  return forward(&Table::cublasLtMatmulAlgoConfigGetAttribute, algo, attr, buf, sizeInBytes,
                 sizeWritten);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* matmulDesc,
                                                     cublasComputeType_t computeType,
                                                     cudaDataType_t scaleType) {
  return forward(&Table::cublasLtMatmulDescCreate, matmulDesc, computeType, scaleType);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t matmulDesc) {
  return forward(&Table::cublasLtMatmulDescDestroy, matmulDesc);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t matmulDesc,
                                                           cublasLtMatmulDescAttributes_t attr,
                                                           const void* buf, size_t sizeInBytes) {
  return forward(&Table::cublasLtMatmulDescSetAttribute, matmulDesc, attr, buf, sizeInBytes);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  return forward(&Table::cublasLtMatmulPreferenceCreate, pref);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  return forward(&Table::cublasLtMatmulPreferenceDestroy, pref);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceSetAttribute(
    cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, const void* buf,
    size_t sizeInBytes) {
  return forward(&Table::cublasLtMatmulPreferenceSetAttribute, pref, attr, buf, sizeInBytes);
}

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* matLayout,
                                                       cudaDataType type, uint64_t rows,
                                                       uint64_t cols, int64_t ld) {
  return forward(&Table::cublasLtMatrixLayoutCreate, matLayout, type, rows, cols, ld);
}

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t matLayout) {
  return forward(&Table::cublasLtMatrixLayoutDestroy, matLayout);
}

}  // extern "C"
