// core/format.hpp: the two number spellings progress lines and descriptive params share
// ("0.834", "12,345"), and the one HTML escape the HTML printers share. Result values, numeric
// params and facts stay numbers; the printers in report/ format those.
#pragma once
#include <string>
#include <string_view>

namespace gb {

// `decimals` digits after the point: fixed(55.312, 1) -> "55.3".
std::string fixed(double v, int decimals);
// Rounded to an integer, thousands grouped: 25557032 -> "25,557,032".
std::string grouped(double v);
// Text safe inside HTML elements and quoted attributes: & < > " ' as entities.
std::string html_escape(std::string_view text);

}  // namespace gb
