// diagnose/achievable.cpp: judging a figure against what the card really reaches. The
// "achievable" reference is a documented fraction of a basis (datasheet peak, datasheet memory
// bandwidth, or the PCIe link's theoretical rate); the verdict compares the measured value with
// it: pass >= 90 %, warn >= 75 %, fail below (docs/thresholds.md says why).
#include <string>

#include "diagnose/rules.hpp"
#include "diagnose/text.hpp"
#include "diagnose/thresholds.hpp"

namespace gb::diagnose {

namespace {

struct BasisValue {
  std::string kind;  // "datasheet" or "clock_adjusted"
  double value = 0;
};

// A spec-table figure becomes the result's datasheet reference when the suite did not attach
// one, so the printers can show "% of datasheet" too.
std::optional<BasisValue> datasheet_basis(Result& r, double spec_value, const RunFacts& facts) {
  if (const Reference* ds = r.find_reference("datasheet"); ds && ds->value > 0)
    return BasisValue{"datasheet", ds->value};
  if (facts.spec && spec_value > 0) {
    r.reference("datasheet", spec_value,
                std::string(facts.spec->name) + " datasheet (docs/gpu-specs.md)");
    return BasisValue{"datasheet", spec_value};
  }
  return std::nullopt;
}

std::optional<BasisValue> pcie_basis(Result& r, const AchievableRule& rule,
                                     const RunFacts& facts) {
  const auto gen = link_gen_target(facts);
  const auto per_direction =
      gen && facts.pcie_width_max ? pcie_link_gbps(*gen, *facts.pcie_width_max) : std::nullopt;
  if (!per_direction) {
    if (const Reference* ds = r.find_reference("datasheet"); ds && ds->value > 0)
      return BasisValue{"datasheet", ds->value};
    return std::nullopt;
  }
  const bool both = rule.basis == Basis::pcie_both_ways;
  const double value = *per_direction * (both ? 2.0 : 1.0);
  if (!r.find_reference("datasheet"))
    r.reference("datasheet", value,
                "PCIe " + link_name(gen, facts.pcie_width_max) + " theoretical" +
                    (both ? ", both directions" : ", per direction") +
                    " (docs/gpu-specs.md: GT/s x encoding x lanes / 8)");
  return BasisValue{"datasheet", value};
}

std::optional<BasisValue> basis_for(Result& r, const AchievableRule& rule,
                                    const RunFacts& facts) {
  switch (rule.basis) {
    case Basis::gemm_peak: {
      const double spec_value = facts.spec ? facts.spec->peak(rule.precision) : 0;
      if (auto ds = datasheet_basis(r, spec_value, facts)) return ds;
      // Unknown GPU: the peak the probe computed from SMs x rate x observed clock.
      if (const Reference* ca = r.find_reference("clock_adjusted"); ca && ca->value > 0)
        return BasisValue{"clock_adjusted", ca->value};
      return std::nullopt;
    }
    case Basis::memory_peak:
      return datasheet_basis(r, facts.spec ? facts.spec->mem_bandwidth_gbps : 0, facts);
    case Basis::pcie_one_way:
    case Basis::pcie_both_ways:
      return pcie_basis(r, rule, facts);
  }
  return std::nullopt;
}

std::string basis_label(const std::string& kind) {
  return kind == "clock_adjusted" ? "clock-adjusted peak" : kind;
}

}  // namespace

const Reference* add_achievable_reference(Result& r, const RunFacts& facts) {
  const AchievableRule* rule = find_achievable_rule(r.key);
  if (!rule) return nullptr;
  if (const Reference* existing = r.find_reference("achievable")) return existing;
  const auto basis = basis_for(r, *rule, facts);
  if (!basis) return nullptr;
  const double value = rule->fraction * basis->value;
  // A fraction gpubase measured on the card its `why` names is, for this run, quoted like a
  // peer's figure: only "assumed" differs in kind.
  const std::string origin = rule->origin == Origin::assumed ? "assumed" : "quoted";
  r.reference("achievable", value,
              origin + ": " + format_number(rule->fraction) + " x " +
                  basis_label(basis->kind) + " " + format_number(basis->value) + " (" +
                  std::string(rule->why) + "; docs/thresholds.md)",
              origin);
  return &r.references.back();
}

void judge_against_achievable(Result& r, const Reference& achievable) {
  if (!r.value || achievable.value <= 0) return;
  const double ratio = *r.value / achievable.value;
  if (ratio >= kPassAtAchievable)
    r.status = Status::pass;
  else if (ratio >= kWarnAtAchievable)
    r.status = Status::warn;
  else
    r.status = Status::fail;

  std::string evidence = format_number(*r.value) + " " + r.unit + " =";
  for (const char* kind : {"datasheet", "clock_adjusted"}) {
    const Reference* peak = r.find_reference(kind);
    if (!peak || peak->value <= 0) continue;
    evidence += " " + format_percent(*r.value / peak->value) + " of " + basis_label(kind) + " " +
                format_number(peak->value) + ",";
    break;
  }
  evidence += " " + format_percent(ratio) + " of achievable " + format_number(achievable.value);
  r.reason = evidence;
  if (r.status == Status::pass) return;
  const AchievableRule* rule = find_achievable_rule(r.key);
  const std::string floor = format_percent(kPassAtAchievable) + " of achievable";
  r.advice = "below " + floor + ": " + std::string(rule ? area_advice(rule->area) : "");
}

}  // namespace gb::diagnose
