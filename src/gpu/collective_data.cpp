// gpu/collective_data.cpp: the CPU reference check of a collective's output (see
// collective_data.hpp).
#include "gpu/collective_data.hpp"

#include <cstdio>

namespace gb::gpu {

namespace {

std::string number(float v) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", static_cast<double>(v));
  return text;
}

}  // namespace

std::string describe_collective_mismatch(std::uint64_t mismatches, std::uint64_t elements,
                                         std::uint64_t first, float got, float expected) {
  return std::to_string(mismatches) + " of " + std::to_string(elements) +
         " elements differ; element " + std::to_string(first) + " is " + number(got) +
         ", expected " + number(expected);
}

std::string check_collective_output(std::span<const float> out, CollectiveOp op, int rank,
                                    int ranks, std::uint64_t count) {
  const std::uint64_t want = collective_output_elements(op, ranks, count);
  if (out.size() != want)
    return "output has " + std::to_string(out.size()) + " elements, expected " +
           std::to_string(want);
  std::uint64_t bad = 0, first = 0;
  float first_got = 0, first_expected = 0;
  for (std::uint64_t j = 0; j < out.size(); ++j) {
    const float e = collective_expected(op, rank, ranks, count, j);
    if (out[j] == e) continue;
    if (bad++ == 0) {
      first = j;
      first_got = out[j];
      first_expected = e;
    }
  }
  return bad == 0 ? "" : describe_collective_mismatch(bad, out.size(), first, first_got,
                                                      first_expected);
}

}  // namespace gb::gpu
