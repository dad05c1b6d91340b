// diagnose/text.cpp: see text.hpp.
#include "diagnose/text.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace gb::diagnose {

std::string format_number(double v) {
  if (!std::isfinite(v)) return "N/A";
  const double magnitude = std::fabs(v);
  int decimals = 0;
  if (magnitude > 0 && magnitude < 100) {
    decimals = 2 - static_cast<int>(std::floor(std::log10(magnitude)));
    if (decimals > 6) decimals = 6;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  std::string s = buf;
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  if (s == "-0") s = "0";
  return s;
}

std::string format_percent(double ratio) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f %%", ratio * 100.0);
  return buf;
}

std::string link_name(std::optional<int> gen, std::optional<int> width) {
  return "Gen" + (gen ? std::to_string(*gen) : std::string("?")) + " x" +
         (width ? std::to_string(*width) : std::string("?"));
}

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (const auto& p : parts) {
    if (p.empty()) continue;
    if (!out.empty()) out += sep;
    out += p;
  }
  return out;
}

}  // namespace gb::diagnose
