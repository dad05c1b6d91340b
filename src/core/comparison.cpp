// core/comparison.cpp: see comparison.hpp.
#include "core/comparison.hpp"

namespace gb {

std::string_view to_string(Change c) {
  switch (c) {
    case Change::regression: return "REGRESSION";
    case Change::improvement: return "improvement";
    case Change::within_noise: return "within noise";
    case Change::small: return "below threshold";
    case Change::same: return "same";
    case Change::only_before: return "only before";
    case Change::only_after: return "new";
    case Change::not_compared: return "not compared";
  }
  return "not compared";
}

}  // namespace gb
