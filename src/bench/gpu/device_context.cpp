// bench/gpu/device_context.cpp: the CUDA half of bench/suite.hpp: counting the devices, opening
// one for a suite (validated index, DeviceScope, NVML handle, spec-table entry) and the
// environment facts: what the CUDA runtime and NVML say about the card, driver and libraries.
// Facts that a source does not report are written as "N/A", never guessed.
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstdio>
#include <string>

#include "bench/suite.hpp"
#include "core/error.hpp"
#include "gpu/check.hpp"
#include "gpu/cublaslt_lazy.hpp"
#include "gpu/host_wait.hpp"

namespace gb::bench {

namespace {

std::string version_string(int major, int minor, int patch = -1) {
  std::string s = std::to_string(major) + "." + std::to_string(minor);
  if (patch >= 0) s += "." + std::to_string(patch);
  return s;
}

// CUDA encodes versions as 1000*major + 10*minor (13000 -> "13.0").
std::string cuda_version_string(int v) { return version_string(v / 1000, (v % 1000) / 10); }

int device_attribute(cudaDeviceAttr attr, int device) {
  int value = 0;
  GB_CHECK_CUDA(cudaDeviceGetAttribute(&value, attr, device));
  return value;
}

template <typename T, typename F>
std::string or_na(const std::optional<T>& v, F format) {
  return v ? format(*v) : std::string("N/A");
}

std::string on_off(bool b) { return b ? "enabled" : "disabled"; }

std::string link_string(const std::optional<int>& gen, const std::optional<int>& width) {
  if (!gen && !width) return "N/A";
  return "Gen" + (gen ? std::to_string(*gen) : std::string("?")) + " x" +
         (width ? std::to_string(*width) : std::string("?"));
}

}  // namespace

int cuda_device_count(std::string& reason) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err == cudaErrorInsufficientDriver) {
    reason = "no NVIDIA driver found (CUDA: driver version is insufficient); install the NVIDIA "
             "driver or run on a GPU host";
    return 0;
  }
  if (err == cudaErrorNoDevice || (err == cudaSuccess && count == 0)) {
    reason = "no NVIDIA GPU found (the driver reports no CUDA device)";
    return 0;
  }
  if (err != cudaSuccess) {
    reason = std::string("CUDA could not list devices: ") + cudaGetErrorString(err);
    return 0;
  }
  return count;
}

DeviceScope::DeviceScope(int device) {
  int previous = 0;
  GB_CHECK_CUDA(cudaGetDevice(&previous));
  GB_CHECK_CUDA(cudaSetDevice(device));
  restore_ = previous;
  gpu::apply_host_wait(gpu::host_wait_from_env());
}

DeviceScope::~DeviceScope() {
  if (restore_) (void)cudaSetDevice(*restore_);  // nothing to do about a failure here
}

DeviceScope::DeviceScope(DeviceScope&& other) noexcept : restore_(other.restore_) {
  other.restore_.reset();
}

DeviceScope& DeviceScope::operator=(DeviceScope&& other) noexcept {
  if (this != &other) {
    if (restore_) (void)cudaSetDevice(*restore_);
    restore_ = other.restore_;
    other.restore_.reset();
  }
  return *this;
}

namespace {

DeviceFacts query_device(int index) {
  cudaDeviceProp prop{};
  GB_CHECK_CUDA(cudaGetDeviceProperties(&prop, index));
  DeviceFacts d;
  d.index = index;
  d.name = prop.name;
  char bus_id[32] = {};
  GB_CHECK_CUDA(cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, index));
  d.pci_bus_id = bus_id;
  d.cc_major = prop.major;
  d.cc_minor = prop.minor;
  d.sm_count = prop.multiProcessorCount;
  d.sm_clock_max_mhz = device_attribute(cudaDevAttrClockRate, index) / 1000.0;
  d.mem_clock_max_mhz = device_attribute(cudaDevAttrMemoryClockRate, index) / 1000.0;
  d.mem_bus_width_bits = device_attribute(cudaDevAttrGlobalMemoryBusWidth, index);
  d.memory_bytes = static_cast<double>(prop.totalGlobalMem);
  d.l2_bytes = static_cast<double>(prop.l2CacheSize);
  return d;
}

}  // namespace

std::optional<DeviceContext> open_device(int index, std::string& no_gpu_reason) {
  const int count = cuda_device_count(no_gpu_reason);
  require_device_index(index, count);
  if (count == 0) return std::nullopt;
  DeviceContext ctx;
  ctx.scope = DeviceScope(index);
  ctx.device = query_device(index);
  const sys::Nvml nvml = sys::Nvml::load();
  if (nvml.available()) {
    ctx.nvml = nvml.device_by_pci_bus_id(ctx.device.pci_bus_id);
    if (!ctx.nvml)
      ctx.nvml_missing_reason = "NVML does not list the device at PCI " + ctx.device.pci_bus_id;
  } else {
    ctx.nvml_missing_reason = nvml.unavailable_reason();
  }
  ctx.spec = find_gpu_spec(ctx.device.name, ctx.device.memory_bytes / 1e9);
  return ctx;
}

void add_device_facts(const DeviceContext& ctx, ResultSink& sink) {
  const DeviceFacts& d = ctx.device;
  auto fact = [&](std::string key, std::string label, std::string value) {
    sink.add_fact(Fact::text(std::move(key), std::move(label), std::move(value)));
  };
  // A number with its unit; "N/A" when the device or driver does not report it.
  auto number = [&](std::string key, std::string label, std::optional<double> v,
                    std::string unit, int decimals) {
    if (v)
      sink.add_fact(Fact::numeric(std::move(key), std::move(label), *v, std::move(unit), decimals));
    else
      fact(std::move(key), std::move(label), "N/A");
  };
  constexpr double kGiB = 1024.0 * 1024 * 1024;
  constexpr double kMiB = 1024.0 * 1024;
  std::optional<sys::NvmlDeviceInfo> info;
  if (ctx.nvml) info = ctx.nvml->info();

  fact("gpu.index", "CUDA device", std::to_string(d.index));
  fact("gpu.name", "GPU", d.name);
  fact("gpu.uuid", "UUID", info ? or_na(info->uuid, [](const std::string& s) { return s; }) : "N/A");
  fact("gpu.pci_bus_id", "PCI bus id", d.pci_bus_id);
  fact("gpu.compute_capability", "compute capability",
       std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor));
  number("gpu.sm_count", "SMs", d.sm_count, "", 0);
  number("gpu.memory", "memory", d.memory_bytes / kGiB, "GiB", 1);
  number("gpu.l2", "L2 cache", d.l2_bytes / kMiB, "MiB", 0);
  number("gpu.mem_bus_width", "memory bus", d.mem_bus_width_bits, "bit", 0);
  number("gpu.sm_clock_max", "SM clock max", d.sm_clock_max_mhz, "MHz", 0);
  number("gpu.mem_clock_max", "memory clock max", d.mem_clock_max_mhz, "MHz", 0);
  if (ctx.nvml) {
    const sys::NvmlSample now = ctx.nvml->sample();
    number("gpu.sm_clock_now", "SM clock now", now.sm_clock_mhz, "MHz", 0);
    number("gpu.mem_clock_now", "memory clock now", now.mem_clock_mhz, "MHz", 0);
    number("gpu.temperature", "temperature", now.temp_c, "C", 0);
    number("gpu.power_now", "power now", now.power_w, "W", 0);
  }
  const int ecc = device_attribute(cudaDevAttrEccEnabled, d.index);
  fact("gpu.ecc", "ECC", on_off(ecc != 0));
  if (info) {
    fact("gpu.mig", "MIG", or_na(info->mig_enabled, on_off));
    fact("gpu.persistence", "persistence mode", or_na(info->persistence_enabled, on_off));
    number("gpu.power_limit", "power limit", info->power_limit_w, "W", 0);
    fact("gpu.pcie.current", "PCIe link now (idle)",
         link_string(info->pcie.gen_current, info->pcie.width_current));
    fact("gpu.pcie.max_slot", "PCIe link max (slot and GPU)",
         link_string(info->pcie.gen_max_slot, info->pcie.width_max));
    fact("gpu.pcie.max_gpu", "PCIe link max (GPU)",
         link_string(info->pcie.gen_max_gpu, info->pcie.width_max));
    sink.gpu().link_max_slot = {info->pcie.gen_max_slot, info->pcie.width_max};
    sink.gpu().link_max_gpu = {info->pcie.gen_max_gpu, info->pcie.width_max};
    fact("gpu.numa_node", "GPU NUMA node",
         or_na(info->numa_node, [](int n) { return n < 0 ? std::string("none") : std::to_string(n); }));
    fact("gpu.cpu_affinity", "CPUs near the GPU",
         or_na(info->cpu_affinity, [](const std::string& s) { return s; }));
  } else {
    fact("nvml", "NVML", "unavailable: " + ctx.nvml_missing_reason);
  }
  fact("gpu.spec", "spec-table entry",
       ctx.spec ? std::string(ctx.spec->name)
                : std::string("unknown GPU: references are computed from the device"));

  int driver = 0, runtime = 0;
  GB_CHECK_CUDA(cudaDriverGetVersion(&driver));
  GB_CHECK_CUDA(cudaRuntimeGetVersion(&runtime));
  const sys::Nvml nvml = sys::Nvml::load();
  fact("driver.version", "NVIDIA driver",
       or_na(nvml.available() ? nvml.driver_version() : std::nullopt,
             [](const std::string& s) { return s; }));
  fact("cuda.driver", "CUDA (driver)", cuda_version_string(driver));
  fact("cuda.runtime", "CUDA (runtime)", cuda_version_string(runtime));
  if (gpu::cublaslt_available()) {
    const auto lt = static_cast<int>(cublasLtGetVersion());  // major*10000 + minor*100 + patch
    fact("cublaslt.version", "cuBLASLt", version_string(lt / 10000, (lt / 100) % 100, lt % 100));
  } else {
    fact("cublaslt.version", "cuBLASLt", "unavailable: " + gpu::cublaslt_load_error());
  }
  const auto dnn = static_cast<int>(cudnnGetVersion());  // cuDNN 9: major*10000 + minor*100 + patch
  fact("cudnn.version", "cuDNN", version_string(dnn / 10000, (dnn / 100) % 100, dnn % 100));
}

}  // namespace gb::bench
