// Thread names: what top -H and watch show for gpubase's own threads.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>

#include "core/thread_name.hpp"
#include "test_thread_names.hpp"

namespace {

using gb::test::thread_names;

TEST(ThreadName, ANamedThreadShowsItsNameToTheSystem) {
  std::set<std::string> seen;
  std::optional<std::string> own;
  std::thread t([&] {
    gb::name_this_thread("gb-load 7");
    own = gb::this_thread_name();
    seen = thread_names();
  });
  t.join();
  ASSERT_TRUE(own.has_value());
  EXPECT_EQ(*own, "gb-load 7");
  EXPECT_TRUE(seen.count("gb-load 7")) << "not among /proc/self/task/*/comm";
}

TEST(ThreadName, ALongNameIsCutAtFifteenBytes) {
  std::optional<std::string> own;
  std::thread t([&] {
    gb::name_this_thread("gb-a-name-much-longer-than-fifteen");
    own = gb::this_thread_name();
  });
  t.join();
  ASSERT_TRUE(own.has_value());
  EXPECT_EQ(*own, std::string("gb-a-name-much-longer-than-fifteen").substr(0, gb::kThreadNameMax));
}

}  // namespace
