// core/stats.hpp: sample statistics over repetitions (median, min, max, mean, stddev, CV).
// One place for statistics, as google/benchmark keeps it; suites hand raw samples here.
#pragma once
#include <cstddef>
#include <span>
#include <vector>

namespace gb {

struct SampleStats {
  std::size_t n = 0;
  double median = 0;
  double mean = 0;
  double min = 0;
  double max = 0;
  double stddev = 0;  // sample standard deviation (n-1)
  double cv = 0;      // stddev / mean; 0 when mean is 0
};

SampleStats compute_stats(std::span<const double> samples);

// q in [0,1]; linear interpolation between order statistics (numpy's default).
double quantile(std::vector<double> samples, double q);

}  // namespace gb
