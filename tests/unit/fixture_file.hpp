// tests/unit/fixture_file.hpp: reads a captured fixture file (tests/fixtures/...) for the CPU
// tests; a missing fixture fails the test that asked for it.
#pragma once
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace gb::test {

// path relative to tests/fixtures, e.g. "proc/cpuinfo".
inline std::string read_fixture(const std::string& relative_path) {
  std::ifstream in(std::string(GPUBASE_FIXTURES_DIR) + "/" + relative_path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "missing fixture " << relative_path;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace gb::test
