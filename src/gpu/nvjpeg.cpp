// gpu/nvjpeg.cpp: nvJPEG through dlopen, and the batch decoder (see nvjpeg.hpp).
#include "gpu/nvjpeg.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <type_traits>
#include <utility>

#include "core/check.hpp"
#include "core/error.hpp"
#include "gpu/block_cache.hpp"
#include "gpu/check.hpp"

namespace gb::gpu {

namespace api = nvjpeg_api;

namespace {

const char* status_cstr(int status) {
  switch (status) {
    case api::NVJPEG_STATUS_SUCCESS:
      return "NVJPEG_STATUS_SUCCESS";
    case api::NVJPEG_STATUS_NOT_INITIALIZED:
      return "NVJPEG_STATUS_NOT_INITIALIZED";
    case api::NVJPEG_STATUS_INVALID_PARAMETER:
      return "NVJPEG_STATUS_INVALID_PARAMETER";
    case api::NVJPEG_STATUS_BAD_JPEG:
      return "NVJPEG_STATUS_BAD_JPEG";
    case api::NVJPEG_STATUS_JPEG_NOT_SUPPORTED:
      return "NVJPEG_STATUS_JPEG_NOT_SUPPORTED";
    case api::NVJPEG_STATUS_ALLOCATOR_FAILURE:
      return "NVJPEG_STATUS_ALLOCATOR_FAILURE";
    case api::NVJPEG_STATUS_EXECUTION_FAILED:
      return "NVJPEG_STATUS_EXECUTION_FAILED";
    case api::NVJPEG_STATUS_ARCH_MISMATCH:
      return "NVJPEG_STATUS_ARCH_MISMATCH";
    case api::NVJPEG_STATUS_INTERNAL_ERROR:
      return "NVJPEG_STATUS_INTERNAL_ERROR";
    case api::NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED:
      return "NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED";
    case api::NVJPEG_STATUS_INCOMPLETE_BITSTREAM:
      return "NVJPEG_STATUS_INCOMPLETE_BITSTREAM";
  }
  return nullptr;
}

const char* status_name_or_unknown(int status) {
  const char* name = status_cstr(status);
  return name ? name : "NVJPEG_STATUS_UNKNOWN";
}

// A status about the data (skip the image) rather than about the library or the GPU (fail).
bool is_data_error(int status) {
  return status == api::NVJPEG_STATUS_BAD_JPEG || status == api::NVJPEG_STATUS_JPEG_NOT_SUPPORTED ||
         status == api::NVJPEG_STATUS_INCOMPLETE_BITSTREAM ||
         status == api::NVJPEG_STATUS_INVALID_PARAMETER ||
         status == api::NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED;
}

}  // namespace

#define GB_CHECK_NVJPEG(expr)                                                \
  GB_CHECK_GEN(expr, ::gb::gpu::nvjpeg_api::NVJPEG_STATUS_SUCCESS, "nvJPEG", \
               status_name_or_unknown, ::gb::gpu::throw_cuda_failure)
#define GB_CHECK_NVJPEG_NOTHROW(expr)                                        \
  GB_CHECK_GEN(expr, ::gb::gpu::nvjpeg_api::NVJPEG_STATUS_SUCCESS, "nvJPEG", \
               status_name_or_unknown, ::gb::warn_check_failure)

std::string nvjpeg_status_name(int status) {
  const char* name = status_cstr(status);
  return name ? name : "nvJPEG status " + std::to_string(status);
}

std::vector<std::string> default_nvjpeg_library_names() {
  std::vector<std::string> names;
  if (const char* forced = std::getenv("GPUBASE_NVJPEG_LIBRARY"); forced && *forced)
    names.emplace_back(forced);
  for (const char* n : {"libnvjpeg.so.13", "libnvjpeg.so.12", "libnvjpeg.so"})
    names.emplace_back(n);
  return names;
}

// --- NvjpegLibrary ------------------------------------------------------------------------------

std::shared_ptr<NvjpegLibrary> NvjpegLibrary::load(const std::vector<std::string>& names,
                                                   std::string& why_not) {
  std::string tried;
  std::string missing;
  for (const std::string& name : names) {
    dlerror();
    void* so = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!so) {
      const char* why = dlerror();
      tried += (tried.empty() ? "" : "; ") + name + (why ? std::string(": ") + why : "");
      continue;
    }
    std::shared_ptr<NvjpegLibrary> lib(new NvjpegLibrary(so, name));
    Api& a = lib->api_;
    const char* absent = nullptr;
    auto bind = [&](auto& fn, const char* symbol) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(so, symbol));
      if (!fn && !absent) absent = symbol;
    };
    bind(a.get_property, "nvjpegGetProperty");
    bind(a.create_ex, "nvjpegCreateEx");
    bind(a.destroy, "nvjpegDestroy");
    bind(a.state_create, "nvjpegJpegStateCreate");
    bind(a.state_destroy, "nvjpegJpegStateDestroy");
    bind(a.get_image_info, "nvjpegGetImageInfo");
    bind(a.decode, "nvjpegDecode");
    bind(a.batched_initialize, "nvjpegDecodeBatchedInitialize");
    bind(a.decode_batched, "nvjpegDecodeBatched");
    bind(a.stream_create, "nvjpegJpegStreamCreate");
    bind(a.stream_destroy, "nvjpegJpegStreamDestroy");
    bind(a.stream_parse_header, "nvjpegJpegStreamParseHeader");
    bind(a.stream_frame_dimensions, "nvjpegJpegStreamGetFrameDimensions");
    bind(a.stream_components, "nvjpegJpegStreamGetComponentsNum");
    bind(a.batched_supported, "nvjpegDecodeBatchedSupported");
    if (absent) {
      missing += (missing.empty() ? "" : "; ") + name + " has no " + absent +
                 ": not libnvjpeg, or older than CUDA 11";
      continue;  // lib's destructor closes it
    }
    a.set_device_padding = reinterpret_cast<api::nvjpegSetMemoryPadding_fn>(
        dlsym(so, "nvjpegSetDeviceMemoryPadding"));
    a.set_pinned_padding = reinterpret_cast<api::nvjpegSetMemoryPadding_fn>(
        dlsym(so, "nvjpegSetPinnedMemoryPadding"));
    why_not.clear();
    lib->unload_ = false;
    return lib;
  }
  why_not = !missing.empty() ? missing : "libnvjpeg not found (tried " + tried + ")";
  return nullptr;
}

NvjpegLibrary::~NvjpegLibrary() {
  // A library that turned out not to be libnvjpeg is closed; libnvjpeg itself stays loaded for
  // the life of the process: its built-in CUDA runtime registers exit-time handlers, which must
  // not outlive their code.
  if (so_ && unload_) dlclose(so_);
}

std::string NvjpegLibrary::version() const {
  int v[3] = {-1, -1, -1};
  for (int i = 0; i < 3; ++i)
    if (api_.get_property(i, &v[i]) != api::NVJPEG_STATUS_SUCCESS) return {};
  return std::to_string(v[0]) + "." + std::to_string(v[1]) + "." + std::to_string(v[2]);
}

// --- backends ----------------------------------------------------------------------------------

std::string_view to_string(NvjpegBackend b) {
  switch (b) {
    case NvjpegBackend::hardware:
      return "hardware";
    case NvjpegBackend::gpu_hybrid:
      return "gpu_hybrid";
    case NvjpegBackend::default_backend:
      return "default";
  }
  return "default";
}

std::optional<NvjpegBackendChoice> parse_nvjpeg_backend(std::string_view text) {
  if (text == "auto") return NvjpegBackendChoice::automatic;
  if (text == "hardware") return NvjpegBackendChoice::hardware;
  if (text == "gpu_hybrid") return NvjpegBackendChoice::gpu_hybrid;
  if (text == "default") return NvjpegBackendChoice::default_backend;
  return std::nullopt;
}

// --- nvJPEG's memory ---------------------------------------------------------------------------

namespace {

// Process-wide block caches for nvJPEG's buffers, per device (a block is device memory of the
// device current when it was made). Never destroyed: nvJPEG handles may outlive static
// destruction, and freeing at exit would call the driver while it shuts down.
BlockCache& device_blocks() {
  static std::mutex mu;
  static auto* caches = new std::map<int, std::unique_ptr<BlockCache>>();
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) device = 0;
  const std::lock_guard lock(mu);
  auto& cache = (*caches)[device];
  if (!cache) {
    cache = std::make_unique<BlockCache>(
        [](std::size_t n) -> void* {
          void* p = nullptr;
          return cudaMalloc(&p, n) == cudaSuccess ? p : nullptr;
        },
        [](void* p) { (void)cudaFree(p); });
  }
  return *cache;
}

BlockCache& pinned_blocks() {
  static auto* cache = new BlockCache(
      [](std::size_t n) -> void* {
        void* p = nullptr;
        return cudaHostAlloc(&p, n, cudaHostAllocDefault) == cudaSuccess ? p : nullptr;
      },
      [](void* p) { (void)cudaFreeHost(p); });
  return *cache;
}

extern "C" int pooled_device_malloc(void** ptr, std::size_t size) {
  *ptr = device_blocks().take(size);
  return *ptr ? 0 : static_cast<int>(cudaErrorMemoryAllocation);
}
extern "C" int pooled_device_free(void* ptr) {
  if (ptr && !device_blocks().give(ptr)) return static_cast<int>(cudaErrorInvalidValue);
  return 0;
}
extern "C" int pooled_pinned_malloc(void** ptr, std::size_t size, unsigned int /*flags*/) {
  *ptr = pinned_blocks().take(size);
  return *ptr ? 0 : static_cast<int>(cudaErrorMemoryAllocation);
}
extern "C" int pooled_pinned_free(void* ptr) {
  if (ptr && !pinned_blocks().give(ptr)) return static_cast<int>(cudaErrorInvalidValue);
  return 0;
}

api::nvjpegDevAllocator_t g_device_allocator{pooled_device_malloc, pooled_device_free};
api::nvjpegPinnedAllocator_t g_pinned_allocator{pooled_pinned_malloc, pooled_pinned_free};

constexpr std::size_t kPooledPadding = std::size_t{16} << 20;  // DALI's default

}  // namespace

std::string_view to_string(NvjpegMemory m) {
  return m == NvjpegMemory::pooled ? "pooled" : "driver";
}

NvjpegMemory nvjpeg_memory_from_env() {
  const char* v = std::getenv("GPUBASE_NVJPEG_MEMORY");
  if (!v || !*v || std::string_view(v) == "pooled") return NvjpegMemory::pooled;
  if (std::string_view(v) == "driver") return NvjpegMemory::driver;
  throw Error(ErrorKind::usage, std::string("GPUBASE_NVJPEG_MEMORY=") + v +
                                    ": not driver or pooled");
}

unsigned nvjpeg_flags_from_env() {
  const char* v = std::getenv("GPUBASE_NVJPEG_FLAGS");
  if (!v || !*v) return kDefaultNvjpegFlags;
  unsigned flags = 0;
  if (std::string_view(v) == "none") return flags;
  std::string_view rest(v);
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    const std::string_view name = rest.substr(0, comma);
    if (name == "no_pipeline") {
      flags |= api::NVJPEG_FLAGS_HW_DECODE_NO_PIPELINE;
    } else if (name == "memory_pools") {
      flags |= api::NVJPEG_FLAGS_ENABLE_MEMORY_POOLS;
    } else if (!name.empty()) {
      throw Error(ErrorKind::usage, "GPUBASE_NVJPEG_FLAGS=" + std::string(v) + ": '" +
                                        std::string(name) +
                                        "' is not no_pipeline, memory_pools or none");
    }
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return flags;
}

std::string nvjpeg_flags_name(unsigned flags) {
  std::string s;
  if (flags & api::NVJPEG_FLAGS_HW_DECODE_NO_PIPELINE) s = "no_pipeline";
  if (flags & api::NVJPEG_FLAGS_ENABLE_MEMORY_POOLS) s += s.empty() ? "memory_pools" : ",memory_pools";
  return s.empty() ? "none" : s;
}

// --- NvjpegDecoder -----------------------------------------------------------------------------

api::nvjpegDevAllocator_t* NvjpegDecoder::device_allocator() const {
  return memory_ == NvjpegMemory::pooled ? &g_device_allocator : nullptr;
}

api::nvjpegPinnedAllocator_t* NvjpegDecoder::pinned_allocator() const {
  return memory_ == NvjpegMemory::pooled ? &g_pinned_allocator : nullptr;
}

void NvjpegDecoder::pad(api::nvjpegHandle_t h) const {
  if (memory_ != NvjpegMemory::pooled) return;
  const auto& a = library_->api();
  if (a.set_device_padding) GB_CHECK_NVJPEG(a.set_device_padding(kPooledPadding, h));
  if (a.set_pinned_padding) GB_CHECK_NVJPEG(a.set_pinned_padding(kPooledPadding, h));
}

NvjpegDecoder::NvjpegDecoder(std::shared_ptr<NvjpegLibrary> library, NvjpegBackendChoice choice)
    : library_(std::move(library)),
      memory_(nvjpeg_memory_from_env()),
      flags_(nvjpeg_flags_from_env()) {
  const auto& a = library_->api();
  struct Candidate {
    api::nvjpegBackend_t id;
    NvjpegBackend backend;
    const char* name;
  };
  std::vector<Candidate> order;
  switch (choice) {
    case NvjpegBackendChoice::automatic:
      order = {{api::NVJPEG_BACKEND_HARDWARE, NvjpegBackend::hardware, "HARDWARE"},
               {api::NVJPEG_BACKEND_GPU_HYBRID, NvjpegBackend::gpu_hybrid, "GPU_HYBRID"},
               {api::NVJPEG_BACKEND_DEFAULT, NvjpegBackend::default_backend, "DEFAULT"}};
      break;
    case NvjpegBackendChoice::hardware:
      order = {{api::NVJPEG_BACKEND_HARDWARE, NvjpegBackend::hardware, "HARDWARE"}};
      break;
    case NvjpegBackendChoice::gpu_hybrid:
      order = {{api::NVJPEG_BACKEND_GPU_HYBRID, NvjpegBackend::gpu_hybrid, "GPU_HYBRID"}};
      break;
    case NvjpegBackendChoice::default_backend:
      order = {{api::NVJPEG_BACKEND_DEFAULT, NvjpegBackend::default_backend, "DEFAULT"}};
      break;
  }
  std::string refusals;
  for (const Candidate& c : order) {
    api::nvjpegHandle_t h = nullptr;
    const int rc = a.create_ex(c.id, device_allocator(), pinned_allocator(), flags_, &h);
    if (rc == api::NVJPEG_STATUS_SUCCESS) {
      handle_ = h;
      backend_ = c.backend;
      break;
    }
    refusals += (refusals.empty() ? "" : "; ") + std::string("nvjpegCreateEx(") + c.name +
                "): " + nvjpeg_status_name(rc);
  }
  if (!handle_)
    throw Error(ErrorKind::runtime, "nvJPEG: no decoder backend available (" + refusals + ")");
  if (backend_ != NvjpegBackend::hardware) fallback_reason_ = refusals;
  try {
    pad(handle_);
    for (auto& state : batched_state_) GB_CHECK_NVJPEG(a.state_create(handle_, &state));
  } catch (...) {
    for (auto& state : batched_state_)
      if (state) GB_CHECK_NVJPEG_NOTHROW(a.state_destroy(state));
    GB_CHECK_NVJPEG_NOTHROW(a.destroy(handle_));
    throw;
  }
}

NvjpegDecoder::~NvjpegDecoder() {
  const auto& a = library_->api();
  if (single_state_) GB_CHECK_NVJPEG_NOTHROW(a.state_destroy(single_state_));
  if (single_handle_) GB_CHECK_NVJPEG_NOTHROW(a.destroy(single_handle_));
  for (auto& state : batched_state_)
    if (state) GB_CHECK_NVJPEG_NOTHROW(a.state_destroy(state));
  if (handle_) GB_CHECK_NVJPEG_NOTHROW(a.destroy(handle_));
}

NvjpegDecoder::HeaderParser::HeaderParser(const NvjpegDecoder& decoder) : decoder_(&decoder) {
  const std::lock_guard lock(decoder.api_mutex_);
  GB_CHECK_NVJPEG(decoder.library_->api().stream_create(decoder.handle_, &stream_));
}

NvjpegDecoder::HeaderParser::HeaderParser(HeaderParser&& o) noexcept
    : decoder_(o.decoder_), stream_(std::exchange(o.stream_, nullptr)) {}

NvjpegDecoder::HeaderParser& NvjpegDecoder::HeaderParser::operator=(HeaderParser&& o) noexcept {
  if (this != &o) {
    if (stream_) {
      const std::lock_guard lock(decoder_->api_mutex_);
      GB_CHECK_NVJPEG_NOTHROW(decoder_->library_->api().stream_destroy(stream_));
    }
    decoder_ = o.decoder_;
    stream_ = std::exchange(o.stream_, nullptr);
  }
  return *this;
}

NvjpegDecoder::HeaderParser::~HeaderParser() {
  if (!stream_) return;
  const std::lock_guard lock(decoder_->api_mutex_);
  GB_CHECK_NVJPEG_NOTHROW(decoder_->library_->api().stream_destroy(stream_));
}

NvjpegDecoder::HeaderParser NvjpegDecoder::header_parser() const {
  return HeaderParser(*this);
}

JpegHeader NvjpegDecoder::HeaderParser::parse(std::span<const std::uint8_t> jpeg) {
  const auto& a = decoder_->library_->api();
  const std::lock_guard lock(decoder_->api_mutex_);
  JpegHeader h;
  const int rc = a.stream_parse_header(decoder_->handle_, jpeg.data(), jpeg.size(), stream_);
  if (rc != api::NVJPEG_STATUS_SUCCESS) {
    h.reason = "nvJPEG header: " + nvjpeg_status_name(rc);
    return h;
  }
  unsigned w = 0, hgt = 0, comps = 0;
  if (a.stream_frame_dimensions(stream_, &w, &hgt) != api::NVJPEG_STATUS_SUCCESS ||
      a.stream_components(stream_, &comps) != api::NVJPEG_STATUS_SUCCESS) {
    h.reason = "nvJPEG header: no frame dimensions";
    return h;
  }
  if (comps != 1 && comps != 3) {
    h.reason = std::to_string(comps) + " components (only greyscale and YCbCr are decoded)";
    return h;
  }
  if (w == 0 || hgt == 0 || w > 65535 || hgt > 65535) {
    h.reason = "image size " + std::to_string(w) + "x" + std::to_string(hgt);
    return h;
  }
  h.width = static_cast<int>(w);
  h.height = static_cast<int>(hgt);
  h.components = static_cast<int>(comps);
  if (decoder_->backend_ == NvjpegBackend::hardware) {
    int unsupported = 1;  // nvjpeg.h: 0 means supported
    const int s = a.batched_supported(decoder_->handle_, stream_, &unsupported);
    h.batched_supported = s == api::NVJPEG_STATUS_SUCCESS && unsupported == 0;
  }
  h.ok = true;
  return h;
}

void NvjpegDecoder::ensure_single_handle() {
  if (single_state_) return;
  const auto& a = library_->api();
  if (backend_ == NvjpegBackend::hardware) {
    GB_CHECK_NVJPEG(a.create_ex(api::NVJPEG_BACKEND_DEFAULT, device_allocator(),
                                pinned_allocator(), flags_, &single_handle_));
    pad(single_handle_);
    GB_CHECK_NVJPEG(a.state_create(single_handle_, &single_state_));
  } else {
    GB_CHECK_NVJPEG(a.state_create(handle_, &single_state_));
  }
}

bool NvjpegDecoder::decode_single(const Image& im, cudaStream_t stream, std::string& reason) {
  ensure_single_handle();
  api::nvjpegImage_t out{};
  out.channel[0] = im.dst;
  out.pitch[0] = im.pitch;
  const auto& a = library_->api();
  const int rc = a.decode(single_handle_ ? single_handle_ : handle_, single_state_, im.jpeg,
                          im.bytes, api::NVJPEG_OUTPUT_RGBI, &out, stream);
  if (rc == api::NVJPEG_STATUS_SUCCESS) return true;
  if (!is_data_error(rc)) GB_CHECK_NVJPEG(rc);
  reason = "nvJPEG decode: " + nvjpeg_status_name(rc);
  return false;
}

void NvjpegDecoder::decode(std::span<const Image> images, cudaStream_t stream, DecodeStatus& status,
                           int state) {
  if (state < 0 || state >= kBatchedStates)
    throw Error(ErrorKind::runtime, "nvJPEG: no batched state " + std::to_string(state));
  const auto& a = library_->api();
  const std::lock_guard lock(api_mutex_);  // held through the single decodes too
  status.ok.assign(images.size(), 0);
  status.reason.assign(images.size(), std::string());
  status.single_decodes = 0;
  status.batch_failed = false;

  data_.clear();
  lengths_.clear();
  outputs_.clear();
  batched_index_.clear();
  for (std::size_t i = 0; i < images.size(); ++i) {
    const Image& im = images[i];
    if (!im.batched_supported) continue;
    api::nvjpegImage_t out{};
    out.channel[0] = im.dst;
    out.pitch[0] = im.pitch;
    data_.push_back(im.jpeg);
    lengths_.push_back(im.bytes);
    outputs_.push_back(out);
    batched_index_.push_back(i);
  }

  if (!batched_index_.empty()) {
    const int n = static_cast<int>(batched_index_.size());
    api::nvjpegJpegState_t st = batched_state_[state];
    if (n != batched_size_[state]) {
      // max_cpu_threads: 1 (0 is refused; the hardware backend ignores it).
      GB_CHECK_NVJPEG(a.batched_initialize(handle_, st, n, 1, api::NVJPEG_OUTPUT_RGBI));
      batched_size_[state] = n;
    }
    const int rc =
        a.decode_batched(handle_, st, data_.data(), lengths_.data(), outputs_.data(), stream);
    if (rc == api::NVJPEG_STATUS_SUCCESS) {
      for (const std::size_t i : batched_index_) status.ok[i] = 1;
    } else {
      if (!is_data_error(rc) && rc != api::NVJPEG_STATUS_EXECUTION_FAILED &&
          rc != api::NVJPEG_STATUS_INTERNAL_ERROR)
        GB_CHECK_NVJPEG(rc);
      // One bad image fails the whole call: redo its images one by one to find it. The batched
      // state must be initialised again after a failure (nvJPEG's documentation).
      status.batch_failed = true;
      batched_size_[state] = -1;
    }
  }

  for (std::size_t i = 0; i < images.size(); ++i) {
    if (status.ok[i]) continue;
    ++status.single_decodes;
    if (decode_single(images[i], stream, status.reason[i])) status.ok[i] = 1;
  }
}

}  // namespace gb::gpu
