// gpu/nccl.hpp: NCCL, loaded at run time with dlopen (the project's own declarations in
// gpu/nccl_api.hpp), and a communicator over a set of GPUs of this process.
//
//   std::string why;
//   auto lib = NcclLibrary::load(default_nccl_library_names(), why);
//   if (!lib) report "skipped: " + why;          // "libnccl not found (tried libnccl.so.2: ...)"
//   NcclComms comms(lib, {0, 1, 2, 3});           // ncclCommInitAll; NCCL_NVLS_ENABLE=0 first
//   lib->check(lib->api().group_start(), "ncclGroupStart");
//
// NVLink SHARP (NVLS) is always switched off (NCCL_NVLS_ENABLE=0, set before the communicators
// are made, whatever the environment said): it needs multicast objects (cuMulticastCreate) that
// gpubase never makes and that a container or a partitioned NVSwitch system may refuse, and the
// figures are meant to compare links, not switch offload. The library path can be forced with
// $GPUBASE_NCCL_LIBRARY (tried first).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "gpu/nccl_api.hpp"

namespace gb::gpu {

// $GPUBASE_NCCL_LIBRARY when set, then libnccl.so.2, libnccl.so.
std::vector<std::string> default_nccl_library_names();

// "2.28.7" from ncclGetVersion's code (22807); codes before 2.9 (e.g. 2708) read as 2.7.8.
std::string nccl_version_text(int code);

class NcclLibrary {
 public:
  // The first of `names` that loads and has every entry point gpubase uses; nullptr otherwise,
  // with why_not saying what was tried: "libnccl not found (tried libnccl.so.2: <dlerror>)" or
  // "<path> has no ncclCommInitAll: not libnccl".
  static std::shared_ptr<NcclLibrary> load(const std::vector<std::string>& names,
                                           std::string& why_not);
  ~NcclLibrary();
  NcclLibrary(const NcclLibrary&) = delete;
  NcclLibrary& operator=(const NcclLibrary&) = delete;

  const std::string& path() const { return path_; }
  int version_code() const { return version_code_; }
  std::string version() const { return nccl_version_text(version_code_); }

  struct Api {
    nccl_api::ncclGetVersion_fn get_version = nullptr;
    nccl_api::ncclCommInitAll_fn comm_init_all = nullptr;
    nccl_api::ncclCommDestroy_fn comm_destroy = nullptr;
    nccl_api::ncclAllReduce_fn all_reduce = nullptr;
    nccl_api::ncclAllGather_fn all_gather = nullptr;
    nccl_api::ncclReduceScatter_fn reduce_scatter = nullptr;
    nccl_api::ncclGroupStart_fn group_start = nullptr;
    nccl_api::ncclGroupEnd_fn group_end = nullptr;
    nccl_api::ncclGetErrorString_fn get_error_string = nullptr;
    nccl_api::ncclGetLastError_fn get_last_error = nullptr;  // optional (NCCL 2.13+)
  };
  const Api& api() const { return api_; }

  // Throws gb::Error (runtime) naming the call, NCCL's result name and its last error text
  // unless rc is ncclSuccess.
  void check(nccl_api::ncclResult_t rc, const char* call,
             nccl_api::ncclComm_t comm = nullptr) const;

 private:
  NcclLibrary(void* so, std::string path) : so_(so), path_(std::move(path)) {}
  void* so_ = nullptr;
  std::string path_;
  Api api_;
  int version_code_ = 0;
  bool unload_ = true;
};

// One communicator per GPU of `devices` (rank i on devices[i]), made with ncclCommInitAll after
// NCCL_NVLS_ENABLE=0 was set; destroyed with the object.
class NcclComms {
 public:
  NcclComms(std::shared_ptr<NcclLibrary> lib, const std::vector<int>& devices);
  ~NcclComms();
  NcclComms(const NcclComms&) = delete;
  NcclComms& operator=(const NcclComms&) = delete;

  nccl_api::ncclComm_t operator[](std::size_t rank) const { return comms_[rank]; }
  std::size_t size() const { return comms_.size(); }
  const NcclLibrary& lib() const { return *lib_; }

 private:
  std::shared_ptr<NcclLibrary> lib_;
  std::vector<nccl_api::ncclComm_t> comms_;
};

// The environment variable and value NcclComms forces ("NCCL_NVLS_ENABLE", "0").
inline constexpr const char* kNcclNvlsVariable = "NCCL_NVLS_ENABLE";

}  // namespace gb::gpu
