// bench/probe.cpp: `gpubase probe` orchestration. Opens the device (bench/suite.hpp), runs the
// requested sections in order and turns "cannot run here" into skipped results with the reason.
// The measurements live in bench/gpu/*.cpp.
#include "bench/probe.hpp"

#include <algorithm>

#include "core/cancel.hpp"
#include "core/error.hpp"
#include "sys/cpu_info.hpp"

namespace gb::bench {

bool spans_gpus(const std::string& section) {
  return section == "p2p" || section == "nccl";
}

bool ProbeOptions::wants(const std::string& section) const {
  return sections.empty() || std::find(sections.begin(), sections.end(), section) != sections.end();
}

const std::vector<std::pair<std::string, std::string>>& probe_sections() {
  static const std::vector<std::pair<std::string, std::string>> sections{
      {"env", "device, driver, CUDA/cuBLAS/cuDNN versions, clocks, ECC, MIG, PCIe link, NUMA"},
      {"gemm", "cuBLASLt GEMM per precision (FP64, FP32, TF32, FP16, BF16, FP8, INT8)"},
      {"memory", "HBM read/write/copy/triad kernels and device-to-device memcpy"},
      {"pcie", "H2D/D2H/bidirectional, pinned vs pageable, size sweep, link under load"},
      {"latency", "kernel launch (host, end-to-end), per kernel in a CUDA graph, event"},
      {"host", "CPU memory bandwidth and its effect on pinned H2D copies"},
      {"p2p", "GPU-to-GPU copies to each selected GPU (--devices): bandwidth one way and both "
              "ways, time per small copy, the link (NVLink/PCIe) from NVML"},
      {"nccl", "NCCL all-reduce, all-gather, reduce-scatter over the selected GPUs: algbw, "
               "busbw, size sweep, checked results"},
  };
  return sections;
}

namespace {

// One skipped result per GPU section, so nothing disappears silently.
void skip_gpu_sections(const ProbeOptions& options, const std::string& reason, ResultSink& sink) {
  for (const auto& [name, description] : probe_sections()) {
    if (name == "env" || !options.wants(name)) continue;
    sink.add(Result::skipped("probe." + name, description, "", reason));
  }
}

// Host facts need no GPU: they are reported on every machine.
void add_host_facts(ResultSink& sink) {
  for (Fact& f : sys::host_facts(sys::read_host_info())) sink.add_fact(std::move(f));
}

}  // namespace

std::span<const SectionRule> probe_section_rules() {
  static constexpr SectionRule kRules[] = {
      {"probe.gemm", "probe.gemm", "GEMM (cuBLASLt, dense)", Layout::benchmark},
      {"probe.memory", "probe.memory", "Device memory", Layout::benchmark},
      {"probe.pcie", "probe.pcie", "PCIe host <-> device", Layout::benchmark},
      {"probe.latency", "probe.latency", "Launch latency", Layout::benchmark},
      {"probe.host", "probe.host", "Host memory", Layout::benchmark},
      {"probe.p2p", "probe.p2p", "GPU to GPU copies", Layout::benchmark},
      {"probe.nccl", "probe.nccl", "NCCL collectives over the selected GPUs", Layout::benchmark},
  };
  return kRules;
}

ProbeOutcome run_probe(const ProbeOptions& options, ResultSink& sink) {
  sink.declare_sections(probe_section_rules());
  for (const auto& s : options.sections) {
    const auto& all = probe_sections();
    if (std::none_of(all.begin(), all.end(), [&](const auto& p) { return p.first == s; }))
      throw Error(ErrorKind::usage, "unknown probe section '" + s +
                                        "' (sections: env, gemm, memory, pcie, latency, host, p2p, "
                                        "nccl)");
  }
  ProbeOutcome outcome;
  if (options.wants("env")) add_host_facts(sink);
  std::string reason;
  std::optional<DeviceContext> device = open_device(options.device, reason);
  if (!device) {
    outcome.no_gpu_reason = reason;
    skip_gpu_sections(options, reason, sink);
    return outcome;
  }
  outcome.gpu_found = true;
#ifdef GPUBASE_WITH_CUDA
  ProbeContext ctx{std::move(*device), options};
  add_device_facts(ctx, sink);
  using Section = void (*)(const ProbeContext&, ResultSink&);
  const std::pair<const char*, Section> sections[] = {
      {"gemm", probe_gemm},       {"memory", probe_memory}, {"pcie", probe_pcie},
      {"latency", probe_latency}, {"host", probe_host},     {"p2p", probe_p2p},
      {"nccl", probe_nccl},
  };
  for (const auto& [name, run_section] : sections) {
    if (!options.wants(name)) continue;
    throw_if_cancelled();
    sink.progress(std::string("probe: ") + name);
    run_section(ctx, sink);
  }
#endif
  return outcome;
}

}  // namespace gb::bench
