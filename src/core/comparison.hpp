// core/comparison.hpp: two runs compared key by key (diagnose/compare fills it, the printers
// format it): each key's values before and after, the change, both runs' spread, the key's
// threshold and the verdict.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gb {

enum class Change {
  regression,   // worse beyond both spreads and the threshold
  improvement,  // better beyond both spreads and the threshold
  within_noise, // the difference is inside one run's spread
  small,        // beyond the spreads but under the threshold
  same,         // identical value
  only_before,  // the key is in the older run only
  only_after,   // the key is in the newer run only
  not_compared, // no value on one side (skipped), or the unit changed
};
std::string_view to_string(Change c);

struct ComparedKey {
  std::string key;
  std::string label;
  std::string unit;
  std::optional<double> before, after;
  std::optional<double> change_pct;  // (after - before) / |before| x 100
  double spread_before = 0, spread_after = 0;  // max - min of each run's samples
  double threshold_pct = 0;
  Change verdict = Change::not_compared;
  std::string why;  // the numbers behind the verdict
};

struct Comparison {
  std::vector<ComparedKey> keys;  // in the newer run's order, then keys only the older run has
  int regressions = 0;
  int improvements = 0;
};

}  // namespace gb
