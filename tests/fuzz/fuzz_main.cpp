// tests/fuzz/fuzz_main.cpp: libFuzzer's entry point for one target of targets.hpp, chosen at
// build time (-DGB_FUZZ_TARGET=gbpack, ...); see scripts/fuzz.sh.
#include <cstddef>
#include <cstdint>

#include "targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return gb::fuzz::GB_FUZZ_TARGET(data, size);
}
