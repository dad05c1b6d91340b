// diagnose/pcie_link.cpp: the PCIe link rules. A link that trained below what slot and card
// support is the classic "card at 60 % of its speed" fault; the probe reads generation and width
// under load (links downclock when idle), and the maxima from NVML. Replays mean the link had to
// retransmit packets: a signal-integrity problem even when the speed looks right.
#include <algorithm>
#include <string>

#include "diagnose/rules.hpp"
#include "diagnose/text.hpp"

namespace gb::diagnose {

namespace {

constexpr const char* kGenKey = "probe.pcie.link.gen_under_load";
constexpr const char* kWidthKey = "probe.pcie.link.width_under_load";
constexpr const char* kReplayKey = "probe.pcie.replay_delta";

Result* find_result(Run& run, std::string_view key) {
  for (auto& r : run.results)
    if (r.key == key) return &r;
  return nullptr;
}

std::optional<int> int_value(const Result* r) {
  if (!r || !r->value) return std::nullopt;
  return static_cast<int>(*r->value);
}

bool judgeable(const Result* r) { return r && r->value && r->status == Status::info; }

}  // namespace

void apply_pcie_link_rule(Run& run, const RunFacts& facts) {
  Result* gen_r = find_result(run, kGenKey);
  Result* width_r = find_result(run, kWidthKey);
  const auto gen = int_value(gen_r);
  const auto width = int_value(width_r);
  if (!gen && !width) return;

  const std::optional<int> card = facts.pcie_gen_max_gpu ? facts.pcie_gen_max_gpu
                                                         : facts.pcie_gen_max_slot;
  const std::optional<int> platform = facts.pcie_gen_max_slot ? facts.pcie_gen_max_slot : card;
  const std::optional<int> width_max = facts.pcie_width_max;

  const bool degraded_gen = gen && platform && *gen < *platform;
  const bool degraded_width = width && width_max && *width < *width_max;
  const bool slot_limited = platform && card && *platform < *card;

  std::string reason = link_name(gen, width) + " under load";
  if (platform || width_max) reason += "; slot and card allow " + link_name(platform, width_max);
  if (card) reason += ", the card alone Gen" + std::to_string(*card);

  std::string advice;
  if (degraded_gen || degraded_width)
    advice = "PCIe link is " + link_name(gen, width) + " under load, card supports " +
             link_name(card, width_max) + ": reseat the card or check the slot/riser/BIOS";
  if (slot_limited) {
    if (!advice.empty()) advice += "; ";
    advice += "the slot/platform limits the link to Gen" + std::to_string(*platform) +
              ": use a Gen" + std::to_string(*card) + " slot";
  }

  auto judge = [&](Result* r, bool degraded, bool limited, bool known) {
    if (!judgeable(r)) return;
    r->reason = reason;
    if (!known) {
      r->reason += " (maximum not reported: not judged)";
      return;
    }
    r->status = degraded ? Status::fail : limited ? Status::warn : Status::pass;
    if (r->status != Status::pass) r->advice = advice;
  };
  judge(gen_r, degraded_gen, slot_limited, platform.has_value());
  judge(width_r, degraded_width, false, width_max.has_value());
}

void apply_link_explains_bandwidth(Run& run) {
  const Result* cause = nullptr;
  for (const char* key : {kGenKey, kWidthKey}) {
    const Result* r = run.find(key);
    if (r && r->status == Status::fail) {
      cause = r;
      break;
    }
  }
  if (!cause) return;
  const std::string link_state = link_name(int_value(run.find(kGenKey)), int_value(run.find(kWidthKey)));
  for (Result& r : run.results) {
    const bool pinned_copy = r.key.rfind("probe.pcie.", 0) == 0 &&
                             r.key.find(".pinned.") != std::string::npos;
    if (!pinned_copy || (r.status != Status::warn && r.status != Status::fail)) continue;
    r.reason += "; the link runs at " + link_state;
    r.advice = cause->advice;
  }
}

void apply_pcie_replay_rule(Run& run) {
  constexpr const char* kAdvice =
      "the link retransmits packets: reseat the card and check the riser/cable and slot; watch "
      "the replay counter (nvidia-smi -q -d PCIE) and AER errors in the kernel log";
  if (Result* replay = find_result(run, kReplayKey); judgeable(replay)) {
    const double count = *replay->value;
    if (count > 0) {
      replay->status = Status::warn;
      replay->reason = format_number(count) + " PCIe replays during the copies (signal integrity)";
      replay->advice = kAdvice;
    } else {
      replay->status = Status::pass;
      replay->reason = "no PCIe replays during the copies";
    }
    return;
  }
  // No replay result: the counter seen in the link results' telemetry.
  std::uint64_t replays = 0;
  for (const char* key : {kGenKey, kWidthKey}) {
    const Result* r = run.find(key);
    if (r && r->telemetry && r->telemetry->pcie_replay_delta)
      replays = std::max(replays, *r->telemetry->pcie_replay_delta);
  }
  Result* gen_r = find_result(run, kGenKey);
  if (replays == 0 || !gen_r || gen_r->status != Status::pass) return;
  gen_r->status = Status::warn;
  gen_r->reason += "; " + std::to_string(replays) + " PCIe replays during the copies (signal integrity)";
  gen_r->advice = kAdvice;
}

}  // namespace gb::diagnose
