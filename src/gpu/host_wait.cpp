// gpu/host_wait.cpp: see host_wait.hpp.
#include "gpu/host_wait.hpp"

#include <cuda_runtime_api.h>

#include <cstdlib>

#include "core/error.hpp"
#include "gpu/check.hpp"

namespace gb::gpu {

std::optional<HostWait> parse_host_wait(std::string_view text) {
  if (text == "auto") return HostWait::automatic;
  if (text == "spin") return HostWait::spin;
  if (text == "yield") return HostWait::yield;
  if (text == "block") return HostWait::block;
  return std::nullopt;
}

std::string_view to_string(HostWait w) {
  switch (w) {
    case HostWait::automatic: return "auto";
    case HostWait::spin: return "spin";
    case HostWait::yield: return "yield";
    case HostWait::block: return "block";
  }
  return "auto";
}

HostWait host_wait_from_env() {
  const char* v = std::getenv("GPUBASE_CUDA_WAIT");
  if (!v || !*v) return kDefaultHostWait;
  if (const auto w = parse_host_wait(v)) return *w;
  throw Error(ErrorKind::usage, std::string("GPUBASE_CUDA_WAIT=") + v +
                                    ": expected auto, spin, yield or block");
}

void apply_host_wait(HostWait w) {
  unsigned flags = cudaDeviceScheduleAuto;
  switch (w) {
    case HostWait::automatic: flags = cudaDeviceScheduleAuto; break;
    case HostWait::spin: flags = cudaDeviceScheduleSpin; break;
    case HostWait::yield: flags = cudaDeviceScheduleYield; break;
    case HostWait::block: flags = cudaDeviceScheduleBlockingSync; break;
  }
  GB_CHECK_CUDA(cudaSetDeviceFlags(flags));
}

}  // namespace gb::gpu
