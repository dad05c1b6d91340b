// sys/nvml_api.hpp: gpubase's own minimal declarations of the NVML C API, so the project builds
// without the driver SDK (nvml.h) and loads libnvidia-ml.so.1 with dlopen at run time.
//
// Only what sys/nvml.cpp calls is declared. Names, values and struct layouts follow NVIDIA's
// nvml.h (API version 12) exactly, so a reader can look each one up in the NVML reference; that
// is why they keep NVML's spelling instead of the project's naming style. The fake library in
// tests/fixtures/fake_nvml implements these same declarations with extern "C" linkage.
#pragma once
#include <cstddef>

namespace gb::sys::nvml_api {

// Opaque device handle (nvml.h: typedef struct nvmlDevice_st* nvmlDevice_t).
struct nvmlDevice_st;
using nvmlDevice_t = nvmlDevice_st*;

// A C enum in nvml.h: int-sized, so a plain enum keeps the ABI.
enum nvmlReturn_t {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_ALREADY_INITIALIZED = 5,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_INSUFFICIENT_POWER = 8,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_TIMEOUT = 10,
  NVML_ERROR_IRQ_ISSUE = 11,
  NVML_ERROR_LIBRARY_NOT_FOUND = 12,
  NVML_ERROR_FUNCTION_NOT_FOUND = 13,
  NVML_ERROR_CORRUPTED_INFOROM = 14,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_RESET_REQUIRED = 16,
  NVML_ERROR_OPERATING_SYSTEM = 17,
  NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
  NVML_ERROR_IN_USE = 19,
  NVML_ERROR_MEMORY = 20,
  NVML_ERROR_NO_DATA = 21,
  NVML_ERROR_VGPU_ECC_NOT_SUPPORTED = 22,
  NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
  NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
  NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
  NVML_ERROR_DEPRECATED = 26,
  NVML_ERROR_NOT_READY = 27,
  NVML_ERROR_GPU_NOT_FOUND = 28,
  NVML_ERROR_INVALID_STATE = 29,
  NVML_ERROR_UNKNOWN = 999,
};

enum nvmlClockType_t {
  NVML_CLOCK_GRAPHICS = 0,
  NVML_CLOCK_SM = 1,
  NVML_CLOCK_MEM = 2,
  NVML_CLOCK_VIDEO = 3,
};

enum nvmlTemperatureSensors_t {
  NVML_TEMPERATURE_GPU = 0,
};

enum nvmlPcieUtilCounter_t {
  NVML_PCIE_UTIL_TX_BYTES = 0,
  NVML_PCIE_UTIL_RX_BYTES = 1,
};

enum nvmlEnableState_t {
  NVML_FEATURE_DISABLED = 0,
  NVML_FEATURE_ENABLED = 1,
};

// nvmlDeviceGetMigMode reports these as unsigned int.
inline constexpr unsigned int NVML_DEVICE_MIG_DISABLE = 0;
inline constexpr unsigned int NVML_DEVICE_MIG_ENABLE = 1;

// Buffer sizes nvml.h guarantees to be large enough (terminating NUL included).
inline constexpr unsigned int NVML_DEVICE_NAME_V2_BUFFER_SIZE = 96;
inline constexpr unsigned int NVML_DEVICE_UUID_V2_BUFFER_SIZE = 96;
inline constexpr unsigned int NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE = 80;
inline constexpr unsigned int NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE = 32;
inline constexpr unsigned int NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE = 16;

// Clock-event reason bits. Since CUDA 12.2 nvml.h spells the software reasons
// nvmlClocksEventReason*; the hardware ones keep their nvmlClocksThrottleReason* names.
inline constexpr unsigned long long nvmlClocksEventReasonGpuIdle = 0x1ULL;
inline constexpr unsigned long long nvmlClocksEventReasonApplicationsClocksSetting = 0x2ULL;
inline constexpr unsigned long long nvmlClocksEventReasonSwPowerCap = 0x4ULL;
inline constexpr unsigned long long nvmlClocksThrottleReasonHwSlowdown = 0x8ULL;
inline constexpr unsigned long long nvmlClocksEventReasonSyncBoost = 0x10ULL;
inline constexpr unsigned long long nvmlClocksEventReasonSwThermalSlowdown = 0x20ULL;
inline constexpr unsigned long long nvmlClocksThrottleReasonHwThermalSlowdown = 0x40ULL;
inline constexpr unsigned long long nvmlClocksThrottleReasonHwPowerBrakeSlowdown = 0x80ULL;
inline constexpr unsigned long long nvmlClocksEventReasonDisplayClockSetting = 0x100ULL;

// Memory of a device, v1 layout (nvmlDeviceGetMemoryInfo).
struct nvmlMemory_t {
  unsigned long long total;  // bytes
  unsigned long long free;   // bytes
  unsigned long long used;   // bytes
};

// Percent of the last sample period (1/6 s to 1 s) a kernel ran / device memory was accessed.
struct nvmlUtilization_t {
  unsigned int gpu;
  unsigned int memory;
};

// nvmlDeviceGetPciInfo_v3 layout.
struct nvmlPciInfo_t {
  char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;  // 16-bit device id << 16 | 16-bit vendor id
  unsigned int pciSubSystemId;
  char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];  // "%08X:%02X:%02X.0"
};

static_assert(sizeof(nvmlMemory_t) == 24);
static_assert(sizeof(nvmlUtilization_t) == 8);
static_assert(sizeof(nvmlPciInfo_t) == 68);
static_assert(offsetof(nvmlPciInfo_t, busId) == 36);

// Function-pointer types, one per entry point, named <symbol>_fn. Power is in milliwatts,
// clocks in MHz, temperature in degrees C, as NVML reports them.
using nvmlInit_v2_fn = nvmlReturn_t (*)();
using nvmlShutdown_fn = nvmlReturn_t (*)();
using nvmlErrorString_fn = const char* (*)(nvmlReturn_t result);
using nvmlSystemGetDriverVersion_fn = nvmlReturn_t (*)(char* version, unsigned int length);
using nvmlSystemGetCudaDriverVersion_fn = nvmlReturn_t (*)(int* cuda_driver_version);
using nvmlDeviceGetCount_v2_fn = nvmlReturn_t (*)(unsigned int* device_count);
using nvmlDeviceGetHandleByIndex_v2_fn = nvmlReturn_t (*)(unsigned int index, nvmlDevice_t* device);
using nvmlDeviceGetHandleByPciBusId_v2_fn = nvmlReturn_t (*)(const char* pci_bus_id,
                                                             nvmlDevice_t* device);
using nvmlDeviceGetString_fn = nvmlReturn_t (*)(nvmlDevice_t device, char* text,
                                                unsigned int length);  // Name, UUID
using nvmlDeviceGetPciInfo_v3_fn = nvmlReturn_t (*)(nvmlDevice_t device, nvmlPciInfo_t* pci);
using nvmlDeviceGetMemoryInfo_fn = nvmlReturn_t (*)(nvmlDevice_t device, nvmlMemory_t* memory);
using nvmlDeviceGetClock_fn = nvmlReturn_t (*)(nvmlDevice_t device, nvmlClockType_t type,
                                               unsigned int* clock_mhz);  // Clock, MaxClock
using nvmlDeviceGetUInt_fn = nvmlReturn_t (*)(nvmlDevice_t device,
                                              unsigned int* value);  // power, PCIe link, replay
using nvmlDeviceGetTemperature_fn = nvmlReturn_t (*)(nvmlDevice_t device,
                                                     nvmlTemperatureSensors_t sensor,
                                                     unsigned int* temp_c);
using nvmlDeviceGetClocksEventReasons_fn = nvmlReturn_t (*)(nvmlDevice_t device,
                                                            unsigned long long* reasons);
using nvmlDeviceGetEccMode_fn = nvmlReturn_t (*)(nvmlDevice_t device, nvmlEnableState_t* current,
                                                 nvmlEnableState_t* pending);
using nvmlDeviceGetMigMode_fn = nvmlReturn_t (*)(nvmlDevice_t device, unsigned int* current_mode,
                                                 unsigned int* pending_mode);
using nvmlDeviceGetPersistenceMode_fn = nvmlReturn_t (*)(nvmlDevice_t device,
                                                         nvmlEnableState_t* mode);
using nvmlDeviceGetUtilizationRates_fn = nvmlReturn_t (*)(nvmlDevice_t device,
                                                          nvmlUtilization_t* utilization);
using nvmlDeviceGetCpuAffinity_fn = nvmlReturn_t (*)(nvmlDevice_t device, unsigned int cpu_set_size,
                                                     unsigned long* cpu_set);

}  // namespace gb::sys::nvml_api
