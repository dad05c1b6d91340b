// cuda_activity/record.cpp: the duration bins shared by the job's reducer and the watcher, and
// what a record says about the GPU's work.
#include "cuda_activity/record.hpp"

#include <algorithm>
#include <cmath>

namespace gb::cuda_activity {

namespace {
constexpr double kFirstEdgeNs = 250.0;
constexpr double kBinsPerOctave = 4.0;
}  // namespace

int duration_bin(std::uint64_t ns) {
  const double v = static_cast<double>(ns);
  if (v < kFirstEdgeNs) return 0;
  const int b = 1 + static_cast<int>(std::floor(std::log2(v / kFirstEdgeNs) * kBinsPerOctave));
  return b >= kDurationBins ? kDurationBins - 1 : b;
}

double bin_lower_ns(int bin) {
  if (bin <= 0) return 0.0;
  return kFirstEdgeNs * std::exp2((bin - 1) / kBinsPerOctave);
}

double bin_mid_ns(int bin) {
  if (bin <= 0) return kFirstEdgeNs / 2;
  return kFirstEdgeNs * std::exp2((bin - 0.5) / kBinsPerOctave);
}

bool gpu_busy(const IntervalRecord& r) {
  for (std::uint32_t i = 0; i < r.devices && i < static_cast<std::uint32_t>(kMaxDevices); ++i)
    if (r.dev[i].used && r.dev[i].busy_ns > 0) return true;
  return false;
}

std::uint64_t last_busy_ns(const IntervalRecord& r) {
  if (!gpu_busy(r)) return 0;
  const std::uint64_t len_ms = std::min<std::uint64_t>(
      (r.t1_ns - r.t0_ns + 999'999) / 1'000'000, static_cast<std::uint64_t>(kMaskMs));
  for (std::uint64_t ms = len_ms; ms-- > 0;)
    for (std::uint32_t i = 0; i < r.devices && i < static_cast<std::uint32_t>(kMaxDevices); ++i)
      if (r.dev[i].used && !mask_bit(r.dev[i].idle_mask, static_cast<int>(ms)))
        return std::min(r.t1_ns, r.t0_ns + (ms + 1) * 1'000'000);
  return r.t1_ns;
}

}  // namespace gb::cuda_activity
