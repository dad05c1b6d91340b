// diagnose/compare.hpp: two runs of the same kind side by side, key by key, with a noise-aware
// verdict: a change is a regression only when it goes the bad way, exceeds both runs' spread
// (each run's min-max over its samples) and the key's threshold (regression_thresholds()).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "core/comparison.hpp"
#include "core/result.hpp"

namespace gb::diagnose {

Comparison compare_runs(const Run& before, const Run& after);

}  // namespace gb::diagnose
