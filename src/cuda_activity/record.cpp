// cuda_activity/record.cpp: the duration bins shared by the job's reducer and the watcher.
#include "cuda_activity/record.hpp"

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

}  // namespace gb::cuda_activity
