// diagnose/rules.hpp: the individual rules apply_verdicts() runs, one behaviour per function, so
// each can be read and tested alone. RunFacts collects what the rules need from the rest of the
// run (spec-table entry, maximum SM clock, PCIe link maxima) once.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "core/gpu_specs.hpp"
#include "core/result.hpp"

namespace gb::diagnose {

// NVML clock-event reason bits (nvmlClocksEventReason*).
inline constexpr std::uint64_t kReasonSwPowerCap = 0x4;
inline constexpr std::uint64_t kReasonHwSlowdown = 0x8;
inline constexpr std::uint64_t kReasonSwThermalSlowdown = 0x20;
inline constexpr std::uint64_t kReasonHwThermalSlowdown = 0x40;
inline constexpr std::uint64_t kReasonHwPowerBrake = 0x80;
inline constexpr std::uint64_t kSlowdownReasons = kReasonHwSlowdown | kReasonSwThermalSlowdown |
                                                  kReasonHwThermalSlowdown | kReasonHwPowerBrake;

struct RunFacts {
  const GpuSpec* spec = nullptr;             // from gpu.name and gpu.memory
  std::optional<double> sm_clock_max_mhz;    // gpu.sm_clock_max
  std::optional<int> pcie_gen_max_slot;      // what slot and GPU together allow
  std::optional<int> pcie_gen_max_gpu;       // what the GPU alone supports
  std::optional<int> pcie_width_max;
};

RunFacts read_run_facts(const Run& run);

// The link generation and width maximum a PCIe bandwidth is judged against.
std::optional<int> link_gen_target(const RunFacts& facts);

// What the slowdown bits among `bits` mean: "hardware thermal slowdown + driver thermal
// slowdown" and what to check for them (each advice once). Empty names when none is set.
struct SlowdownText {
  std::string names;
  std::string advice;
};
SlowdownText describe_slowdowns(std::uint64_t bits);

// Slowdown in the telemetry -> status invalid with the reason and clock drop. True if applied.
bool apply_slowdown_rule(Result& r, const RunFacts& facts);

// Adds the datasheet (when missing) and achievable references for keys in the achievable
// table. Returns the achievable reference, or nullptr when the key has no rule or no basis.
const Reference* add_achievable_reference(Result& r, const RunFacts& facts);

// pass/warn/fail against the achievable reference, with the evidence and advice.
void judge_against_achievable(Result& r, const Reference& achievable);

// Latency far above a healthy host -> warn; otherwise info with the typical figure.
bool judge_latency(Result& r);

// probe.host.h2d_slowdown.pct above the contention threshold -> warn.
bool judge_host_contention(Result& r);

// probe.gemm.<p>.sustained.tflops: states how much of the burst figure survives a second of
// continuous load (info, no verdict: it is the card's power envelope, not a fault).
bool describe_sustained(Result& r);

// Peers' figures (core/references) beside the results they compare with, on the device they were
// measured on only; reference origin "quoted".
void attach_quoted_references(Run& run, const RunFacts& facts);

// train.<config>.data_wait_pct against the checklist's data-loading limits. True if applied.
bool judge_data_wait(Result& r);

// SwPowerCap in the telemetry -> "; ran at the power cap, 690 of 700 W" appended to reason.
void note_power_cap(Result& r);

// probe.pcie.link.gen_under_load / width_under_load against the maxima: fail when the link
// trained below what slot and card support, warn when only the slot limits it.
void apply_pcie_link_rule(Run& run, const RunFacts& facts);

// GPU-to-GPU links (probe.p2p.*, probe.nccl.*): a one-rank busbw is skipped ("one GPU, no link
// to judge"); a headline with the link's theoretical rate as its datasheet reference is judged
// pass/warn/fail against kPassAtLinkTheory / kWarnAtLinkTheory; the sweep points, the
// device-local diagonal and the latencies stay info. True when the key is one of these.
bool judge_gpu_link(Result& r);

// A pinned copy below target while the link trained down: the link is the cause, so the copy
// carries the link's advice (one fix, said once in the checklist) and names the link state.
void apply_link_explains_bandwidth(Run& run);

// probe.pcie.replay_delta (or the replay counter in the link results' telemetry) > 0 -> warn.
void apply_pcie_replay_rule(Run& run);

// gpubase amp (diagnose/amp.cpp): diverged precisions fail; a mixed precision under the useful
// speedup, a noisy study, a collapsed FP16 loss scale and too many skipped steps warn; the
// accuracy lost against FP32 passes, warns or fails; the speed comparison gets its words.
void apply_amp_rules(Run& run);

}  // namespace gb::diagnose
