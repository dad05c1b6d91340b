// sys/nvml.cpp: NVML through dlopen (see nvml.hpp). NvmlLibrary owns the library handle and the
// resolved entry points; every query degrades to an empty optional when the entry point is
// missing or NVML answers anything but NVML_SUCCESS (most often NVML_ERROR_NOT_SUPPORTED).
#include "sys/nvml.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <utility>

#include "sys/cpu_info.hpp"
#include "sys/nvml_api.hpp"

namespace gb::sys {

namespace api = nvml_api;

// The loaded library: handle, entry points, and whether nvmlInit succeeded. Entry points are
// written once while loading and only read afterwards, so devices and the telemetry thread share
// one instance freely (NVML itself is thread-safe).
class NvmlLibrary {
 public:
  NvmlLibrary(void* so, std::string path) : so_(so), path_(std::move(path)) {}
  ~NvmlLibrary() {
    if (initialized && shutdown) shutdown();
    if (so_) dlclose(so_);
  }
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  template <typename Fn>
  Fn symbol(const char* name) const {
    return reinterpret_cast<Fn>(dlsym(so_, name));
  }
  const std::string& path() const { return path_; }

  bool initialized = false;
  // Core: without these nothing works.
  api::nvmlInit_v2_fn init = nullptr;
  api::nvmlShutdown_fn shutdown = nullptr;
  api::nvmlDeviceGetCount_v2_fn get_count = nullptr;
  api::nvmlDeviceGetHandleByIndex_v2_fn get_handle_by_index = nullptr;
  // Optional: a missing one leaves its field empty.
  api::nvmlErrorString_fn error_string = nullptr;
  api::nvmlSystemGetDriverVersion_fn get_driver_version = nullptr;
  api::nvmlSystemGetCudaDriverVersion_fn get_cuda_driver_version = nullptr;
  api::nvmlDeviceGetHandleByPciBusId_v2_fn get_handle_by_pci_bus_id = nullptr;
  api::nvmlDeviceGetString_fn get_name = nullptr;
  api::nvmlDeviceGetString_fn get_uuid = nullptr;
  api::nvmlDeviceGetPciInfo_v3_fn get_pci_info = nullptr;
  api::nvmlDeviceGetMemoryInfo_fn get_memory_info = nullptr;
  api::nvmlDeviceGetClock_fn get_max_clock_info = nullptr;
  api::nvmlDeviceGetClock_fn get_clock_info = nullptr;
  api::nvmlDeviceGetUInt_fn get_power_usage = nullptr;
  api::nvmlDeviceGetUInt_fn get_enforced_power_limit = nullptr;
  api::nvmlDeviceGetUInt_fn get_power_default_limit = nullptr;
  api::nvmlDeviceGetTemperature_fn get_temperature = nullptr;
  api::nvmlDeviceGetClocksEventReasons_fn get_clocks_event_reasons = nullptr;
  api::nvmlDeviceGetUInt_fn get_curr_pcie_gen = nullptr;
  api::nvmlDeviceGetUInt_fn get_max_pcie_gen = nullptr;
  api::nvmlDeviceGetUInt_fn get_gpu_max_pcie_gen = nullptr;
  api::nvmlDeviceGetUInt_fn get_curr_pcie_width = nullptr;
  api::nvmlDeviceGetUInt_fn get_max_pcie_width = nullptr;
  api::nvmlDeviceGetUInt_fn get_pcie_replay_counter = nullptr;
  api::nvmlDeviceGetEccMode_fn get_ecc_mode = nullptr;
  api::nvmlDeviceGetMigMode_fn get_mig_mode = nullptr;
  api::nvmlDeviceGetPersistenceMode_fn get_persistence_mode = nullptr;
  api::nvmlDeviceGetUtilizationRates_fn get_utilization = nullptr;
  api::nvmlDeviceGetCpuAffinity_fn get_cpu_affinity = nullptr;
  // Watch metrics.
  api::nvmlDeviceGetSamples_fn get_samples = nullptr;
  api::nvmlDeviceGetProcessUtilization_fn get_process_utilization = nullptr;
  api::nvmlDeviceGetPcieThroughput_fn get_pcie_throughput = nullptr;
  api::nvmlDeviceGetFieldValues_fn get_field_values = nullptr;
  api::nvmlGpmQueryDeviceSupport_fn gpm_query_device_support = nullptr;
  api::nvmlGpmSampleAlloc_fn gpm_sample_alloc = nullptr;
  api::nvmlGpmSampleFree_fn gpm_sample_free = nullptr;
  api::nvmlGpmSampleGet_fn gpm_sample_get = nullptr;
  api::nvmlGpmMetricsGet_fn gpm_metrics_get = nullptr;
  // GPU-to-GPU links.
  api::nvmlDeviceGetTopologyCommonAncestor_fn get_topology_common_ancestor = nullptr;
  api::nvmlDeviceGetP2PStatus_fn get_p2p_status = nullptr;
  api::nvmlDeviceGetNvLinkState_fn get_nvlink_state = nullptr;
  api::nvmlDeviceGetNvLinkVersion_fn get_nvlink_version = nullptr;
  api::nvmlDeviceGetNvLinkRemotePciInfo_v2_fn get_nvlink_remote_pci_info = nullptr;

 private:
  void* so_;
  std::string path_;
};

namespace {

const char* return_code_name(api::nvmlReturn_t rc) {
  switch (rc) {
    case api::NVML_SUCCESS:
      return "NVML_SUCCESS";
    case api::NVML_ERROR_UNINITIALIZED:
      return "NVML_ERROR_UNINITIALIZED";
    case api::NVML_ERROR_INVALID_ARGUMENT:
      return "NVML_ERROR_INVALID_ARGUMENT";
    case api::NVML_ERROR_NOT_SUPPORTED:
      return "NVML_ERROR_NOT_SUPPORTED";
    case api::NVML_ERROR_NO_PERMISSION:
      return "NVML_ERROR_NO_PERMISSION";
    case api::NVML_ERROR_ALREADY_INITIALIZED:
      return "NVML_ERROR_ALREADY_INITIALIZED";
    case api::NVML_ERROR_NOT_FOUND:
      return "NVML_ERROR_NOT_FOUND";
    case api::NVML_ERROR_INSUFFICIENT_SIZE:
      return "NVML_ERROR_INSUFFICIENT_SIZE";
    case api::NVML_ERROR_INSUFFICIENT_POWER:
      return "NVML_ERROR_INSUFFICIENT_POWER";
    case api::NVML_ERROR_DRIVER_NOT_LOADED:
      return "NVML_ERROR_DRIVER_NOT_LOADED";
    case api::NVML_ERROR_TIMEOUT:
      return "NVML_ERROR_TIMEOUT";
    case api::NVML_ERROR_IRQ_ISSUE:
      return "NVML_ERROR_IRQ_ISSUE";
    case api::NVML_ERROR_LIBRARY_NOT_FOUND:
      return "NVML_ERROR_LIBRARY_NOT_FOUND";
    case api::NVML_ERROR_FUNCTION_NOT_FOUND:
      return "NVML_ERROR_FUNCTION_NOT_FOUND";
    case api::NVML_ERROR_CORRUPTED_INFOROM:
      return "NVML_ERROR_CORRUPTED_INFOROM";
    case api::NVML_ERROR_GPU_IS_LOST:
      return "NVML_ERROR_GPU_IS_LOST";
    case api::NVML_ERROR_RESET_REQUIRED:
      return "NVML_ERROR_RESET_REQUIRED";
    case api::NVML_ERROR_OPERATING_SYSTEM:
      return "NVML_ERROR_OPERATING_SYSTEM";
    case api::NVML_ERROR_LIB_RM_VERSION_MISMATCH:
      return "NVML_ERROR_LIB_RM_VERSION_MISMATCH";
    case api::NVML_ERROR_IN_USE:
      return "NVML_ERROR_IN_USE";
    case api::NVML_ERROR_MEMORY:
      return "NVML_ERROR_MEMORY";
    case api::NVML_ERROR_NO_DATA:
      return "NVML_ERROR_NO_DATA";
    case api::NVML_ERROR_VGPU_ECC_NOT_SUPPORTED:
      return "NVML_ERROR_VGPU_ECC_NOT_SUPPORTED";
    case api::NVML_ERROR_INSUFFICIENT_RESOURCES:
      return "NVML_ERROR_INSUFFICIENT_RESOURCES";
    case api::NVML_ERROR_FREQ_NOT_SUPPORTED:
      return "NVML_ERROR_FREQ_NOT_SUPPORTED";
    case api::NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
      return "NVML_ERROR_ARGUMENT_VERSION_MISMATCH";
    case api::NVML_ERROR_DEPRECATED:
      return "NVML_ERROR_DEPRECATED";
    case api::NVML_ERROR_NOT_READY:
      return "NVML_ERROR_NOT_READY";
    case api::NVML_ERROR_GPU_NOT_FOUND:
      return "NVML_ERROR_GPU_NOT_FOUND";
    case api::NVML_ERROR_INVALID_STATE:
      return "NVML_ERROR_INVALID_STATE";
    case api::NVML_ERROR_UNKNOWN:
      return "NVML_ERROR_UNKNOWN";
  }
  return "NVML error";
}

// "NVML_ERROR_DRIVER_NOT_LOADED (9: Driver Not Loaded)": our name, the code, NVML's own text.
std::string describe(const NvmlLibrary& lib, api::nvmlReturn_t rc) {
  std::string text = std::string(return_code_name(rc)) + " (" + std::to_string(rc);
  if (lib.error_string) {
    if (const char* nvml_text = lib.error_string(rc)) text += std::string(": ") + nvml_text;
  }
  return text + ")";
}

// What a person can do about an nvmlInit failure, for the codes that have a usual cause.
const char* init_failure_hint(api::nvmlReturn_t rc) {
  switch (rc) {
    case api::NVML_ERROR_DRIVER_NOT_LOADED:
      return "the NVIDIA kernel driver is not loaded (check `lsmod | grep nvidia` and dmesg)";
    case api::NVML_ERROR_NO_PERMISSION:
      return "this user may not open /dev/nvidia* (check the device files' group and mode)";
    case api::NVML_ERROR_LIB_RM_VERSION_MISMATCH:
      return "libnvidia-ml and the loaded kernel module come from different driver versions "
             "(reboot, or reload the nvidia module after a driver upgrade)";
    case api::NVML_ERROR_GPU_NOT_FOUND:
      return "the driver found no NVIDIA GPU";
    default:
      return nullptr;
  }
}

bool ok(api::nvmlReturn_t rc) {
  return rc == api::NVML_SUCCESS;
}

api::nvmlDevice_t as_device(void* handle) {
  return static_cast<api::nvmlDevice_t>(handle);
}

std::optional<std::string> query_string(api::nvmlDeviceGetString_fn fn, api::nvmlDevice_t dev,
                                        unsigned int buffer_size) {
  if (!fn) return std::nullopt;
  std::array<char, 128> buffer{};
  if (buffer_size > buffer.size()) buffer_size = static_cast<unsigned int>(buffer.size());
  if (!ok(fn(dev, buffer.data(), buffer_size))) return std::nullopt;
  return std::string(buffer.data(), strnlen(buffer.data(), buffer_size));
}

std::optional<unsigned int> query_uint(api::nvmlDeviceGetUInt_fn fn, api::nvmlDevice_t dev) {
  unsigned int value = 0;
  if (!fn || !ok(fn(dev, &value))) return std::nullopt;
  return value;
}

std::optional<double> query_clock_mhz(api::nvmlDeviceGetClock_fn fn, api::nvmlDevice_t dev,
                                      api::nvmlClockType_t type) {
  unsigned int mhz = 0;
  if (!fn || !ok(fn(dev, type, &mhz))) return std::nullopt;
  return mhz;
}

std::optional<double> milliwatts_to_watts(std::optional<unsigned int> mw) {
  if (!mw) return std::nullopt;
  return *mw / 1000.0;
}

std::optional<int> to_int(std::optional<unsigned int> v) {
  if (!v) return std::nullopt;
  return static_cast<int>(*v);
}

// CUDA's spelling, "0000:3B:00.0"; NVML's busId has an 8-digit domain.
std::optional<std::string> query_pci_bus_id(const NvmlLibrary& lib, api::nvmlDevice_t dev) {
  api::nvmlPciInfo_t pci{};
  if (!lib.get_pci_info || !ok(lib.get_pci_info(dev, &pci))) return std::nullopt;
  char text[32];
  std::snprintf(text, sizeof(text), "%04X:%02X:%02X.0", pci.domain, pci.bus, pci.device);
  return std::string(text);
}

// NVML's CPU affinity bitmask as a CPU list; sysfs's local_cpulist says the same thing and is
// preferred, this covers containers without /sys/bus/pci.
std::optional<std::string> query_cpu_affinity(const NvmlLibrary& lib, api::nvmlDevice_t dev) {
  if (!lib.get_cpu_affinity) return std::nullopt;
  constexpr unsigned int kWords = 64;  // 64 x 64 bits: 4096 CPUs
  constexpr unsigned int kBitsPerWord = 8 * sizeof(unsigned long);
  std::array<unsigned long, kWords> mask{};
  if (!ok(lib.get_cpu_affinity(dev, kWords, mask.data()))) return std::nullopt;
  std::vector<int> cpus;
  for (unsigned int word = 0; word < kWords; ++word) {
    for (unsigned int bit = 0; bit < kBitsPerWord; ++bit) {
      if (mask[word] & (1UL << bit)) cpus.push_back(static_cast<int>(word * kBitsPerWord + bit));
    }
  }
  if (cpus.empty()) return std::nullopt;
  return format_cpu_list(std::move(cpus));
}

void resolve_optional_symbols(NvmlLibrary& lib) {
  using namespace api;
  lib.error_string = lib.symbol<nvmlErrorString_fn>("nvmlErrorString");
  lib.get_driver_version = lib.symbol<nvmlSystemGetDriverVersion_fn>("nvmlSystemGetDriverVersion");
  lib.get_cuda_driver_version =
      lib.symbol<nvmlSystemGetCudaDriverVersion_fn>("nvmlSystemGetCudaDriverVersion_v2");
  if (!lib.get_cuda_driver_version) {
    lib.get_cuda_driver_version =
        lib.symbol<nvmlSystemGetCudaDriverVersion_fn>("nvmlSystemGetCudaDriverVersion");
  }
  lib.get_handle_by_pci_bus_id =
      lib.symbol<nvmlDeviceGetHandleByPciBusId_v2_fn>("nvmlDeviceGetHandleByPciBusId_v2");
  lib.get_name = lib.symbol<nvmlDeviceGetString_fn>("nvmlDeviceGetName");
  lib.get_uuid = lib.symbol<nvmlDeviceGetString_fn>("nvmlDeviceGetUUID");
  lib.get_pci_info = lib.symbol<nvmlDeviceGetPciInfo_v3_fn>("nvmlDeviceGetPciInfo_v3");
  lib.get_memory_info = lib.symbol<nvmlDeviceGetMemoryInfo_fn>("nvmlDeviceGetMemoryInfo");
  lib.get_max_clock_info = lib.symbol<nvmlDeviceGetClock_fn>("nvmlDeviceGetMaxClockInfo");
  lib.get_clock_info = lib.symbol<nvmlDeviceGetClock_fn>("nvmlDeviceGetClockInfo");
  lib.get_power_usage = lib.symbol<nvmlDeviceGetUInt_fn>("nvmlDeviceGetPowerUsage");
  lib.get_enforced_power_limit =
      lib.symbol<nvmlDeviceGetUInt_fn>("nvmlDeviceGetEnforcedPowerLimit");
  lib.get_power_default_limit =
      lib.symbol<nvmlDeviceGetUInt_fn>("nvmlDeviceGetPowerManagementDefaultLimit");
  lib.get_temperature = lib.symbol<nvmlDeviceGetTemperature_fn>("nvmlDeviceGetTemperature");
  // Renamed in CUDA 12.2 (driver 535); older drivers only have the "Throttle" spelling.
  lib.get_clocks_event_reasons =
      lib.symbol<nvmlDeviceGetClocksEventReasons_fn>("nvmlDeviceGetCurrentClocksEventReasons");
  if (!lib.get_clocks_event_reasons) {
    lib.get_clocks_event_reasons =
        lib.symbol<nvmlDeviceGetClocksEventReasons_fn>("nvmlDeviceGetCurrentClocksThrottleReasons");
  }
  lib.get_curr_pcie_gen = lib.symbol<nvmlDeviceGetUInt_fn>("nvmlDeviceGetCurrPcieLinkGeneration");
  lib.get_max_pcie_gen = lib.symbol<nvmlDeviceGetUInt_fn>("nvmlDeviceGetMaxPcieLinkGeneration");
  lib.get_gpu_max_pcie_gen =
      lib.symbol<nvmlDeviceGetUInt_fn>("nvmlDeviceGetGpuMaxPcieLinkGeneration");
  lib.get_curr_pcie_width = lib.symbol<nvmlDeviceGetUInt_fn>("nvmlDeviceGetCurrPcieLinkWidth");
  lib.get_max_pcie_width = lib.symbol<nvmlDeviceGetUInt_fn>("nvmlDeviceGetMaxPcieLinkWidth");
  lib.get_pcie_replay_counter = lib.symbol<nvmlDeviceGetUInt_fn>("nvmlDeviceGetPcieReplayCounter");
  lib.get_ecc_mode = lib.symbol<nvmlDeviceGetEccMode_fn>("nvmlDeviceGetEccMode");
  lib.get_mig_mode = lib.symbol<nvmlDeviceGetMigMode_fn>("nvmlDeviceGetMigMode");
  lib.get_persistence_mode =
      lib.symbol<nvmlDeviceGetPersistenceMode_fn>("nvmlDeviceGetPersistenceMode");
  lib.get_utilization =
      lib.symbol<nvmlDeviceGetUtilizationRates_fn>("nvmlDeviceGetUtilizationRates");
  lib.get_cpu_affinity = lib.symbol<nvmlDeviceGetCpuAffinity_fn>("nvmlDeviceGetCpuAffinity");
  lib.get_samples = lib.symbol<nvmlDeviceGetSamples_fn>("nvmlDeviceGetSamples");
  lib.get_process_utilization =
      lib.symbol<nvmlDeviceGetProcessUtilization_fn>("nvmlDeviceGetProcessUtilization");
  lib.get_pcie_throughput =
      lib.symbol<nvmlDeviceGetPcieThroughput_fn>("nvmlDeviceGetPcieThroughput");
  lib.get_field_values = lib.symbol<nvmlDeviceGetFieldValues_fn>("nvmlDeviceGetFieldValues");
  lib.gpm_query_device_support =
      lib.symbol<nvmlGpmQueryDeviceSupport_fn>("nvmlGpmQueryDeviceSupport");
  lib.gpm_sample_alloc = lib.symbol<nvmlGpmSampleAlloc_fn>("nvmlGpmSampleAlloc");
  lib.gpm_sample_free = lib.symbol<nvmlGpmSampleFree_fn>("nvmlGpmSampleFree");
  lib.gpm_sample_get = lib.symbol<nvmlGpmSampleGet_fn>("nvmlGpmSampleGet");
  lib.gpm_metrics_get = lib.symbol<nvmlGpmMetricsGet_fn>("nvmlGpmMetricsGet");
  lib.get_topology_common_ancestor =
      lib.symbol<nvmlDeviceGetTopologyCommonAncestor_fn>("nvmlDeviceGetTopologyCommonAncestor");
  lib.get_p2p_status = lib.symbol<nvmlDeviceGetP2PStatus_fn>("nvmlDeviceGetP2PStatus");
  lib.get_nvlink_state = lib.symbol<nvmlDeviceGetNvLinkState_fn>("nvmlDeviceGetNvLinkState");
  lib.get_nvlink_version =
      lib.symbol<nvmlDeviceGetNvLinkVersion_fn>("nvmlDeviceGetNvLinkVersion");
  lib.get_nvlink_remote_pci_info =
      lib.symbol<nvmlDeviceGetNvLinkRemotePciInfo_v2_fn>("nvmlDeviceGetNvLinkRemotePciInfo_v2");
}

// A value of any nvmlValueType_t as a double; empty for a type this code does not know.
std::optional<double> value_as_double(api::nvmlValueType_t type, const api::nvmlValue_t& value) {
  switch (type) {
    case api::NVML_VALUE_TYPE_DOUBLE:
      return value.dVal;
    case api::NVML_VALUE_TYPE_UNSIGNED_INT:
      return value.uiVal;
    case api::NVML_VALUE_TYPE_UNSIGNED_LONG:
      return static_cast<double>(value.ulVal);
    case api::NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
      return static_cast<double>(value.ullVal);
    case api::NVML_VALUE_TYPE_SIGNED_LONG_LONG:
      return static_cast<double>(value.sllVal);
    case api::NVML_VALUE_TYPE_SIGNED_INT:
      return value.siVal;
    case api::NVML_VALUE_TYPE_UNSIGNED_SHORT:
      return value.usVal;
  }
  return std::nullopt;
}

// The size query of NVML's two-call pattern: drivers answer it with NVML_SUCCESS or with
// NVML_ERROR_INSUFFICIENT_SIZE, both carrying the count.
bool size_query_ok(api::nvmlReturn_t rc) {
  return rc == api::NVML_SUCCESS || rc == api::NVML_ERROR_INSUFFICIENT_SIZE;
}

// Entries can appear between the size query and the read; retry a few times on a short buffer.
constexpr int kReadAttempts = 3;
constexpr unsigned int kSampleBufferGuess = 512;  // the driver keeps ~120 utilization samples
constexpr unsigned int kProcessBufferGuess = 256;

double steady_now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

api::nvmlGpmSample_t as_gpm_sample(void* sample) {
  return static_cast<api::nvmlGpmSample_t>(sample);
}

}  // namespace

// --- NvmlDevice --------------------------------------------------------------------------------

NvmlDevice::NvmlDevice(std::shared_ptr<NvmlLibrary> lib, void* handle)
    : lib_(std::move(lib)), handle_(handle) {}

NvmlDeviceInfo NvmlDevice::info() const {
  const NvmlLibrary& lib = *lib_;
  const api::nvmlDevice_t dev = as_device(handle_);
  NvmlDeviceInfo info;

  info.name = query_string(lib.get_name, dev, api::NVML_DEVICE_NAME_V2_BUFFER_SIZE);
  info.uuid = query_string(lib.get_uuid, dev, api::NVML_DEVICE_UUID_V2_BUFFER_SIZE);
  info.pci_bus_id = query_pci_bus_id(lib, dev);

  api::nvmlMemory_t memory{};
  if (lib.get_memory_info && ok(lib.get_memory_info(dev, &memory))) {
    info.memory_total_bytes = memory.total;
  }
  info.sm_clock_max_mhz = query_clock_mhz(lib.get_max_clock_info, dev, api::NVML_CLOCK_SM);
  info.mem_clock_max_mhz = query_clock_mhz(lib.get_max_clock_info, dev, api::NVML_CLOCK_MEM);
  info.power_limit_w = milliwatts_to_watts(query_uint(lib.get_enforced_power_limit, dev));
  info.power_default_limit_w = milliwatts_to_watts(query_uint(lib.get_power_default_limit, dev));

  api::nvmlEnableState_t ecc_current{}, ecc_pending{};
  if (lib.get_ecc_mode && ok(lib.get_ecc_mode(dev, &ecc_current, &ecc_pending))) {
    info.ecc_enabled = ecc_current == api::NVML_FEATURE_ENABLED;
  }
  unsigned int mig_current = 0, mig_pending = 0;
  if (lib.get_mig_mode && ok(lib.get_mig_mode(dev, &mig_current, &mig_pending))) {
    info.mig_enabled = mig_current == api::NVML_DEVICE_MIG_ENABLE;
  }
  api::nvmlEnableState_t persistence{};
  if (lib.get_persistence_mode && ok(lib.get_persistence_mode(dev, &persistence))) {
    info.persistence_enabled = persistence == api::NVML_FEATURE_ENABLED;
  }

  if (info.pci_bus_id) {
    const PciLocality locality = read_pci_locality(*info.pci_bus_id);
    info.numa_node = locality.numa_node;
    info.cpu_affinity = locality.cpu_list;
  }
  if (!info.cpu_affinity) info.cpu_affinity = query_cpu_affinity(lib, dev);

  info.pcie.gen_current = to_int(query_uint(lib.get_curr_pcie_gen, dev));
  info.pcie.gen_max_slot = to_int(query_uint(lib.get_max_pcie_gen, dev));
  info.pcie.gen_max_gpu = to_int(query_uint(lib.get_gpu_max_pcie_gen, dev));
  info.pcie.width_current = to_int(query_uint(lib.get_curr_pcie_width, dev));
  info.pcie.width_max = to_int(query_uint(lib.get_max_pcie_width, dev));
  return info;
}

NvmlSample NvmlDevice::sample() const {
  const NvmlLibrary& lib = *lib_;
  const api::nvmlDevice_t dev = as_device(handle_);
  NvmlSample s;

  s.sm_clock_mhz = query_clock_mhz(lib.get_clock_info, dev, api::NVML_CLOCK_SM);
  s.mem_clock_mhz = query_clock_mhz(lib.get_clock_info, dev, api::NVML_CLOCK_MEM);
  s.power_w = milliwatts_to_watts(query_uint(lib.get_power_usage, dev));

  unsigned int temp_c = 0;
  if (lib.get_temperature && ok(lib.get_temperature(dev, api::NVML_TEMPERATURE_GPU, &temp_c))) {
    s.temp_c = temp_c;
  }
  unsigned long long reasons = 0;
  if (lib.get_clocks_event_reasons && ok(lib.get_clocks_event_reasons(dev, &reasons))) {
    s.throttle_reasons = reasons;
  }
  s.pcie_gen = to_int(query_uint(lib.get_curr_pcie_gen, dev));
  s.pcie_width = to_int(query_uint(lib.get_curr_pcie_width, dev));
  if (const auto replays = query_uint(lib.get_pcie_replay_counter, dev)) {
    s.pcie_replay_counter = *replays;
  }
  api::nvmlUtilization_t utilization{};
  if (lib.get_utilization && ok(lib.get_utilization(dev, &utilization))) {
    s.gpu_util_pct = utilization.gpu;
    s.mem_util_pct = utilization.memory;
  }
  return s;
}

// --- Watch metrics -----------------------------------------------------------------------------

std::vector<UtilSample> NvmlDevice::utilization_samples(NvmlSampleKind kind,
                                                        std::uint64_t since_timestamp_us) const {
  std::vector<UtilSample> out;
  if (!lib_ || !lib_->get_samples) return out;
  const api::nvmlDevice_t dev = as_device(handle_);
  const api::nvmlSamplingType_t type = kind == NvmlSampleKind::gpu_utilization
                                           ? api::NVML_GPU_UTILIZATION_SAMPLES
                                           : api::NVML_MEMORY_UTILIZATION_SAMPLES;
  for (int attempt = 0; attempt < kReadAttempts; ++attempt) {
    api::nvmlValueType_t value_type{};
    // First a buffer big enough for the driver's whole sample ring (one call, which is what
    // a sampler running every 100 ms can afford); only if NVML says it is too small, ask the
    // size with a NULL buffer.
    unsigned int count = kSampleBufferGuess;
    if (attempt > 0 &&
        (!size_query_ok(
             lib_->get_samples(dev, type, since_timestamp_us, &value_type, &count, nullptr)) ||
         count == 0)) {
      return out;
    }
    std::vector<api::nvmlSample_t> buffer(count);
    const api::nvmlReturn_t rc =
        lib_->get_samples(dev, type, since_timestamp_us, &value_type, &count, buffer.data());
    if (rc == api::NVML_ERROR_INSUFFICIENT_SIZE) continue;
    if (!ok(rc)) return out;  // NVML_ERROR_NOT_FOUND: nothing newer than since_timestamp_us
    buffer.resize(std::min<std::size_t>(count, buffer.size()));
    for (const api::nvmlSample_t& sample : buffer) {
      if (sample.timeStamp <= since_timestamp_us) continue;
      if (const auto value = value_as_double(value_type, sample.sampleValue)) {
        out.push_back(UtilSample{sample.timeStamp, *value});
      }
    }
    std::sort(out.begin(), out.end(), [](const UtilSample& a, const UtilSample& b) {
      return a.timestamp_us < b.timestamp_us;
    });
    return out;
  }
  return out;
}

std::vector<ProcessUtil> NvmlDevice::process_utilization(std::uint64_t since_timestamp_us) const {
  std::vector<ProcessUtil> out;
  if (!lib_ || !lib_->get_process_utilization) return out;
  const api::nvmlDevice_t dev = as_device(handle_);
  for (int attempt = 0; attempt < kReadAttempts; ++attempt) {
    unsigned int count = kProcessBufferGuess;  // as above: one call unless it is too small
    if (attempt > 0 &&
        (!size_query_ok(lib_->get_process_utilization(dev, nullptr, &count, since_timestamp_us)) ||
         count == 0)) {
      return out;
    }
    std::vector<api::nvmlProcessUtilizationSample_t> buffer(count);
    const api::nvmlReturn_t rc =
        lib_->get_process_utilization(dev, buffer.data(), &count, since_timestamp_us);
    if (rc == api::NVML_ERROR_INSUFFICIENT_SIZE) continue;
    if (!ok(rc)) return out;  // NVML_ERROR_NOT_FOUND: no process sampled since the timestamp
    buffer.resize(std::min<std::size_t>(count, buffer.size()));
    for (const api::nvmlProcessUtilizationSample_t& p : buffer) {
      out.push_back(ProcessUtil{p.pid, p.timeStamp, static_cast<double>(p.smUtil),
                                static_cast<double>(p.memUtil), static_cast<double>(p.encUtil),
                                static_cast<double>(p.decUtil)});
    }
    return out;
  }
  return out;
}

std::optional<PcieThroughput> NvmlDevice::pcie_throughput() const {
  if (!lib_ || !lib_->get_pcie_throughput) return std::nullopt;
  const api::nvmlDevice_t dev = as_device(handle_);
  unsigned int tx_kb = 0, rx_kb = 0;
  if (!ok(lib_->get_pcie_throughput(dev, api::NVML_PCIE_UTIL_TX_BYTES, &tx_kb)) ||
      !ok(lib_->get_pcie_throughput(dev, api::NVML_PCIE_UTIL_RX_BYTES, &rx_kb))) {
    return std::nullopt;
  }
  return PcieThroughput{std::uint64_t{tx_kb} * 1024, std::uint64_t{rx_kb} * 1024};
}

NvmlWatchSample NvmlDevice::watch_sample(bool with_pcie_throughput) const {
  NvmlWatchSample s;
  if (!lib_) return s;
  static_cast<NvmlSample&>(s) = sample();
  const api::nvmlDevice_t dev = as_device(handle_);
  api::nvmlMemory_t memory{};
  if (lib_->get_memory_info && ok(lib_->get_memory_info(dev, &memory))) {
    s.memory_used_bytes = memory.used;
  }
  if (lib_->get_field_values) {
    api::nvmlFieldValue_t field{};
    field.fieldId = api::NVML_FI_DEV_MEMORY_TEMP;
    if (ok(lib_->get_field_values(dev, 1, &field)) && ok(field.nvmlReturn)) {
      s.memory_temp_c = value_as_double(field.valueType, field.value);
    }
  }
  if (with_pcie_throughput) s.pcie_throughput = pcie_throughput();
  return s;
}

GpmSampler NvmlDevice::gpm_sampler() const {
  return GpmSampler(lib_, handle_);
}

// --- GpmSampler --------------------------------------------------------------------------------

GpmSampler::GpmSampler(std::shared_ptr<NvmlLibrary> lib, void* device_handle)
    : lib_(std::move(lib)), device_(device_handle) {
  if (!lib_) {
    reason_ = "NVML is not loaded";
    return;
  }
  const NvmlLibrary& l = *lib_;
  if (!l.gpm_query_device_support || !l.gpm_sample_alloc || !l.gpm_sample_free ||
      !l.gpm_sample_get || !l.gpm_metrics_get) {
    reason_ = "NVML library " + l.path() + " has no GPM entry points (driver 520 or newer needed)";
    return;
  }
  api::nvmlGpmSupport_t support{};
  support.version = api::NVML_GPM_SUPPORT_VERSION;
  const api::nvmlReturn_t rc = l.gpm_query_device_support(as_device(device_), &support);
  if (!ok(rc)) {
    reason_ = "nvmlGpmQueryDeviceSupport failed with " + describe(l, rc);
    return;
  }
  if (!support.isSupportedDevice) {
    reason_ = "this GPU has no GPM counters (Hopper or newer needed)";
    return;
  }
  for (void*& sample : samples_) {
    api::nvmlGpmSample_t handle = nullptr;
    const api::nvmlReturn_t alloc_rc = l.gpm_sample_alloc(&handle);
    if (!ok(alloc_rc) || !handle) {
      reason_ = "nvmlGpmSampleAlloc failed with " + describe(l, alloc_rc);
      release();
      return;
    }
    sample = handle;
  }
}

GpmSampler::~GpmSampler() {
  release();
}

GpmSampler::GpmSampler(GpmSampler&& other) noexcept
    : lib_(std::move(other.lib_)),
      device_(other.device_),
      taken_(other.taken_),
      latest_(other.latest_),
      reason_(std::move(other.reason_)) {
  for (int i = 0; i < 2; ++i) {
    samples_[i] = std::exchange(other.samples_[i], nullptr);
    taken_at_s_[i] = other.taken_at_s_[i];
  }
  other.taken_ = 0;
  other.reason_ = "moved from";
}

GpmSampler& GpmSampler::operator=(GpmSampler&& other) noexcept {
  if (this != &other) {
    release();
    lib_ = std::move(other.lib_);
    device_ = other.device_;
    taken_ = std::exchange(other.taken_, 0);
    latest_ = other.latest_;
    reason_ = std::exchange(other.reason_, "moved from");
    for (int i = 0; i < 2; ++i) {
      samples_[i] = std::exchange(other.samples_[i], nullptr);
      taken_at_s_[i] = other.taken_at_s_[i];
    }
  }
  return *this;
}

void GpmSampler::release() {
  for (void*& sample : samples_) {
    if (sample && lib_ && lib_->gpm_sample_free) lib_->gpm_sample_free(as_gpm_sample(sample));
    sample = nullptr;
  }
  taken_ = 0;
}

bool GpmSampler::take() {
  if (!available() || !samples_[0] || !samples_[1]) return false;
  const int next = 1 - latest_;  // overwrite the older buffer
  if (!ok(lib_->gpm_sample_get(as_device(device_), as_gpm_sample(samples_[next])))) return false;
  taken_at_s_[next] = steady_now_s();
  latest_ = next;
  if (taken_ < 2) ++taken_;
  return true;
}

std::optional<GpmMetrics> GpmSampler::metrics() const {
  if (!available() || taken_ < 2) return std::nullopt;
  const int older = 1 - latest_;
  // 333 entries of 40 bytes: on the heap, not the stack.
  auto request = std::make_unique<api::nvmlGpmMetricsGet_t>();
  request->version = api::NVML_GPM_METRICS_GET_VERSION;
  request->sample1 = as_gpm_sample(samples_[older]);
  request->sample2 = as_gpm_sample(samples_[latest_]);
  constexpr unsigned int kIds[] = {
      api::NVML_GPM_METRIC_SM_UTIL,
      api::NVML_GPM_METRIC_SM_OCCUPANCY,
      api::NVML_GPM_METRIC_ANY_TENSOR_UTIL,
      api::NVML_GPM_METRIC_DRAM_BW_UTIL,
  };
  for (unsigned int id : kIds) request->metrics[request->numMetrics++].metricId = id;
  if (!ok(lib_->gpm_metrics_get(request.get()))) return std::nullopt;

  const auto value_of = [&](unsigned int i) -> std::optional<double> {
    const api::nvmlGpmMetric_t& m = request->metrics[i];
    if (!ok(m.nvmlReturn)) return std::nullopt;
    return m.value;
  };
  GpmMetrics out;
  out.interval_s = taken_at_s_[latest_] - taken_at_s_[older];
  out.sm_active_pct = value_of(0);
  out.sm_occupancy_pct = value_of(1);
  out.tensor_active_pct = value_of(2);
  out.dram_bw_pct = value_of(3);
  return out;
}

// --- Nvml --------------------------------------------------------------------------------------

Nvml Nvml::load() {
  const char* override_path = std::getenv("GPUBASE_NVML_LIBRARY");
  return load_from(override_path && *override_path ? override_path : "libnvidia-ml.so.1");
}

Nvml Nvml::load_from(const std::string& path) {
  Nvml nvml;
  dlerror();
  void* so = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!so) {
    const char* why = dlerror();
    std::error_code ec;
    const bool exists = path.find('/') != std::string::npos && std::filesystem::exists(path, ec);
    nvml.reason_ = exists ? "NVML library " + path + " could not be loaded"
                          : "NVML library " + path + " not found: is the NVIDIA driver installed?";
    if (why) nvml.reason_ += std::string(" (") + why + ")";
    return nvml;
  }
  auto lib = std::make_shared<NvmlLibrary>(so, path);

  lib->init = lib->symbol<api::nvmlInit_v2_fn>("nvmlInit_v2");
  lib->shutdown = lib->symbol<api::nvmlShutdown_fn>("nvmlShutdown");
  lib->get_count = lib->symbol<api::nvmlDeviceGetCount_v2_fn>("nvmlDeviceGetCount_v2");
  lib->get_handle_by_index =
      lib->symbol<api::nvmlDeviceGetHandleByIndex_v2_fn>("nvmlDeviceGetHandleByIndex_v2");
  const std::pair<const char*, bool> core[] = {
      {"nvmlInit_v2", lib->init != nullptr},
      {"nvmlShutdown", lib->shutdown != nullptr},
      {"nvmlDeviceGetCount_v2", lib->get_count != nullptr},
      {"nvmlDeviceGetHandleByIndex_v2", lib->get_handle_by_index != nullptr},
  };
  for (const auto& [name, found] : core) {
    if (!found) {
      nvml.reason_ = "NVML library " + path + " has no " + name +
                     ": the driver is too old or the file is not libnvidia-ml";
      return nvml;
    }
  }
  resolve_optional_symbols(*lib);

  const api::nvmlReturn_t rc = lib->init();
  if (!ok(rc)) {
    nvml.reason_ = "nvmlInit_v2 failed with " + describe(*lib, rc);
    if (const char* hint = init_failure_hint(rc)) nvml.reason_ += std::string(": ") + hint;
    return nvml;
  }
  lib->initialized = true;
  nvml.lib_ = std::move(lib);
  return nvml;
}

std::optional<std::string> Nvml::driver_version() const {
  if (!lib_ || !lib_->get_driver_version) return std::nullopt;
  std::array<char, api::NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE> buffer{};
  if (!ok(lib_->get_driver_version(buffer.data(), buffer.size()))) return std::nullopt;
  return std::string(buffer.data(), strnlen(buffer.data(), buffer.size()));
}

std::optional<int> Nvml::cuda_driver_version() const {
  int version = 0;
  if (!lib_ || !lib_->get_cuda_driver_version || !ok(lib_->get_cuda_driver_version(&version))) {
    return std::nullopt;
  }
  return version;
}

int Nvml::device_count() const {
  unsigned int count = 0;
  if (!lib_ || !ok(lib_->get_count(&count))) return 0;
  return static_cast<int>(count);
}

std::optional<NvmlDevice> Nvml::device(int index) const {
  if (!lib_ || index < 0) return std::nullopt;
  api::nvmlDevice_t handle = nullptr;
  if (!ok(lib_->get_handle_by_index(static_cast<unsigned int>(index), &handle))) {
    return std::nullopt;
  }
  return NvmlDevice(lib_, handle);
}

std::optional<NvmlDevice> Nvml::device_by_pci_bus_id(const std::string& pci_bus_id) const {
  const std::optional<std::string> wanted = normalize_pci_bus_id(pci_bus_id);
  if (!lib_ || !wanted) return std::nullopt;
  if (lib_->get_handle_by_pci_bus_id) {
    api::nvmlDevice_t handle = nullptr;
    if (!ok(lib_->get_handle_by_pci_bus_id(wanted->c_str(), &handle))) return std::nullopt;
    return NvmlDevice(lib_, handle);
  }
  // Drivers without the lookup: compare each device's bus id.
  const int count = device_count();
  for (int index = 0; index < count; ++index) {
    api::nvmlDevice_t handle = nullptr;
    if (!ok(lib_->get_handle_by_index(static_cast<unsigned int>(index), &handle))) continue;
    if (query_pci_bus_id(*lib_, handle) == wanted) return NvmlDevice(lib_, handle);
  }
  return std::nullopt;
}

// --- GPU-to-GPU links --------------------------------------------------------------------------

std::vector<NvLinkInfo> NvmlDevice::nvlinks() const {
  std::vector<NvLinkInfo> links;
  if (!lib_->get_nvlink_state) return links;
  const api::nvmlDevice_t dev = as_device(handle_);
  for (unsigned int link = 0; link < api::NVML_NVLINK_MAX_LINKS; ++link) {
    api::nvmlEnableState_t active{};
    // NOT_SUPPORTED / INVALID_ARGUMENT past the device's last link: no such link.
    if (!ok(lib_->get_nvlink_state(dev, link, &active))) continue;
    NvLinkInfo info;
    info.link = static_cast<int>(link);
    info.active = active == api::NVML_FEATURE_ENABLED;
    unsigned int version = 0;
    if (lib_->get_nvlink_version && ok(lib_->get_nvlink_version(dev, link, &version)))
      info.version = static_cast<int>(version);
    api::nvmlPciInfo_t pci{};
    if (info.active && lib_->get_nvlink_remote_pci_info &&
        ok(lib_->get_nvlink_remote_pci_info(dev, link, &pci))) {
      char text[32];
      std::snprintf(text, sizeof(text), "%04X:%02X:%02X.0", pci.domain, pci.bus, pci.device);
      info.remote_pci_bus_id = text;
    }
    links.push_back(std::move(info));
  }
  return links;
}

std::optional<int> NvmlDevice::common_ancestor(const NvmlDevice& other) const {
  api::nvmlGpuTopologyLevel_t level{};
  if (!lib_->get_topology_common_ancestor ||
      !ok(lib_->get_topology_common_ancestor(as_device(handle_), as_device(other.handle_), &level)))
    return std::nullopt;
  return static_cast<int>(level);
}

std::optional<bool> NvmlDevice::nvlink_p2p_with(const NvmlDevice& other) const {
  api::nvmlGpuP2PStatus_t status{};
  if (!lib_->get_p2p_status ||
      !ok(lib_->get_p2p_status(as_device(handle_), as_device(other.handle_),
                               api::NVML_P2P_CAPS_INDEX_NVLINK, &status)))
    return std::nullopt;
  return status == api::NVML_P2P_STATUS_OK;
}

std::string topology_level_name(int level) {
  switch (level) {
    case api::NVML_TOPOLOGY_INTERNAL: return "same board";
    case api::NVML_TOPOLOGY_SINGLE: return "one PCIe switch";
    case api::NVML_TOPOLOGY_MULTIPLE: return "several PCIe switches";
    case api::NVML_TOPOLOGY_HOSTBRIDGE: return "the host bridge";
    case api::NVML_TOPOLOGY_NODE: return "host bridges of one NUMA node";
    case api::NVML_TOPOLOGY_SYSTEM: return "across NUMA nodes";
  }
  return "PCIe level " + std::to_string(level);
}

// --- Clock-event reasons -----------------------------------------------------------------------

namespace {

struct ReasonName {
  std::uint64_t bit;
  const char* name;
};

constexpr ReasonName kReasonNames[] = {
    {api::nvmlClocksEventReasonGpuIdle, "GpuIdle"},
    {api::nvmlClocksEventReasonApplicationsClocksSetting, "ApplicationsClocksSetting"},
    {api::nvmlClocksEventReasonSwPowerCap, "SwPowerCap"},
    {api::nvmlClocksThrottleReasonHwSlowdown, "HwSlowdown"},
    {api::nvmlClocksEventReasonSyncBoost, "SyncBoost"},
    {api::nvmlClocksEventReasonSwThermalSlowdown, "SwThermalSlowdown"},
    {api::nvmlClocksThrottleReasonHwThermalSlowdown, "HwThermalSlowdown"},
    {api::nvmlClocksThrottleReasonHwPowerBrakeSlowdown, "HwPowerBrakeSlowdown"},
    {api::nvmlClocksEventReasonDisplayClockSetting, "DisplayClockSetting"},
};

}  // namespace

std::vector<std::string> throttle_reason_names(std::uint64_t mask) {
  std::vector<std::string> names;
  std::uint64_t known = 0;
  for (const ReasonName& reason : kReasonNames) {
    known |= reason.bit;
    if (mask & reason.bit) names.emplace_back(reason.name);
  }
  // Bits newer drivers may add: shown, not dropped.
  for (int bit = 0; bit < 64; ++bit) {
    const std::uint64_t value = std::uint64_t{1} << bit;
    if ((mask & value) && !(known & value)) {
      char text[32];
      std::snprintf(text, sizeof(text), "Unknown(0x%llx)", static_cast<unsigned long long>(value));
      names.emplace_back(text);
    }
  }
  return names;
}

bool is_slowdown(std::uint64_t mask) {
  constexpr std::uint64_t kSlowdown = api::nvmlClocksThrottleReasonHwSlowdown |
                                      api::nvmlClocksEventReasonSwThermalSlowdown |
                                      api::nvmlClocksThrottleReasonHwThermalSlowdown |
                                      api::nvmlClocksThrottleReasonHwPowerBrakeSlowdown;
  return (mask & kSlowdown) != 0;
}

}  // namespace gb::sys
