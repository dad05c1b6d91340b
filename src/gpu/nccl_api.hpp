// gpu/nccl_api.hpp: gpubase's own declarations of the few NCCL entry points and types it calls,
// so the project builds without nccl.h and opens libnccl.so.2 with dlopen at run time (NCCL is
// not part of the CUDA toolkit: a machine may well have none).
//
// Names, values and signatures follow NVIDIA's nccl.h (2.28) exactly, so each one can be looked
// up in the NCCL reference; that is why they keep NCCL's spelling instead of the project's
// naming style. Only the single-process API is declared: one process drives every selected GPU
// (ncclCommInitAll), as nccl-tests does with -g N.
#pragma once
#include <cstddef>

struct CUstream_st;  // cudaStream_t is CUstream_st* in the CUDA runtime's headers

namespace gb::gpu::nccl_api {

struct ncclComm;
using ncclComm_t = ncclComm*;

// A C enum in nccl.h: int-sized, so a plain enum keeps the ABI.
enum ncclResult_t {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
};

enum ncclDataType_t {
  ncclInt8 = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclFloat32 = 7,
  ncclFloat64 = 8,
  ncclBfloat16 = 9,
  ncclFloat8e4m3 = 10,
  ncclFloat8e5m2 = 11,
};

enum ncclRedOp_t {
  ncclSum = 0,
  ncclProd = 1,
  ncclMax = 2,
  ncclMin = 3,
  ncclAvg = 4,
};

static_assert(sizeof(ncclResult_t) == sizeof(int));
static_assert(sizeof(ncclDataType_t) == sizeof(int));
static_assert(sizeof(ncclRedOp_t) == sizeof(int));

// Function-pointer types, one per entry point, named <symbol>_fn.
using ncclGetVersion_fn = ncclResult_t (*)(int* version);  // major*10000 + minor*100 + patch
using ncclCommInitAll_fn = ncclResult_t (*)(ncclComm_t* comms, int ndev, const int* devlist);
using ncclCommDestroy_fn = ncclResult_t (*)(ncclComm_t comm);
using ncclAllReduce_fn = ncclResult_t (*)(const void* sendbuff, void* recvbuff, std::size_t count,
                                          ncclDataType_t datatype, ncclRedOp_t op,
                                          ncclComm_t comm, CUstream_st* stream);
using ncclAllGather_fn = ncclResult_t (*)(const void* sendbuff, void* recvbuff,
                                          std::size_t sendcount, ncclDataType_t datatype,
                                          ncclComm_t comm, CUstream_st* stream);
using ncclReduceScatter_fn = ncclResult_t (*)(const void* sendbuff, void* recvbuff,
                                              std::size_t recvcount, ncclDataType_t datatype,
                                              ncclRedOp_t op, ncclComm_t comm,
                                              CUstream_st* stream);
using ncclGroupStart_fn = ncclResult_t (*)();
using ncclGroupEnd_fn = ncclResult_t (*)();
using ncclGetErrorString_fn = const char* (*)(ncclResult_t result);
using ncclGetLastError_fn = const char* (*)(ncclComm_t comm);

}  // namespace gb::gpu::nccl_api
