// diagnose/facts.cpp: what the rules need from the run besides the result being judged: the
// spec-table entry (the probe's "gpu.spec" fact, else looked up from "gpu.name"/"gpu.memory"),
// the maximum SM clock and the PCIe link maxima (link result params, else the run's typed GPU
// state). Every figure is read as a number; nothing is parsed out of text.
#include <string_view>

#include "diagnose/rules.hpp"

namespace gb::diagnose {

namespace {

const GpuSpec* spec_for(const Run& run) {
  if (const auto named = run.fact("gpu.spec")) {
    for (const GpuSpec& spec : gpu_spec_table())
      if (spec.name == *named) return &spec;
  }
  const auto name = run.fact("gpu.name");
  if (!name) return nullptr;
  return find_gpu_spec(*name, run.fact_number("gpu.memory"));
}

std::optional<int> link_param(const Run& run, std::string_view name) {
  for (const char* key : {"probe.pcie.link.gen_under_load", "probe.pcie.link.width_under_load"}) {
    const Result* r = run.find(key);
    if (!r) continue;
    if (const auto v = r->number_param(name)) return static_cast<int>(*v);
  }
  return std::nullopt;
}

}  // namespace

RunFacts read_run_facts(const Run& run) {
  RunFacts facts;
  facts.spec = spec_for(run);
  facts.sm_clock_max_mhz = run.fact_number("gpu.sm_clock_max");

  const PcieLink& slot = run.gpu.link_max_slot;
  const PcieLink& gpu = run.gpu.link_max_gpu;
  facts.pcie_gen_max_slot = link_param(run, "gen_max_slot");
  if (!facts.pcie_gen_max_slot) facts.pcie_gen_max_slot = slot.gen;
  facts.pcie_gen_max_gpu = link_param(run, "gen_max_gpu");
  if (!facts.pcie_gen_max_gpu) facts.pcie_gen_max_gpu = gpu.gen;
  facts.pcie_width_max = link_param(run, "width_max");
  if (!facts.pcie_width_max) facts.pcie_width_max = slot.width ? slot.width : gpu.width;
  // Last resort: what the spec table says the card supports.
  if (facts.spec) {
    if (!facts.pcie_gen_max_gpu) facts.pcie_gen_max_gpu = facts.spec->pcie_gen;
    if (!facts.pcie_width_max) facts.pcie_width_max = facts.spec->pcie_width;
  }
  return facts;
}

std::optional<int> link_gen_target(const RunFacts& facts) {
  return facts.pcie_gen_max_slot ? facts.pcie_gen_max_slot : facts.pcie_gen_max_gpu;
}

}  // namespace gb::diagnose
