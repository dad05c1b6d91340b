// diagnose/text.hpp: the few text helpers verdicts need (numbers at sensible precision, "80 %",
// "Gen5 x16"). diagnose links
// only gb_core, so these are plain C++ rather than fmt.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gb::diagnose {

// Three significant digits, no exponent, trailing zeros dropped: 989.4 -> "989",
// 55.31 -> "55.3", 6.9 -> "6.9", 0.834 -> "0.834", 1978.9 -> "1979".
std::string format_number(double v);
// A ratio as a whole percentage: 0.799 -> "80 %".
std::string format_percent(double ratio);
// "Gen5 x16"; a missing part prints as "?".
std::string link_name(std::optional<int> gen, std::optional<int> width);
// Non-empty parts joined with sep.
std::string join(const std::vector<std::string>& parts, const std::string& sep);

}  // namespace gb::diagnose
