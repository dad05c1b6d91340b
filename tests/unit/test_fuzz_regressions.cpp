// tests/unit/test_fuzz_regressions.cpp: every input kept in tests/fuzz/regressions/<target>/
// (inputs that once crashed, hung or over-allocated a parser, and the hostile edge cases each
// fix was made for) replayed through its fuzz target: each must end normally, its damage
// reported as gb::Error inside the target, never as a crash or another exception.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "targets.hpp"

namespace {

namespace fs = std::filesystem;

std::vector<fs::path> inputs_of(std::string_view target) {
  std::vector<fs::path> out;
  const fs::path dir = fs::path(GPUBASE_FUZZ_DIR) / "regressions" / std::string(target);
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file()) out.push_back(e.path());
  return out;
}

class FuzzRegressions : public ::testing::TestWithParam<gb::fuzz::Target> {};

TEST_P(FuzzRegressions, EveryKeptInputEndsWithoutACrashOrAStrayException) {
  const gb::fuzz::Target t = GetParam();
  const std::vector<fs::path> inputs = inputs_of(t.name);
  ASSERT_FALSE(inputs.empty()) << "no regression inputs for " << t.name;
  for (const fs::path& p : inputs) {
    std::ifstream in(p, std::ios::binary);
    const std::vector<std::uint8_t> bytes(std::istreambuf_iterator<char>(in), {});
    EXPECT_NO_THROW(EXPECT_EQ(t.run(bytes.data(), bytes.size()), 0)) << p;
  }
}

INSTANTIATE_TEST_SUITE_P(Parsers, FuzzRegressions, ::testing::ValuesIn(gb::fuzz::targets().begin(),
                                                                       gb::fuzz::targets().end()),
                         [](const auto& p) { return std::string(p.param.name); });

}  // namespace
