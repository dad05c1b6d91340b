// gpu/check.hpp: error checks for CUDA runtime, cuBLASLt and cuDNN calls, all built from
// GB_CHECK_GEN (core/check.hpp). Messages name the expression, function, file, line and the
// current device. CUDA's "no driver" / "no device" errors become ErrorKind::no_gpu so the CLI
// can say plainly that no NVIDIA driver or GPU was found.
#pragma once
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "core/check.hpp"

namespace gb::gpu {

[[noreturn]] void throw_cuda_failure(const char* library, int code, const char* name,
                                     const char* expr, const char* func, const char* file,
                                     int line);
const char* cublas_status_name(cublasStatus_t s);

}  // namespace gb::gpu

#define GB_CHECK_CUDA(expr) \
  GB_CHECK_GEN(expr, cudaSuccess, "CUDA", cudaGetErrorString, ::gb::gpu::throw_cuda_failure)
#define GB_CHECK_CUDA_NOTHROW(expr) \
  GB_CHECK_GEN(expr, cudaSuccess, "CUDA", cudaGetErrorString, ::gb::warn_check_failure)
#define GB_CHECK_CUBLAS(expr)                                                       \
  GB_CHECK_GEN(expr, CUBLAS_STATUS_SUCCESS, "cuBLAS", ::gb::gpu::cublas_status_name, \
               ::gb::gpu::throw_cuda_failure)
#define GB_CHECK_CUBLAS_NOTHROW(expr)                                               \
  GB_CHECK_GEN(expr, CUBLAS_STATUS_SUCCESS, "cuBLAS", ::gb::gpu::cublas_status_name, \
               ::gb::warn_check_failure)
// After a kernel launch: launch-configuration errors surface here.
#define GB_CHECK_LAUNCH() GB_CHECK_CUDA(cudaGetLastError())
