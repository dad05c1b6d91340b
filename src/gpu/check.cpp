// gpu/check.cpp: see check.hpp.
#include "gpu/check.hpp"

#include <string>

#include "core/error.hpp"

namespace gb::gpu {

void throw_cuda_failure(const char* library, int code, const char* name, const char* expr,
                        const char* func, const char* file, int line) {
  const std::string lib(library);
  if (lib == "CUDA" && (code == cudaErrorInsufficientDriver || code == cudaErrorNoDevice)) {
    throw Error(ErrorKind::no_gpu,
                code == cudaErrorNoDevice
                    ? "no NVIDIA GPU found (the CUDA driver reports no device)"
                    : "no NVIDIA driver found (CUDA reports \"driver version is insufficient\"): "
                      "install the NVIDIA driver or run on a GPU host");
  }
  int device = -1;
  cudaGetDevice(&device);
  try {
    throw_check_failure(library, code, name, expr, func, file, line);
  } catch (const Error& e) {
    throw Error(ErrorKind::runtime,
                std::string(e.what()) + (device >= 0 ? " on device " + std::to_string(device) : ""));
  }
}

const char* cublas_status_name(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "CUBLAS_STATUS_UNKNOWN";
}

}  // namespace gb::gpu
