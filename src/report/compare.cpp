// report/compare.cpp: the comparison printer (`gpubase compare`): one line per key, regressions
// first, each with the values before and after, the change and the verdict; the numbers behind
// a regression or improvement under it; a summary line last.
#include <fmt/format.h>

#include <algorithm>

#include "report/report.hpp"
#include "report/text.hpp"

namespace gb::report {

namespace {

using namespace detail;

int rank(Change c) {
  switch (c) {
    case Change::regression: return 0;
    case Change::improvement: return 1;
    case Change::small: return 2;
    case Change::within_noise: return 3;
    case Change::same: return 4;
    case Change::not_compared: return 5;
    case Change::only_after: return 6;
    case Change::only_before: return 7;
  }
  return 8;
}

std::string number_or_dash(const std::optional<double>& v, const std::string& unit) {
  return v ? number_text(*v, unit) : "-";
}

}  // namespace

std::string render_comparison(const Comparison& c, const std::string& before,
                              const std::string& after) {
  std::vector<const ComparedKey*> keys;
  for (const ComparedKey& k : c.keys) keys.push_back(&k);
  std::stable_sort(keys.begin(), keys.end(), [](const ComparedKey* a, const ComparedKey* b) {
    return rank(a->verdict) < rank(b->verdict);
  });
  std::string out = fmt::format("gpubase compare\n  before: {}\n  after:  {}\n\n", before, after);
  std::size_t key_w = 10;
  for (const ComparedKey* k : keys) key_w = std::max(key_w, display_width(k->key));
  key_w = std::min<std::size_t>(key_w, 48);
  out += fmt::format("  {}  {}  {}  {}  {}\n", pad_right("key", key_w), pad_left("before", 16),
                     pad_left("after", 16), pad_left("change", 8), "verdict");
  for (const ComparedKey* k : keys) {
    const std::string change = k->change_pct ? fmt::format("{:+.1f} %", *k->change_pct) : "";
    std::string key = k->key;
    if (display_width(key) > key_w) key = "…" + key.substr(key.size() - (key_w - 1));
    out += fmt::format("  {}  {}  {}  {}  {}\n", pad_right(key, key_w),
                       pad_left(number_or_dash(k->before, k->unit), 16),
                       pad_left(number_or_dash(k->after, k->unit), 16), pad_left(change, 8),
                       to_string(k->verdict));
    if ((k->verdict == Change::regression || k->verdict == Change::improvement ||
         k->verdict == Change::not_compared) &&
        !k->why.empty())
      out += "      " + k->why + "\n";
  }
  out += fmt::format("\n{} regression{}, {} improvement{} over {} keys\n", c.regressions,
                     c.regressions == 1 ? "" : "s", c.improvements,
                     c.improvements == 1 ? "" : "s", c.keys.size());
  return out;
}

}  // namespace gb::report
