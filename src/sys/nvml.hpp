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
  std::optional<double> power_limit_w;         // enforced limit
  std::optional<double> power_default_limit_w;
  std::optional<bool> ecc_enabled;
  std::optional<bool> mig_enabled;
  std::optional<bool> persistence_enabled;
  std::optional<int> numa_node;               // from sysfs of the PCI device, -1 if none
  std::optional<std::string> cpu_affinity;     // CPU list, e.g. "0-15"
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

class NvmlLibrary;

class NvmlDevice {
 public:
  NvmlDevice(std::shared_ptr<NvmlLibrary> lib, void* handle);
  NvmlDeviceInfo info() const;
  NvmlSample sample() const;

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
