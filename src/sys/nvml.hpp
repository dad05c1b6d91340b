// sys/nvml.hpp: NVML loaded at run time with dlopen("libnvidia-ml.so.1") and the project's own
// declarations (sys/nvml_api.hpp), so gpubase builds without the driver SDK and starts on a
// machine without a driver. Every query answers std::optional: a field the device or driver
// does not support is empty, never a made-up value.
//
// The library path can be overridden with $GPUBASE_NVML_LIBRARY (the CPU tests point it at the
// fake libnvidia-ml in tests/fixtures/fake_nvml).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gb::sys {

struct PcieLinkInfo {
  std::optional<int> gen_current;
  std::optional<int> gen_max_slot;  // nvmlDeviceGetMaxPcieLinkGeneration: GPU and system combined
  std::optional<int> gen_max_gpu;   // nvmlDeviceGetGpuMaxPcieLinkGeneration: the GPU alone
  std::optional<int> width_current;
  std::optional<int> width_max;
};

// Static facts of one device.
struct NvmlDeviceInfo {
  std::optional<std::string> name;
  std::optional<std::string> uuid;
  std::optional<std::string> pci_bus_id;
  std::optional<std::uint64_t> memory_total_bytes;
  std::optional<double> sm_clock_max_mhz;
  std::optional<double> mem_clock_max_mhz;
  std::optional<double> power_limit_w;  // enforced limit
  std::optional<double> power_default_limit_w;
  std::optional<bool> ecc_enabled;
  std::optional<bool> mig_enabled;
  std::optional<bool> persistence_enabled;
  std::optional<int> numa_node;             // from sysfs of the PCI device, -1 if none
  std::optional<std::string> cpu_affinity;  // CPU list, e.g. "0-15"
  PcieLinkInfo pcie;
};

// One sample of the fast-changing state.
struct NvmlSample {
  double t_s = 0;  // seconds since the sampler started
  std::optional<double> sm_clock_mhz;
  std::optional<double> mem_clock_mhz;
  std::optional<double> power_w;
  std::optional<double> temp_c;
  std::optional<std::uint64_t> throttle_reasons;  // nvmlClocksEventReason* bits
  std::optional<int> pcie_gen;
  std::optional<int> pcie_width;
  std::optional<std::uint64_t> pcie_replay_counter;
  std::optional<double> gpu_util_pct;
  std::optional<double> mem_util_pct;
};

// --- Watch metrics (gpubase watch) ---------------------------------------------------------
// Finer-grained than NvmlSample: the driver's own sample buffers, per-process shares, PCIe
// traffic and, on Hopper and newer, GPM counters. Timestamps are NVML's CPU timestamps in
// microseconds; pass the last one seen as since_timestamp_us to read only newer samples.

enum class NvmlSampleKind {
  gpu_utilization,     // NVML_GPU_UTILIZATION_SAMPLES: percent of time a kernel ran
  memory_utilization,  // NVML_MEMORY_UTILIZATION_SAMPLES: percent of time memory was accessed
};

struct UtilSample {
  std::uint64_t timestamp_us = 0;
  double value_pct = 0;
};

// One process's share of the device over NVML's sample window.
struct ProcessUtil {
  std::uint32_t pid = 0;
  std::uint64_t timestamp_us = 0;
  double sm_pct = 0;
  double mem_pct = 0;
  double enc_pct = 0;
  double dec_pct = 0;
};

struct PcieThroughput {
  std::uint64_t tx_bytes_per_s = 0;  // from the GPU
  std::uint64_t rx_bytes_per_s = 0;  // to the GPU
};

// NvmlSample plus what watch shows beside it.
struct NvmlWatchSample : NvmlSample {
  std::optional<std::uint64_t> memory_used_bytes;
  std::optional<double> memory_temp_c;  // HBM temperature (NVML_FI_DEV_MEMORY_TEMP)
  std::optional<PcieThroughput> pcie_throughput;
};

// GPM metrics between two samples, in percent (0-100) as NVML reports them; a metric the device
// does not report is empty.
struct GpmMetrics {
  double interval_s = 0;                    // between the two samples, by the host's steady clock
  std::optional<double> sm_active_pct;      // NVML_GPM_METRIC_SM_UTIL
  std::optional<double> sm_occupancy_pct;   // NVML_GPM_METRIC_SM_OCCUPANCY
  std::optional<double> tensor_active_pct;  // NVML_GPM_METRIC_ANY_TENSOR_UTIL
  std::optional<double> dram_bw_pct;        // NVML_GPM_METRIC_DRAM_BW_UTIL
};

// One NVLink of a device (nvmlDeviceGetNvLinkState / Version / RemotePciInfo).
struct NvLinkInfo {
  int link = 0;
  bool active = false;
  std::optional<int> version;  // nvmlNvlinkVersion_t: 1 = 1.0 ... 6 = 4.0, 7 = 5.0
  std::string remote_pci_bus_id;  // "0000:3B:00.0": a GPU, or an NVSwitch; empty: unknown
};

// nvmlGpuTopologyLevel_t in words: 0 "same board", 10 "one PCIe switch", 20 "several PCIe
// switches", 30 "the host bridge", 40 "host bridges of one NUMA node", 50 "across NUMA nodes".
std::string topology_level_name(int level);

class NvmlLibrary;

// Two GPM sample buffers of one device (RAII: freed with the sampler). take() reads the counters
// into the older buffer; metrics() computes between the last two takes. When GPM is missing
// (old driver, pre-Hopper GPU, MIG, no permission) available() is false with a reason and
// take()/metrics() answer false/empty.
class GpmSampler {
 public:
  GpmSampler(std::shared_ptr<NvmlLibrary> lib, void* device_handle);
  ~GpmSampler();
  GpmSampler(GpmSampler&& other) noexcept;
  GpmSampler& operator=(GpmSampler&& other) noexcept;
  GpmSampler(const GpmSampler&) = delete;
  GpmSampler& operator=(const GpmSampler&) = delete;

  bool available() const { return reason_.empty(); }
  const std::string& unavailable_reason() const { return reason_; }
  bool take();
  std::optional<GpmMetrics> metrics() const;

 private:
  void release();

  std::shared_ptr<NvmlLibrary> lib_;
  void* device_ = nullptr;
  void* samples_[2] = {nullptr, nullptr};  // nvmlGpmSample_t
  double taken_at_s_[2] = {0, 0};
  int taken_ = 0;   // successful takes, capped at 2
  int latest_ = 1;  // index of the newest sample
  std::string reason_;
};

class NvmlDevice {
 public:
  NvmlDevice(std::shared_ptr<NvmlLibrary> lib, void* handle);
  NvmlDeviceInfo info() const;
  NvmlSample sample() const;

  // Watch metrics; empty when unsupported, never throwing.
  std::vector<UtilSample> utilization_samples(NvmlSampleKind kind,
                                              std::uint64_t since_timestamp_us = 0) const;
  std::vector<ProcessUtil> process_utilization(std::uint64_t since_timestamp_us = 0) const;
  std::optional<PcieThroughput> pcie_throughput() const;  // NVML's KB/s as bytes/s (x1024)
  // with_pcie_throughput = false skips the PCIe counters (NVML samples them over ~20 ms per
  // call, the costliest part of the sample).
  NvmlWatchSample watch_sample(bool with_pcie_throughput = true) const;
  GpmSampler gpm_sampler() const;

  // GPU-to-GPU links; empty when the driver or device does not say.
  std::vector<NvLinkInfo> nvlinks() const;  // every link the device has, active or not
  std::optional<int> common_ancestor(const NvmlDevice& other) const;  // nvmlGpuTopologyLevel_t
  std::optional<bool> nvlink_p2p_with(const NvmlDevice& other) const;  // P2P over NVLink works

 private:
  std::shared_ptr<NvmlLibrary> lib_;
  void* handle_;
};

class Nvml {
 public:
  // Never throws. available() is false with a reason when the library is missing, a symbol is
  // absent or nvmlInit fails.
  static Nvml load();
  static Nvml load_from(const std::string& path);

  bool available() const { return lib_ != nullptr; }
  const std::string& unavailable_reason() const { return reason_; }
  std::optional<std::string> driver_version() const;
  std::optional<int> cuda_driver_version() const;  // e.g. 13000
  int device_count() const;
  std::optional<NvmlDevice> device(int index) const;
  // pci_bus_id as CUDA prints it ("0000:3B:00.0"); matches case-insensitively.
  std::optional<NvmlDevice> device_by_pci_bus_id(const std::string& pci_bus_id) const;

 private:
  std::shared_ptr<NvmlLibrary> lib_;
  std::string reason_;
};

// Names of the set bits ("SwPowerCap", "HwSlowdown", "SwThermalSlowdown", ...).
std::vector<std::string> throttle_reason_names(std::uint64_t mask);
// True for reasons that make a performance figure untrustworthy: thermal slowdown (HW or SW),
// HW slowdown and HW power-brake. A power cap is the card's normal envelope under heavy load,
// not a fault: it is reported, not invalidating.
bool is_slowdown(std::uint64_t mask);

}  // namespace gb::sys
