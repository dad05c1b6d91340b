// gpu/nccl.cpp: NCCL through dlopen, and the communicators (see nccl.hpp).
#include "gpu/nccl.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <type_traits>

#include "core/error.hpp"

namespace gb::gpu {

namespace api = nccl_api;

std::vector<std::string> default_nccl_library_names() {
  std::vector<std::string> names;
  if (const char* forced = std::getenv("GPUBASE_NCCL_LIBRARY"); forced && *forced)
    names.emplace_back(forced);
  for (const char* n : {"libnccl.so.2", "libnccl.so"}) names.emplace_back(n);
  return names;
}

std::string nccl_version_text(int code) {
  if (code <= 0) return "";
  // NCCL 2.9 and later: major*10000 + minor*100 + patch; before: major*1000 + minor*100 + patch.
  const bool old = code < 20900;
  const int major = old ? code / 1000 : code / 10000;
  const int rest = old ? code % 1000 : code % 10000;
  return std::to_string(major) + "." + std::to_string(rest / 100) + "." +
         std::to_string(rest % 100);
}

std::shared_ptr<NcclLibrary> NcclLibrary::load(const std::vector<std::string>& names,
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
    std::shared_ptr<NcclLibrary> lib(new NcclLibrary(so, name));
    Api& a = lib->api_;
    const char* absent = nullptr;
    auto bind = [&](auto& fn, const char* symbol, bool required = true) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(so, symbol));
      if (!fn && required && !absent) absent = symbol;
    };
    bind(a.get_version, "ncclGetVersion");
    bind(a.comm_init_all, "ncclCommInitAll");
    bind(a.comm_destroy, "ncclCommDestroy");
    bind(a.all_reduce, "ncclAllReduce");
    bind(a.all_gather, "ncclAllGather");
    bind(a.reduce_scatter, "ncclReduceScatter");
    bind(a.group_start, "ncclGroupStart");
    bind(a.group_end, "ncclGroupEnd");
    bind(a.get_error_string, "ncclGetErrorString");
    bind(a.get_last_error, "ncclGetLastError", /*required=*/false);
    if (absent) {
      missing += (missing.empty() ? "" : "; ") + name + " has no " + absent + ": not libnccl";
      continue;  // lib's destructor closes it
    }
    int code = 0;
    if (a.get_version(&code) != api::ncclSuccess) code = 0;
    lib->version_code_ = code;
    why_not.clear();
    lib->unload_ = false;
    return lib;
  }
  why_not = !missing.empty() ? missing : "libnccl not found (tried " + tried + ")";
  return nullptr;
}

NcclLibrary::~NcclLibrary() {
  // A library that turned out not to be libnccl is closed; libnccl itself stays loaded for the
  // life of the process: its proxy threads and exit handlers must not outlive their code.
  if (so_ && unload_) dlclose(so_);
}

void NcclLibrary::check(api::ncclResult_t rc, const char* call, api::ncclComm_t comm) const {
  if (rc == api::ncclSuccess) return;
  std::string msg = std::string(call) + " failed: ";
  const char* text = api_.get_error_string ? api_.get_error_string(rc) : nullptr;
  msg += text ? text : "ncclResult " + std::to_string(static_cast<int>(rc));
  if (api_.get_last_error) {
    const char* last = api_.get_last_error(comm);
    if (last && *last) msg += std::string(" (") + last + ")";
  }
  throw Error(ErrorKind::runtime, "NCCL " + version() + ": " + msg);
}

NcclComms::NcclComms(std::shared_ptr<NcclLibrary> lib, const std::vector<int>& devices)
    : lib_(std::move(lib)), comms_(devices.size(), nullptr) {
  // Always off, whatever the environment says (see nccl.hpp); read once by NCCL at init.
  setenv(kNcclNvlsVariable, "0", 1);
  lib_->check(lib_->api().comm_init_all(comms_.data(), static_cast<int>(devices.size()),
                                        devices.data()),
              "ncclCommInitAll");
}

NcclComms::~NcclComms() {
  for (api::ncclComm_t c : comms_)
    if (c) lib_->api().comm_destroy(c);
}

}  // namespace gb::gpu
