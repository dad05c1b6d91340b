// gpu/nvjpeg_api.hpp: the few nvJPEG types and entry points gpubase uses, declared here so the
// build needs no nvjpeg.h and the binary no libnvjpeg: gpu/nvjpeg.cpp loads the library with
// dlopen and looks these names up with dlsym.
//
// ABI, copied from NVIDIA's public nvjpeg.h (CUDA 11.0 .. 13.x, unchanged across them): enum
// values are part of the ABI and are spelled out; nvjpegImage_t's pitches are size_t (they were
// unsigned int only in the CUDA 10 preview). Handles are opaque pointers.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>

namespace gb::gpu::nvjpeg_api {

enum nvjpegStatus_t : int {
  NVJPEG_STATUS_SUCCESS = 0,
  NVJPEG_STATUS_NOT_INITIALIZED = 1,
  NVJPEG_STATUS_INVALID_PARAMETER = 2,
  NVJPEG_STATUS_BAD_JPEG = 3,
  NVJPEG_STATUS_JPEG_NOT_SUPPORTED = 4,
  NVJPEG_STATUS_ALLOCATOR_FAILURE = 5,
  NVJPEG_STATUS_EXECUTION_FAILED = 6,
  NVJPEG_STATUS_ARCH_MISMATCH = 7,
  NVJPEG_STATUS_INTERNAL_ERROR = 8,
  NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED = 9,
  NVJPEG_STATUS_INCOMPLETE_BITSTREAM = 10,
};

enum nvjpegBackend_t : int {
  NVJPEG_BACKEND_DEFAULT = 0,
  NVJPEG_BACKEND_HYBRID = 1,      // Huffman decode on the CPU
  NVJPEG_BACKEND_GPU_HYBRID = 2,  // batched: Huffman decode on the GPU (batches > 50)
  NVJPEG_BACKEND_HARDWARE = 3,    // the NVJPG engines (A100, A30, H100, H200, ...)
  NVJPEG_BACKEND_GPU_HYBRID_DEVICE = 4,
  NVJPEG_BACKEND_HARDWARE_DEVICE = 5,
  NVJPEG_BACKEND_LOSSLESS_JPEG = 6,
};

enum nvjpegOutputFormat_t : int {
  NVJPEG_OUTPUT_UNCHANGED = 0,
  NVJPEG_OUTPUT_YUV = 1,
  NVJPEG_OUTPUT_Y = 2,
  NVJPEG_OUTPUT_RGB = 3,
  NVJPEG_OUTPUT_BGR = 4,
  NVJPEG_OUTPUT_RGBI = 5,  // interleaved RGB into channel[0]
  NVJPEG_OUTPUT_BGRI = 6,
};

enum nvjpegChromaSubsampling_t : int {
  NVJPEG_CSS_444 = 0,
  NVJPEG_CSS_422 = 1,
  NVJPEG_CSS_420 = 2,
  NVJPEG_CSS_440 = 3,
  NVJPEG_CSS_411 = 4,
  NVJPEG_CSS_410 = 5,
  NVJPEG_CSS_GRAY = 6,
  NVJPEG_CSS_410V = 7,
  NVJPEG_CSS_UNKNOWN = -1,
};

// libraryPropertyType (library_types.h).
enum nvjpegLibraryProperty : int { kMajorVersion = 0, kMinorVersion = 1, kPatchLevel = 2 };

inline constexpr unsigned NVJPEG_FLAGS_DEFAULT = 0;
inline constexpr unsigned NVJPEG_FLAGS_HW_DECODE_NO_PIPELINE = 1;
inline constexpr unsigned NVJPEG_FLAGS_ENABLE_MEMORY_POOLS = 2;
inline constexpr int NVJPEG_MAX_COMPONENT = 4;

struct nvjpegImage_t {
  unsigned char* channel[NVJPEG_MAX_COMPONENT];
  std::size_t pitch[NVJPEG_MAX_COMPONENT];
};

struct nvjpegHandle;
using nvjpegHandle_t = nvjpegHandle*;
struct nvjpegJpegState;
using nvjpegJpegState_t = nvjpegJpegState*;
struct nvjpegJpegStream;
using nvjpegJpegStream_t = nvjpegJpegStream*;
// nvJPEG's memory: nullptr for the defaults (cudaMalloc/cudaFree, cudaHostAlloc/cudaFreeHost),
// or these (0: success, as cudaSuccess).
extern "C" {
struct nvjpegDevAllocator_t {
  int (*dev_malloc)(void** ptr, std::size_t size);
  int (*dev_free)(void* ptr);
};
struct nvjpegPinnedAllocator_t {
  int (*pinned_malloc)(void** ptr, std::size_t size, unsigned int flags);
  int (*pinned_free)(void* ptr);
};
}  // extern "C"

extern "C" {
using nvjpegGetProperty_fn = nvjpegStatus_t (*)(int type, int* value);
using nvjpegCreateEx_fn = nvjpegStatus_t (*)(nvjpegBackend_t backend,
                                             nvjpegDevAllocator_t* dev_allocator,
                                             nvjpegPinnedAllocator_t* pinned_allocator,
                                             unsigned int flags, nvjpegHandle_t* handle);
using nvjpegDestroy_fn = nvjpegStatus_t (*)(nvjpegHandle_t handle);
using nvjpegJpegStateCreate_fn = nvjpegStatus_t (*)(nvjpegHandle_t handle,
                                                    nvjpegJpegState_t* jpeg_handle);
using nvjpegJpegStateDestroy_fn = nvjpegStatus_t (*)(nvjpegJpegState_t jpeg_handle);
using nvjpegGetImageInfo_fn = nvjpegStatus_t (*)(nvjpegHandle_t handle, const unsigned char* data,
                                                 std::size_t length, int* n_components,
                                                 nvjpegChromaSubsampling_t* subsampling,
                                                 int* widths, int* heights);
using nvjpegDecode_fn = nvjpegStatus_t (*)(nvjpegHandle_t handle, nvjpegJpegState_t jpeg_handle,
                                           const unsigned char* data, std::size_t length,
                                           nvjpegOutputFormat_t output_format,
                                           nvjpegImage_t* destination, cudaStream_t stream);
using nvjpegDecodeBatchedInitialize_fn = nvjpegStatus_t (*)(nvjpegHandle_t handle,
                                                            nvjpegJpegState_t jpeg_handle,
                                                            int batch_size, int max_cpu_threads,
                                                            nvjpegOutputFormat_t output_format);
using nvjpegDecodeBatched_fn = nvjpegStatus_t (*)(nvjpegHandle_t handle,
                                                  nvjpegJpegState_t jpeg_handle,
                                                  const unsigned char* const* data,
                                                  const std::size_t* lengths,
                                                  nvjpegImage_t* destinations, cudaStream_t stream);
using nvjpegJpegStreamCreate_fn = nvjpegStatus_t (*)(nvjpegHandle_t handle,
                                                     nvjpegJpegStream_t* jpeg_stream);
using nvjpegJpegStreamDestroy_fn = nvjpegStatus_t (*)(nvjpegJpegStream_t jpeg_stream);
using nvjpegJpegStreamParseHeader_fn = nvjpegStatus_t (*)(nvjpegHandle_t handle,
                                                          const unsigned char* data,
                                                          std::size_t length,
                                                          nvjpegJpegStream_t jpeg_stream);
using nvjpegJpegStreamGetFrameDimensions_fn = nvjpegStatus_t (*)(nvjpegJpegStream_t jpeg_stream,
                                                                 unsigned int* width,
                                                                 unsigned int* height);
using nvjpegJpegStreamGetComponentsNum_fn = nvjpegStatus_t (*)(nvjpegJpegStream_t jpeg_stream,
                                                               unsigned int* components_num);
// The extra bytes nvJPEG adds to each device or pinned buffer it (re)allocates.
using nvjpegSetMemoryPadding_fn = nvjpegStatus_t (*)(std::size_t padding, nvjpegHandle_t handle);
// *is_supported == 0 means SUPPORTED (nvjpeg.h's convention).
using nvjpegDecodeBatchedSupported_fn = nvjpegStatus_t (*)(nvjpegHandle_t handle,
                                                           nvjpegJpegStream_t jpeg_stream,
                                                           int* is_supported);
}  // extern "C"

}  // namespace gb::gpu::nvjpeg_api
