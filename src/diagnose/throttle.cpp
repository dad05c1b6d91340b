// diagnose/throttle.cpp: what NVML's clock-event reasons mean for a measurement. A slowdown
// (hardware, thermal, power brake) means the figure is not the card's speed: the result becomes
// "invalid" with the reason and the clock drop, keeping its value. Running at the power cap is
// how a busy card is meant to run (H200 GEMMs sit at 700 W): a note, never a verdict.
#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "diagnose/rules.hpp"
#include "diagnose/text.hpp"

namespace gb::diagnose {

namespace {

struct SlowdownReason {
  std::uint64_t bit;
  const char* name;
  const char* advice;
};

constexpr std::array<SlowdownReason, 4> kSlowdowns{{
    {kReasonHwSlowdown, "hardware slowdown (HW_SLOWDOWN)",
     "the board pulled the clocks down: check cooling and power delivery "
     "(nvidia-smi -q -d PERFORMANCE shows which)"},
    {kReasonSwThermalSlowdown, "driver thermal slowdown",
     "the GPU ran too hot: check airflow, fans, inlet temperature and dust, then rerun cool"},
    {kReasonHwThermalSlowdown, "hardware thermal slowdown",
     "the GPU ran too hot: check airflow, fans, inlet temperature and dust, then rerun cool"},
    {kReasonHwPowerBrake, "hardware power brake",
     "an external power brake was asserted: check the power supply, cabling and any "
     "BMC/rack power capping"},
}};

std::string clock_drop(const Telemetry& t, const RunFacts& facts) {
  const std::optional<double> top = facts.sm_clock_max_mhz ? facts.sm_clock_max_mhz
                                                           : t.sm_clock_mhz_max;
  if (!t.sm_clock_mhz_min) return "SM clock N/A";
  std::string s = "SM clock fell to " + format_number(*t.sm_clock_mhz_min) + " MHz";
  if (top && *top > 0) {
    const double drop = 1.0 - *t.sm_clock_mhz_min / *top;
    s += " of " + format_number(*top) + " MHz max (-" + format_percent(drop) + ")";
  }
  return s;
}

}  // namespace

SlowdownText describe_slowdowns(std::uint64_t bits) {
  std::vector<std::string> names, advice;
  for (const auto& s : kSlowdowns) {
    if ((bits & s.bit) == 0) continue;
    names.emplace_back(s.name);
    if (std::find(advice.begin(), advice.end(), s.advice) == advice.end())
      advice.emplace_back(s.advice);
  }
  return {join(names, " + "), join(advice, "; ")};
}

bool apply_slowdown_rule(Result& r, const RunFacts& facts) {
  if (!r.telemetry || !r.telemetry->throttle_reasons) return false;
  const std::uint64_t bits = *r.telemetry->throttle_reasons & kSlowdownReasons;
  if (bits == 0) return false;
  const SlowdownText text = describe_slowdowns(bits);
  const Telemetry& t = *r.telemetry;
  std::string reason = text.names + " during the test: " + clock_drop(t, facts);
  if (t.temp_c_max) reason += ", " + format_number(*t.temp_c_max) + " C max";
  reason += "; the figure is not this card's speed";
  r.status = Status::invalid;
  r.reason = reason;
  r.advice = text.advice;
  return true;
}

void note_power_cap(Result& r) {
  if (!r.telemetry || !r.telemetry->throttle_reasons) return;
  if ((*r.telemetry->throttle_reasons & kReasonSwPowerCap) == 0) return;
  const Telemetry& t = *r.telemetry;
  const std::optional<double> drawn = t.power_w_mean ? t.power_w_mean : t.power_w_max;
  std::string note = "ran at the power cap";
  // A test with idle gaps (the burst protocol) averages far below the cap it hit: then the peak
  // says what the cap was doing, the mean how much of the test ran there.
  const bool gaps = t.power_w_mean && t.power_w_max && *t.power_w_mean < 0.9 * *t.power_w_max;
  if (gaps && t.power_limit_w)
    note += ", up to " + format_number(*t.power_w_max) + " of " +
            format_number(*t.power_limit_w) + " W (" + format_number(*t.power_w_mean) +
            " W on average over the test)";
  else if (drawn && t.power_limit_w)
    note += ", " + format_number(*drawn) + " of " + format_number(*t.power_limit_w) + " W";
  else if (drawn)
    note += ", " + format_number(*drawn) + " W";
  r.reason = r.reason.empty() ? note : r.reason + "; " + note;
}

}  // namespace gb::diagnose
