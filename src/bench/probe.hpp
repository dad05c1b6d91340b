// bench/probe.hpp: the `gpubase probe` suite: environment facts, GEMM per precision, HBM
// bandwidth, PCIe transfers and link state, launch latency, host memory. Each section reports
// Results through a ResultSink as soon as each measurement is done, so Ctrl-C keeps what was
// measured. Sections that cannot run here report "skipped: reason". No printing here beyond
// progress lines through the sink.
#pragma once
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

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
  // Sets r.section from the declared rules (unless the suite set one) and keeps r.
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

 private:
  ProgressFn progress_;
  GpuState gpu_;
  std::vector<SectionRule> rules_;
  std::vector<SectionSpec> sections_;
  std::vector<Result> results_;
  std::vector<Fact> facts_;
};

// Device facts read through the CUDA runtime, CUDA-free so every layer can use them.
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

struct ProbeOptions {
  int device = 0;
  bool quick = false;                 // fewer sizes and repetitions (target <= 15 s)
  std::vector<std::string> sections;  // empty = all: env, gemm, memory, pcie, latency, host
  bool wants(const std::string& section) const;
};

struct ProbeContext {
  ProbeOptions options;
  DeviceFacts device;
  std::optional<sys::NvmlDevice> nvml;  // empty when NVML is missing
  std::string nvml_missing_reason;
  const GpuSpec* spec = nullptr;  // nullptr: unknown GPU, computed peaks only
};

struct ProbeOutcome {
  bool gpu_found = false;
  std::string no_gpu_reason;  // set when gpu_found is false
};

// Entry point: runs the requested sections. When no GPU/driver is present it reports the
// environment it can read and a skipped result for each GPU section; it does not throw for
// that (the CLI turns gpu_found == false into exit code 3).
ProbeOutcome run_probe(const ProbeOptions& options, ResultSink& sink);

// Where the probe's results print (ResultSink::declare_sections).
std::span<const SectionRule> probe_section_rules();

// The probe's section names, in run order, with a one-line description (for --help).
const std::vector<std::pair<std::string, std::string>>& probe_sections();

#ifdef GPUBASE_WITH_CUDA
// Number of CUDA devices; 0 with `reason` set when there is no driver or no GPU.
int cuda_device_count(std::string& reason);
// Throws gb::Error (usage) naming the valid range when `device` is not one of the `count`
// CUDA devices this machine has.
void require_device_index(int device, int count);
DeviceFacts query_device(int index);
// The device's facts, its NVML handle (or why there is none) and its spec-table entry.
ProbeContext probe_context(const ProbeOptions& options);
// Environment facts read through CUDA and NVML (versions, clocks, ECC, MIG, PCIe link...).
void probe_environment(const ProbeContext& ctx, ResultSink& sink);
// The GPU sections (bench/gpu/*.cpp). Each one wraps every measurement in a TelemetrySampler
// and attaches the summary to its Result.
void probe_gemm(const ProbeContext& ctx, ResultSink& sink);
void probe_memory(const ProbeContext& ctx, ResultSink& sink);
void probe_pcie(const ProbeContext& ctx, ResultSink& sink);
void probe_latency(const ProbeContext& ctx, ResultSink& sink);
void probe_host(const ProbeContext& ctx, ResultSink& sink);
#endif

}  // namespace gb::bench
