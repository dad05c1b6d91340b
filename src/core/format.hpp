// core/format.hpp: the two number spellings progress lines and descriptive params share
// ("0.834", "12,345"). Result values, numeric params and facts stay numbers; the printers in
// report/ format those.
#pragma once
#include <string>

namespace gb {

// `decimals` digits after the point: fixed(55.312, 1) -> "55.3".
std::string fixed(double v, int decimals);
// Rounded to an integer, thousands grouped: 25557032 -> "25,557,032".
std::string grouped(double v);

}  // namespace gb
