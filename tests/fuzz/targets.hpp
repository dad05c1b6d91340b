// tests/fuzz/targets.hpp: the parsers' fuzz entry points, one per format a user can hand
// gpubase (a .gbpack, a WebDataset tar shard, an IDX pair, gzipped or not, a JPEG, a saved run
// file). Each takes arbitrary bytes and must return: a hostile input ends in gb::Error (a usage
// or data error the CLI reports), never in a crash, a hang, an allocation the input cannot
// justify, or another exception. The same functions run under libFuzzer (fuzz_main.cpp, built
// with -DGPUBASE_FUZZ=ON by scripts/fuzz.sh) and in the unit tests, which replay every input
// kept in tests/fuzz/regressions/ (test_fuzz_regressions.cpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace gb::fuzz {

using TargetFn = int (*)(const std::uint8_t* data, std::size_t size);

struct Target {
  std::string_view name;  // also the folder of its seeds and regressions
  TargetFn run;
};

int gbpack(const std::uint8_t* data, std::size_t size);
// index_tar() on the bytes, then the bytes as a WebDataset shard (labels, keys, reads).
int tar(const std::uint8_t* data, std::size_t size);
// The first 4 bytes (little-endian) split the rest into an images and a labels file.
int idx(const std::uint8_t* data, std::size_t size);
int jpeg(const std::uint8_t* data, std::size_t size);
int run_json(const std::uint8_t* data, std::size_t size);

std::span<const Target> targets();

}  // namespace gb::fuzz
