// diagnose/sustained.cpp: the sustained GEMM figure (after 1 s of back-to-back load) next to
// the burst one. Under a power cap the clock a card holds for long runs is lower than the one it
// reaches for a few milliseconds; a training job sees the sustained figure. No verdict: the
// burst figure carries the card-speed verdict, this one explains the difference.
#include <string>

#include "diagnose/rules.hpp"
#include "diagnose/text.hpp"

namespace gb::diagnose {

namespace {
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
}  // namespace

bool describe_sustained(Result& r) {
  if (!ends_with(r.key, ".sustained.tflops") || !r.value) return false;
  const auto burst = r.number_param("burst_tflops");
  if (!burst) return true;
  const double burst_tflops = *burst;
  if (burst_tflops <= 0) return true;
  r.reason = format_percent(*r.value / burst_tflops) + " of the burst figure " +
             format_number(burst_tflops) + " after 1 s of continuous load";
  if (r.telemetry && r.telemetry->sm_clock_mhz_mean)
    r.reason += ", SM clock " + format_number(*r.telemetry->sm_clock_mhz_mean) + " MHz";
  return true;
}

}  // namespace gb::diagnose
