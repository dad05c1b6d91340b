// gpu/nvjpeg.hpp: nvJPEG, loaded at run time with dlopen (the project's own declarations in
// gpu/nvjpeg_api.hpp), and a batch decoder on top of it for the GPU decode path of the loader.
//
//   std::string why;
//   auto lib = NvjpegLibrary::load(default_nvjpeg_library_names(), why);
//   if (!lib) report "skipped: " + why;                 // "libnvjpeg not found (tried ...)"
//   NvjpegDecoder decoder(lib, NvjpegBackendChoice::automatic);
//   auto parser = decoder.header_parser();               // nvJPEG's own verdict (GPU tests)
//   JpegHeader h = parser.parse(bytes);                  // dimensions, or why it is rejected
//   decoder.decode(images, stream, status);              // RGBI into the caller's device buffers
//
// Backends. `automatic` prefers the hardware JPEG engines (NVJPEG_BACKEND_HARDWARE: NVJPG units
// on A100/A30/H100/H200; baseline, single-scan, 1 or 3 channel JPEGs, no 4:1:1 / 4:1:0) and
// falls back to NVJPEG_BACKEND_GPU_HYBRID (Huffman decode on the GPU for batches > 50, CUDA IDCT),
// then NVJPEG_BACKEND_DEFAULT, when nvjpegCreateEx refuses the hardware (no engine: status
// ARCH_MISMATCH or NOT_SUPPORTED). With the hardware backend, images the engine cannot take
// (progressive JPEGs, 4:1:1) are found by the header parser (nvjpegDecodeBatchedSupported) and
// decoded one by one on a second, DEFAULT-backend handle; so is every image of a batch whose
// batched decode failed, so one corrupt JPEG costs its batch a slow path, not the batch itself.
//
// Threads: decode() is called from one thread. A HeaderParser owns its own nvjpegJpegStream_t
// but parses through the decoder's handle, so its calls and decode() take the same lock: calls
// from other threads on the handle while nvjpegDecodeBatched ran on it hung the process. The
// loader's readers therefore do not use it: they read headers on the CPU
// (pipeline/nvjpeg_header.hpp) and the lock is met only by the consumer's decode; the parser is
// nvJPEG's own verdict, which the GPU tests compare the CPU rules with.
//
// The library path can be forced with $GPUBASE_NVJPEG_LIBRARY (tried first).
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpu/nvjpeg_api.hpp"

namespace gb::gpu {

// $GPUBASE_NVJPEG_LIBRARY when set, then libnvjpeg.so.13, libnvjpeg.so.12, libnvjpeg.so.
std::vector<std::string> default_nvjpeg_library_names();

// "NVJPEG_STATUS_BAD_JPEG" etc.; "nvJPEG status N" for codes this build does not know.
std::string nvjpeg_status_name(int status);

class NvjpegLibrary {
 public:
  // The first of `names` that loads and has every entry point gpubase uses; nullptr otherwise,
  // with why_not saying what was tried: "libnvjpeg not found (tried libnvjpeg.so.13: <dlerror>;
  // ...)" or "<path> has no nvjpegDecodeBatched: not libnvjpeg, or older than CUDA 11".
  static std::shared_ptr<NvjpegLibrary> load(const std::vector<std::string>& names,
                                             std::string& why_not);
  ~NvjpegLibrary();
  NvjpegLibrary(const NvjpegLibrary&) = delete;
  NvjpegLibrary& operator=(const NvjpegLibrary&) = delete;

  const std::string& path() const { return path_; }
  std::string version() const;  // "13.0.1" (nvjpegGetProperty), empty if it will not say

  struct Api {
    nvjpeg_api::nvjpegGetProperty_fn get_property = nullptr;
    nvjpeg_api::nvjpegCreateEx_fn create_ex = nullptr;
    nvjpeg_api::nvjpegDestroy_fn destroy = nullptr;
    nvjpeg_api::nvjpegJpegStateCreate_fn state_create = nullptr;
    nvjpeg_api::nvjpegJpegStateDestroy_fn state_destroy = nullptr;
    nvjpeg_api::nvjpegGetImageInfo_fn get_image_info = nullptr;
    nvjpeg_api::nvjpegDecode_fn decode = nullptr;
    nvjpeg_api::nvjpegDecodeBatchedInitialize_fn batched_initialize = nullptr;
    nvjpeg_api::nvjpegDecodeBatched_fn decode_batched = nullptr;
    nvjpeg_api::nvjpegJpegStreamCreate_fn stream_create = nullptr;
    nvjpeg_api::nvjpegJpegStreamDestroy_fn stream_destroy = nullptr;
    nvjpeg_api::nvjpegJpegStreamParseHeader_fn stream_parse_header = nullptr;
    nvjpeg_api::nvjpegJpegStreamGetFrameDimensions_fn stream_frame_dimensions = nullptr;
    nvjpeg_api::nvjpegJpegStreamGetComponentsNum_fn stream_components = nullptr;
    nvjpeg_api::nvjpegDecodeBatchedSupported_fn batched_supported = nullptr;
    // Optional (nullptr when the library lacks them).
    nvjpeg_api::nvjpegSetMemoryPadding_fn set_device_padding = nullptr;
    nvjpeg_api::nvjpegSetMemoryPadding_fn set_pinned_padding = nullptr;
  };
  const Api& api() const { return api_; }

 private:
  NvjpegLibrary(void* so, std::string path) : so_(so), path_(std::move(path)) {}
  void* so_ = nullptr;
  bool unload_ = true;  // false once it is known to be libnvjpeg (see the destructor)
  std::string path_;
  Api api_;
};

enum class NvjpegBackend { hardware, gpu_hybrid, default_backend };
std::string_view to_string(NvjpegBackend b);  // "hardware", "gpu_hybrid", "default"

enum class NvjpegBackendChoice { automatic, hardware, gpu_hybrid, default_backend };
// "auto", "hardware", "gpu_hybrid", "default"; empty for anything else.
std::optional<NvjpegBackendChoice> parse_nvjpeg_backend(std::string_view text);

// What a JPEG's header says, or why the GPU path rejects it.
struct JpegHeader {
  bool ok = false;
  std::string reason;  // when !ok: "NVJPEG_STATUS_BAD_JPEG", "4 components (CMYK)", ...
  int width = 0;
  int height = 0;
  int components = 0;
  bool batched_supported = true;  // the batched (hardware) decoder takes it
};

// Where nvJPEG's own buffers come from. driver: nvJPEG's defaults (cudaMalloc / cudaFree,
// cudaHostAlloc / cudaFreeHost). pooled: gpubase's block caches (gpu/block_cache.hpp), which
// keep a freed buffer for reuse instead of freeing it (cudaFree and cudaFreeHost synchronise the
// whole device), with 16 MiB of padding on each buffer nvJPEG grows. GPUBASE_NVJPEG_MEMORY=
// driver|pooled picks it (unset: pooled; driver to compare, bench/feed_check.sh's gpu-driver run;
// bench/NOTES.md b11, b12).
enum class NvjpegMemory { driver, pooled };
std::string_view to_string(NvjpegMemory m);  // "driver", "pooled"
// GPUBASE_NVJPEG_MEMORY; gb::Error (usage) naming the valid values for anything else.
NvjpegMemory nvjpeg_memory_from_env();

// nvjpegCreateEx's flags. By default NVJPEG_FLAGS_HW_DECODE_NO_PIPELINE: with the hardware
// decoder's batches pipelined (nvJPEG's default), its batched call waits for every kernel queued
// on the device, on any stream, so under training the decode and the step take turns; without
// the pipelining the call overlaps a busy GPU (bench/NOTES.md b12, measured on an H100 with
// bench/nvjpeg_wait_check.sh: the GPU waited 0.8 % beside stand-in steps against 24 %, and the
// nvJPEG-fed training ran 5,911 images/s against 4,860, the model alone ~6,030; the path alone
// 19,900 images/s against 23,400). GPUBASE_NVJPEG_FLAGS replaces the default, to measure:
// a comma-separated list of no_pipeline and memory_pools (NVJPEG_FLAGS_ENABLE_MEMORY_POOLS:
// nvJPEG's own device memory stream-ordered), or none. gb::Error (usage) naming the valid names
// for anything else.
inline constexpr unsigned kDefaultNvjpegFlags = nvjpeg_api::NVJPEG_FLAGS_HW_DECODE_NO_PIPELINE;
unsigned nvjpeg_flags_from_env();
// "none", "no_pipeline", "memory_pools", "no_pipeline,memory_pools".
std::string nvjpeg_flags_name(unsigned flags);

class NvjpegDecoder {
 public:
  // Throws gb::Error (runtime) naming the status when no requested backend can be created, or
  // when a backend asked for explicitly (hardware, gpu_hybrid) is refused.
  NvjpegDecoder(std::shared_ptr<NvjpegLibrary> library, NvjpegBackendChoice choice);
  ~NvjpegDecoder();
  NvjpegDecoder(const NvjpegDecoder&) = delete;
  NvjpegDecoder& operator=(const NvjpegDecoder&) = delete;

  NvjpegBackend backend() const { return backend_; }
  NvjpegMemory memory() const { return memory_; }
  unsigned flags() const { return flags_; }  // nvjpegCreateEx's (GPUBASE_NVJPEG_FLAGS)
  // Why the hardware engines are not used ("nvjpegCreateEx(HARDWARE):
  // NVJPEG_STATUS_ARCH_MISMATCH"), empty when they are.
  const std::string& fallback_reason() const { return fallback_reason_; }
  const NvjpegLibrary& library() const { return *library_; }

  // Parses headers on one host thread. Movable, not copyable.
  class HeaderParser {
   public:
    HeaderParser(HeaderParser&&) noexcept;
    HeaderParser& operator=(HeaderParser&&) noexcept;
    ~HeaderParser();
    JpegHeader parse(std::span<const std::uint8_t> jpeg);

   private:
    friend class NvjpegDecoder;
    HeaderParser(const NvjpegDecoder& decoder);
    const NvjpegDecoder* decoder_ = nullptr;
    nvjpeg_api::nvjpegJpegStream_t stream_ = nullptr;
  };
  HeaderParser header_parser() const;

  // One image to decode: host bytes (pinned for full-speed copies), its header's facts, and
  // where the RGBI pixels go (device memory, height rows of `pitch` >= 3 * width bytes).
  struct Image {
    const std::uint8_t* jpeg = nullptr;
    std::size_t bytes = 0;
    int width = 0, height = 0;
    bool batched_supported = true;
    std::uint8_t* dst = nullptr;
    std::size_t pitch = 0;
  };
  struct DecodeStatus {
    std::vector<std::uint8_t> ok;     // per image
    std::vector<std::string> reason;  // per image, when !ok
    std::size_t single_decodes = 0;   // images decoded one by one (unsupported or batch failed)
    bool batch_failed = false;        // the batched call failed and its images were redone
  };
  // The decoder keeps this many batched-decode states. A state holds nvJPEG's buffers for the
  // batch decoded with it until that batch is finished on the GPU, and nvJPEG waits inside its
  // next call on the state for that work (a driver wait that no signal interrupts). With one
  // state reused batch after batch, that wait sometimes never returned on H100 and H200
  // (hardware backend, 16 readers; bench/NOTES.md b4). A caller that pipelines batches
  // takes the states in turn and reuses one only once its previous batch is done (its own,
  // cancellable wait), so nvJPEG's wait finds nothing to wait for. Three: one batch being
  // decoded, one decoded ahead, one the consumer's kernel may still read.
  static constexpr int kBatchedStates = 3;

  // Decodes every image, enqueuing the GPU work on `stream` (nvJPEG may block the calling thread
  // for its host stages) with batched state `state` (0 .. kBatchedStates - 1). Never throws for
  // bad data: a JPEG nvJPEG rejects is !ok with its status. Throws gb::Error for CUDA or library
  // failures that are not about the data.
  void decode(std::span<const Image> images, cudaStream_t stream, DecodeStatus& status,
              int state = 0);

 private:
  nvjpeg_api::nvjpegDevAllocator_t* device_allocator() const;  // nullptr: nvJPEG's default
  nvjpeg_api::nvjpegPinnedAllocator_t* pinned_allocator() const;
  void pad(nvjpeg_api::nvjpegHandle_t h) const;  // pooled: the padding, where the library has it
  void ensure_single_handle();
  bool decode_single(const Image& image, cudaStream_t stream, std::string& reason);

  std::shared_ptr<NvjpegLibrary> library_;
  NvjpegBackend backend_ = NvjpegBackend::default_backend;
  NvjpegMemory memory_ = NvjpegMemory::driver;
  unsigned flags_ = 0;
  std::string fallback_reason_;
  nvjpeg_api::nvjpegHandle_t handle_ = nullptr;
  // Serialises every call on handle_ (decode() and HeaderParser): with calls from several
  // threads on one handle the pipeline hung for good (Ctrl-C included) right after its first
  // batch. The loader's readers no longer call nvJPEG, so in a loader run only the consumer's
  // decode takes it, uncontended.
  mutable std::mutex api_mutex_;
  nvjpeg_api::nvjpegJpegState_t batched_state_[kBatchedStates] = {};
  // Per state, the size nvjpegDecodeBatchedInitialize was last called with.
  int batched_size_[kBatchedStates] = {-1, -1, -1};
  // Single-image decodes: the DEFAULT backend, made on first need.
  nvjpeg_api::nvjpegHandle_t single_handle_ = nullptr;
  nvjpeg_api::nvjpegJpegState_t single_state_ = nullptr;
  std::vector<const unsigned char*> data_;
  std::vector<std::size_t> lengths_;
  std::vector<nvjpeg_api::nvjpegImage_t> outputs_;
  std::vector<std::size_t> batched_index_;
};

}  // namespace gb::gpu
