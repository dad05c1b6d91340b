// diagnose/latency.cpp: rules for figures with no datasheet to compare with. Launch latencies
// depend on the host (CPU, governor, virtualisation) more than on the card, so they stay "info"
// with the typical figure alongside, and only warn when far off (several times a healthy host).
// The host-contention figure warns when CPU memory traffic visibly slows pinned copies.
#include <string>

#include "diagnose/rules.hpp"
#include "diagnose/text.hpp"
#include "diagnose/thresholds.hpp"

namespace gb::diagnose {

bool judge_latency(Result& r) {
  const LatencyLimit* limit = find_latency_limit(r.key);
  if (!limit || !r.value) return false;
  const std::string typical = "about " + format_number(limit->typical_us) + " " + r.unit +
                              " on a healthy host (warn above " +
                              format_number(limit->warn_above_us) + " " + r.unit + ")";
  if (*r.value > limit->warn_above_us) {
    r.status = Status::warn;
    r.reason = format_number(*r.value) + " " + r.unit + ": far off; " + typical;
    r.advice = std::string(limit->advice);
  } else {
    r.reason = typical;
  }
  return true;
}

bool judge_host_contention(Result& r) {
  if (r.key != "probe.host.h2d_slowdown.pct" || !r.value) return false;
  r.reason = "pinned H2D loses " + format_number(*r.value) +
             " % while the CPUs stream memory (warn at " +
             format_number(kHostContentionWarnPct) + " %)";
  if (*r.value >= kHostContentionWarnPct) {
    r.status = Status::warn;
    r.advice = "host memory bandwidth is contended: keep loader workers and pinned buffers on "
               "the GPU's NUMA node and limit memory-heavy work on the other cores";
  }
  return true;
}

}  // namespace gb::diagnose
