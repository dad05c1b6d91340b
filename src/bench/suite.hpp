// bench/suite.hpp: what every suite (probe, train, amp, loader) is built on, CUDA-free so every
// layer can include it:
//   - ResultSink: where a suite reports its Results and Facts as soon as each is measured (so
//     Ctrl-C, core/cancel, keeps them), its progress lines, and the summaries made at the end;
//   - DeviceFacts: what the CUDA runtime says about the card;
//   - open_device(index): the one way a suite gets its GPU -- count the devices, validate the
//     index (a usage error naming the valid range), make it current for the suite's lifetime
//     (DeviceScope), find its NVML handle (or say why there is none) and its spec-table entry.
// A machine without a driver or GPU, or a build without CUDA, is not an error here: open_device
// says why and the suite reports skipped results (the CLI exits 3).
#pragma once
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/device_index.hpp"  // require_device_index
#include "core/gpu_specs.hpp"
#include "core/result.hpp"
#include "sys/nvml.hpp"

namespace gb::bench {

class ResultSink {
 public:
  using ProgressFn = std::function<void(const std::string&)>;
  explicit ResultSink(ProgressFn progress = {}) : progress_(std::move(progress)) {}
  // Declares a suite's sections; results added later take their section from them.
  void declare_sections(std::span<const SectionRule> rules);
  // Sets r.section from the declared rules and keeps r.
  void add(Result r);
  void add_fact(Fact f);
  void progress(const std::string& line) const {
    if (progress_) progress_(line);
  }
  std::vector<Result>& results() { return results_; }
  std::vector<Fact>& facts() { return facts_; }
  // The sections the results use, in the order they first appear.
  std::vector<SectionSpec>& sections() { return sections_; }
  // Typed GPU facts the rules read (PCIe link maxima), filled by the suite that queries them.
  GpuState& gpu() { return gpu_; }
  // A summary made from what was measured when the suite ends, normally or by Ctrl-C (a
  // comparison across runs, the configurations that did not run): the suite runner calls end().
  using EndFn = std::function<void(ResultSink&, bool interrupted)>;
  void at_end(EndFn summary) { at_end_.push_back(std::move(summary)); }
  // Runs the summaries once each, in the order they were added.
  void end(bool interrupted);

 private:
  std::vector<EndFn> at_end_;
  ProgressFn progress_;
  GpuState gpu_;
  std::vector<SectionRule> rules_;
  std::vector<SectionSpec> sections_;
  std::vector<Result> results_;
  std::vector<Fact> facts_;
};

// Device facts read through the CUDA runtime.
struct DeviceFacts {
  int index = 0;
  std::string name;
  std::string pci_bus_id;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  double sm_clock_max_mhz = 0;   // cudaDevAttrClockRate
  double mem_clock_max_mhz = 0;  // cudaDevAttrMemoryClockRate
  int mem_bus_width_bits = 0;
  double memory_bytes = 0;
  double l2_bytes = 0;
};

// Makes a CUDA device current and makes the previous one current again when it goes out of
// scope, so a suite's choice of device never leaks into the code that called it. A
// default-constructed scope (or one moved from) restores nothing.
class DeviceScope {
 public:
  DeviceScope() = default;
  explicit DeviceScope(int device);  // throws gb::Error (runtime) when CUDA refuses the device
  ~DeviceScope();
  DeviceScope(DeviceScope&& other) noexcept;
  DeviceScope& operator=(DeviceScope&& other) noexcept;
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  std::optional<int> restore_;  // the device current before; empty: nothing to restore
};

// The GPU a suite runs on: current for as long as the context lives.
struct DeviceContext {
  DeviceScope scope;
  DeviceFacts device;
  std::optional<sys::NvmlDevice> nvml;  // empty when NVML is missing (why: nvml_missing_reason)
  std::string nvml_missing_reason;
  const GpuSpec* spec = nullptr;  // nullptr: unknown GPU, computed peaks only
};

// Number of CUDA devices; 0 with `reason` set when there is no driver, no GPU, or no CUDA in
// this build.
int cuda_device_count(std::string& reason);

// The suite's GPU: empty with `no_gpu_reason` set when the machine has none (or the build has no
// CUDA); throws gb::Error (usage) when `index` is not one of the machine's devices. A negative
// index is a usage error on every machine, with or without a GPU.
std::optional<DeviceContext> open_device(int index, std::string& no_gpu_reason);

// The device's environment facts (gpu.*, driver and library versions, NVML's PCIe link and the
// typed link maxima in sink.gpu()). CUDA builds only: without CUDA there is no context to pass.
void add_device_facts(const DeviceContext& ctx, ResultSink& sink);

}  // namespace gb::bench
