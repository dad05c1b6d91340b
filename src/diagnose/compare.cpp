// diagnose/compare.cpp: see compare.hpp.
#include "diagnose/compare.hpp"

#include <cmath>
#include <cstdio>

#include "diagnose/thresholds.hpp"

namespace gb::diagnose {

namespace {

template <typename... Args>
std::string format(const char* f, Args... args) {
  char buf[256];
  std::snprintf(buf, sizeof buf, f, args...);
  return buf;
}

double spread(const Result& r) { return r.stats.n >= 2 ? r.stats.max - r.stats.min : 0.0; }

ComparedKey compare_key(const Result* b, const Result* a) {
  const Result& any = a ? *a : *b;
  ComparedKey k;
  k.key = any.key;
  k.label = any.label;
  k.unit = any.unit;
  k.threshold_pct = find_regression_threshold(any.key).pct;
  if (b) k.before = b->value;
  if (a) k.after = a->value;
  if (!a) {
    k.verdict = Change::only_before;
    return k;
  }
  if (!b) {
    k.verdict = Change::only_after;
    return k;
  }
  if (!a->value || !b->value || a->unit != b->unit) {
    k.why = a->unit != b->unit ? "unit changed: " + b->unit + " -> " + a->unit
                               : "no value in one of the runs";
    return k;
  }
  k.spread_before = spread(*b);
  k.spread_after = spread(*a);
  const double diff = *a->value - *b->value;
  if (diff == 0) {
    k.verdict = Change::same;
    k.change_pct = 0;
    return k;
  }
  if (*b->value != 0) k.change_pct = diff / std::fabs(*b->value) * 100.0;
  const bool worse = a->higher_is_better ? diff < 0 : diff > 0;
  const double noise = std::max(k.spread_before, k.spread_after);
  if (std::fabs(diff) <= noise) {
    k.verdict = Change::within_noise;
    k.why = format("|change| %.4g %s within the runs' spread (%.4g / %.4g)", std::fabs(diff),
                   any.unit.c_str(), k.spread_before, k.spread_after);
    return k;
  }
  if (!k.change_pct || std::fabs(*k.change_pct) < k.threshold_pct) {
    k.verdict = Change::small;
    k.why = format("beyond the spread but under the %.3g %% threshold", k.threshold_pct);
    return k;
  }
  k.verdict = worse ? Change::regression : Change::improvement;
  k.why = format("%+.1f %% beyond both spreads (%.4g / %.4g %s) and the %.3g %% threshold",
                 *k.change_pct, k.spread_before, k.spread_after, any.unit.c_str(),
                 k.threshold_pct);
  return k;
}

}  // namespace

Comparison compare_runs(const Run& before, const Run& after) {
  Comparison c;
  for (const Result& a : after.results) {
    c.keys.push_back(compare_key(before.find(a.key), &a));
  }
  for (const Result& b : before.results)
    if (!after.find(b.key)) c.keys.push_back(compare_key(&b, nullptr));
  for (const ComparedKey& k : c.keys) {
    c.regressions += k.verdict == Change::regression;
    c.improvements += k.verdict == Change::improvement;
  }
  return c;
}

}  // namespace gb::diagnose
