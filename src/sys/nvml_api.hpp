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

// --- Watch metrics (gpubase watch) ---------------------------------------------------------

// nvmlDeviceGetSamples: the driver's ring buffer of high-resolution samples (about 1/6 s apart).
enum nvmlSamplingType_t {
  NVML_TOTAL_POWER_SAMPLES = 0,
  NVML_GPU_UTILIZATION_SAMPLES = 1,
  NVML_MEMORY_UTILIZATION_SAMPLES = 2,
  NVML_ENC_UTILIZATION_SAMPLES = 3,
  NVML_DEC_UTILIZATION_SAMPLES = 4,
  NVML_PROCESSOR_CLK_SAMPLES = 5,
  NVML_MEMORY_CLK_SAMPLES = 6,
};

// Which member of nvmlValue_t holds a value.
enum nvmlValueType_t {
  NVML_VALUE_TYPE_DOUBLE = 0,
  NVML_VALUE_TYPE_UNSIGNED_INT = 1,
  NVML_VALUE_TYPE_UNSIGNED_LONG = 2,
  NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3,
  NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4,
  NVML_VALUE_TYPE_SIGNED_INT = 5,
  NVML_VALUE_TYPE_UNSIGNED_SHORT = 6,
};

union nvmlValue_t {
  double dVal;
  int siVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  signed long long sllVal;
  unsigned short usVal;
};

struct nvmlSample_t {
  unsigned long long timeStamp;  // CPU timestamp, microseconds
  nvmlValue_t sampleValue;
};

// nvmlDeviceGetProcessUtilization: per-process percentages over the driver's sample window.
struct nvmlProcessUtilizationSample_t {
  unsigned int pid;
  unsigned long long timeStamp;  // CPU timestamp, microseconds
  unsigned int smUtil;
  unsigned int memUtil;
  unsigned int encUtil;
  unsigned int decUtil;
};

// nvmlDeviceGetFieldValues: one requested field, answered in place.
inline constexpr unsigned int NVML_FI_DEV_MEMORY_TEMP = 82;  // HBM temperature, degrees C

struct nvmlFieldValue_t {
  unsigned int fieldId;   // IN
  unsigned int scopeId;   // IN: 0 for device-wide fields
  long long timestamp;    // OUT: microseconds
  long long latencyUsec;  // OUT
  nvmlValueType_t valueType;
  nvmlReturn_t nvmlReturn;  // OUT: this field's status; value is valid only on NVML_SUCCESS
  nvmlValue_t value;
};

// GPM (GPU Performance Monitoring, Hopper and newer, driver 520+): counters read into sample
// buffers; a metric is computed between two samples.
struct nvmlGpmSample_st;
using nvmlGpmSample_t = nvmlGpmSample_st*;

// nvmlGpmMetricId_t: values are percent, 0.0 - 100.0.
inline constexpr unsigned int NVML_GPM_METRIC_GRAPHICS_UTIL = 1;
inline constexpr unsigned int NVML_GPM_METRIC_SM_UTIL = 2;  // SM activity
inline constexpr unsigned int NVML_GPM_METRIC_SM_OCCUPANCY = 3;
inline constexpr unsigned int NVML_GPM_METRIC_ANY_TENSOR_UTIL = 5;
inline constexpr unsigned int NVML_GPM_METRIC_DRAM_BW_UTIL = 10;

// nvml.h's array bound (driver 550+). NVML reads and writes only numMetrics entries, so an older
// library's smaller bound does not matter.
inline constexpr unsigned int NVML_GPM_METRIC_MAX = 333;
inline constexpr unsigned int NVML_GPM_METRICS_GET_VERSION = 1;
inline constexpr unsigned int NVML_GPM_SUPPORT_VERSION = 1;

struct nvmlGpmMetric_t {
  unsigned int metricId;    // IN: NVML_GPM_METRIC_*
  nvmlReturn_t nvmlReturn;  // OUT: this metric's status; value is valid only on NVML_SUCCESS
  double value;             // OUT
  struct {
    char* shortName;
    char* longName;
    char* unit;
  } metricInfo;  // OUT: may be NULL
};

struct nvmlGpmMetricsGet_t {
  unsigned int version;     // IN: NVML_GPM_METRICS_GET_VERSION
  unsigned int numMetrics;  // IN: entries used in metrics[]
  nvmlGpmSample_t sample1;  // IN: the earlier sample
  nvmlGpmSample_t sample2;  // IN: the later sample
  nvmlGpmMetric_t metrics[NVML_GPM_METRIC_MAX];
};

struct nvmlGpmSupport_t {
  unsigned int version;            // IN: NVML_GPM_SUPPORT_VERSION
  unsigned int isSupportedDevice;  // OUT
};


// --- GPU-to-GPU links (probe p2p / nccl) ------------------------------------------------------

// nvmlDeviceGetTopologyCommonAncestor: the closest PCIe element two GPUs share.
enum nvmlGpuTopologyLevel_t {
  NVML_TOPOLOGY_INTERNAL = 0,     // the same board (multi-GPU card)
  NVML_TOPOLOGY_SINGLE = 10,      // one PCIe switch
  NVML_TOPOLOGY_MULTIPLE = 20,    // several PCIe switches, no host bridge
  NVML_TOPOLOGY_HOSTBRIDGE = 30,  // the same host bridge
  NVML_TOPOLOGY_NODE = 40,        // host bridges of one NUMA node
  NVML_TOPOLOGY_SYSTEM = 50,      // across NUMA nodes (SMP interconnect)
};

// nvmlDeviceGetP2PStatus: can two GPUs talk peer to peer over this path.
enum nvmlGpuP2PCapsIndex_t {
  NVML_P2P_CAPS_INDEX_READ = 0,
  NVML_P2P_CAPS_INDEX_WRITE = 1,
  NVML_P2P_CAPS_INDEX_NVLINK = 2,
  NVML_P2P_CAPS_INDEX_ATOMICS = 3,
  NVML_P2P_CAPS_INDEX_PCI = 4,
};
enum nvmlGpuP2PStatus_t {
  NVML_P2P_STATUS_OK = 0,
};

// Links per GPU nvml.h allows (NVML_NVLINK_MAX_LINKS).
inline constexpr unsigned int NVML_NVLINK_MAX_LINKS = 18;

// nvmlDeviceGetNvLinkVersion answers nvmlNvlinkVersion_t (driver 550+ headers): 1 = 1.0,
// 2 = 2.0, 3 = 2.2, 4 = 3.0, 5 = 3.1, 6 = 4.0, 7 = 5.0.

static_assert(sizeof(nvmlValue_t) == 8);
static_assert(sizeof(nvmlSample_t) == 16);
static_assert(sizeof(nvmlProcessUtilizationSample_t) == 32);
static_assert(offsetof(nvmlProcessUtilizationSample_t, timeStamp) == 8);
static_assert(offsetof(nvmlProcessUtilizationSample_t, smUtil) == 16);
static_assert(sizeof(nvmlFieldValue_t) == 40);
static_assert(offsetof(nvmlFieldValue_t, value) == 32);
static_assert(sizeof(nvmlGpmMetric_t) == 40);
static_assert(offsetof(nvmlGpmMetric_t, value) == 8);
static_assert(offsetof(nvmlGpmMetricsGet_t, metrics) == 24);
static_assert(sizeof(nvmlGpmSupport_t) == 8);

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
// Watch metrics. PCIe throughput is in KB/s; timestamps in microseconds.
using nvmlDeviceGetSamples_fn = nvmlReturn_t (*)(nvmlDevice_t device, nvmlSamplingType_t type,
                                                 unsigned long long last_seen_timestamp,
                                                 nvmlValueType_t* sample_value_type,
                                                 unsigned int* sample_count, nvmlSample_t* samples);
using nvmlDeviceGetProcessUtilization_fn =
    nvmlReturn_t (*)(nvmlDevice_t device, nvmlProcessUtilizationSample_t* utilization,
                     unsigned int* process_samples_count, unsigned long long last_seen_timestamp);
using nvmlDeviceGetPcieThroughput_fn = nvmlReturn_t (*)(nvmlDevice_t device,
                                                        nvmlPcieUtilCounter_t counter,
                                                        unsigned int* value_kb_per_s);
using nvmlDeviceGetFieldValues_fn = nvmlReturn_t (*)(nvmlDevice_t device, int values_count,
                                                     nvmlFieldValue_t* values);
using nvmlGpmQueryDeviceSupport_fn = nvmlReturn_t (*)(nvmlDevice_t device,
                                                      nvmlGpmSupport_t* gpm_support);
using nvmlGpmSampleAlloc_fn = nvmlReturn_t (*)(nvmlGpmSample_t* gpm_sample);
using nvmlGpmSampleFree_fn = nvmlReturn_t (*)(nvmlGpmSample_t gpm_sample);
using nvmlGpmSampleGet_fn = nvmlReturn_t (*)(nvmlDevice_t device, nvmlGpmSample_t gpm_sample);
using nvmlGpmMetricsGet_fn = nvmlReturn_t (*)(nvmlGpmMetricsGet_t* metrics_get);
// GPU-to-GPU links.
using nvmlDeviceGetTopologyCommonAncestor_fn = nvmlReturn_t (*)(nvmlDevice_t device1,
                                                                nvmlDevice_t device2,
                                                                nvmlGpuTopologyLevel_t* path_info);
using nvmlDeviceGetP2PStatus_fn = nvmlReturn_t (*)(nvmlDevice_t device1, nvmlDevice_t device2,
                                                   nvmlGpuP2PCapsIndex_t p2p_index,
                                                   nvmlGpuP2PStatus_t* p2p_status);
using nvmlDeviceGetNvLinkState_fn = nvmlReturn_t (*)(nvmlDevice_t device, unsigned int link,
                                                     nvmlEnableState_t* is_active);
using nvmlDeviceGetNvLinkVersion_fn = nvmlReturn_t (*)(nvmlDevice_t device, unsigned int link,
                                                       unsigned int* version);
using nvmlDeviceGetNvLinkRemotePciInfo_v2_fn = nvmlReturn_t (*)(nvmlDevice_t device,
                                                                unsigned int link,
                                                                nvmlPciInfo_t* pci);

}  // namespace gb::sys::nvml_api
