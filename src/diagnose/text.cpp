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

std::optional<double> leading_number(std::string_view text) {
  const std::string s(text);
  const char* begin = s.c_str();
  while (*begin == ' ') ++begin;
  char* end = nullptr;
  const double v = std::strtod(begin, &end);
  if (end == begin) return std::nullopt;
  return v;
}

LinkText parse_link(std::string_view text) {
  LinkText link;
  const auto gen_at = text.find("Gen");
  if (gen_at != std::string_view::npos) {
    if (const auto g = leading_number(text.substr(gen_at + 3))) link.gen = static_cast<int>(*g);
  }
  const auto x_at = text.find(" x");
  if (x_at != std::string_view::npos) {
    if (const auto w = leading_number(text.substr(x_at + 2))) link.width = static_cast<int>(*w);
  }
  return link;
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
