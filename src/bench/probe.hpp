// bench/probe.hpp: the `gpubase probe` suite: environment facts, GEMM per precision, HBM
// bandwidth, PCIe transfers and link state, launch latency, host memory. Each section reports
// Results through a ResultSink as soon as each measurement is done, so Ctrl-C keeps what was
// measured. Sections that cannot run here report "skipped: reason". No printing here beyond
// progress lines through the sink.
#pragma once
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bench/links.hpp"
#include "bench/suite.hpp"

namespace gb::bench {

struct ProbeOptions {
  int device = 0;
  bool quick = false;                 // fewer sizes and repetitions (target <= 15 s)
  std::vector<std::string> sections;  // empty = all: env, gemm, memory, pcie, latency, host,
                                      // p2p, nccl
  // The node's selected GPUs (--devices) the p2p and nccl sections span; empty: `device` alone.
  std::vector<int> devices;
  bool wants(const std::string& section) const;
};

// What every section runs with: the suite's device (current while the probe runs) and the
// probe's options.
struct ProbeContext : DeviceContext {
  ProbeOptions options;
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
// The GPU sections (bench/gpu/*.cpp). Each one wraps every measurement in a TelemetrySampler
// and attaches the summary to its Result.
void probe_gemm(const ProbeContext& ctx, ResultSink& sink);
void probe_memory(const ProbeContext& ctx, ResultSink& sink);
void probe_pcie(const ProbeContext& ctx, ResultSink& sink);
void probe_latency(const ProbeContext& ctx, ResultSink& sink);
void probe_host(const ProbeContext& ctx, ResultSink& sink);
void probe_p2p(const ProbeContext& ctx, ResultSink& sink);
void probe_nccl(const ProbeContext& ctx, ResultSink& sink);
// What connects the context's GPU to GPU `peer` (NVML), for the p2p and nccl sections.
PeerLink peer_link(const ProbeContext& ctx, int peer);
#endif

// The sections that span several GPUs (p2p, nccl): left out when every GPU runs the probe at
// once (--concurrent), where they would measure each other.
bool spans_gpus(const std::string& section);

}  // namespace gb::bench
