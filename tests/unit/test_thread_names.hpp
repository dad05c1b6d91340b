// tests/unit/test_thread_names.hpp: the names of this process's threads as the system shows
// them (/proc/self/task/*/comm), for the tests that check gpubase names its threads.
#pragma once
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

namespace gb::test {

inline std::set<std::string> thread_names() {
  std::set<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream in(e.path() / "comm");
    std::string name;
    std::getline(in, name);
    names.insert(name);
  }
  return names;
}

}  // namespace gb::test
