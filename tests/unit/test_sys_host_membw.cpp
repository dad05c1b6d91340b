// tests/unit/test_sys_host_membw.cpp: the STREAM-like host bandwidth kernels compute the right
// arrays (checked in full by measure_host_membw itself) on any thread count and size, report
// positive bandwidth, and the background copy load runs, checks itself and stops.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "sys/host_membw.hpp"

namespace gb::sys {
namespace {

HostMembwConfig small_config(std::size_t elements, int threads) {
  HostMembwConfig c;
  c.elements = elements;
  c.threads = threads;
  c.repetitions = 3;
  return c;
}

void expect_valid(const HostMembwResult& r, const HostMembwConfig& c) {
  EXPECT_TRUE(r.valid) << r.error;
  ASSERT_EQ(r.copy_gbps.size(), static_cast<std::size_t>(c.repetitions));
  ASSERT_EQ(r.triad_gbps.size(), static_cast<std::size_t>(c.repetitions));
  for (const double g : r.copy_gbps) EXPECT_GT(g, 0.0);
  for (const double g : r.triad_gbps) EXPECT_GT(g, 0.0);
}

TEST(HostMembw, CopyAndTriadAreCorrectOnOneThread) {
  const HostMembwConfig c = small_config(100003, 1);
  expect_valid(measure_host_membw(c), c);
}

TEST(HostMembw, CopyAndTriadAreCorrectOnTwoThreadsWithAnOddSize) {
  const HostMembwConfig c = small_config(100003, 2);
  expect_valid(measure_host_membw(c), c);
}

TEST(HostMembw, MoreThreadsThanElementsLeavesSomeSlicesEmpty) {
  const HostMembwConfig c = small_config(3, 5);
  expect_valid(measure_host_membw(c), c);
}

TEST(HostMembw, UnpinnedThreadsGiveTheSameArrays) {
  HostMembwConfig c = small_config(4096, 2);
  c.pin_threads = false;
  expect_valid(measure_host_membw(c), c);
}

TEST(HostMembw, CountsStreamBytes) {
  const HostMembwResult r = measure_host_membw(small_config(1000, 2));
  EXPECT_EQ(r.copy_bytes_per_pass, 16000u);   // 8 read + 8 written per element
  EXPECT_EQ(r.triad_bytes_per_pass, 24000u);  // 16 read + 8 written per element
}

TEST(HostCopyLoad, RunsUntilStoppedAndChecksItsCopies) {
  HostCopyLoad load(1 << 20, 2, /*first_cpu=*/0);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  const HostCopyLoad::Summary s = load.stop();
  EXPECT_TRUE(s.valid) << s.error;
  EXPECT_GT(s.bytes, 0u);
  EXPECT_GT(s.gbps, 0.0);
}

TEST(HostCopyLoad, StopIsIdempotent) {
  HostCopyLoad load(1 << 16, 1);
  const HostCopyLoad::Summary first = load.stop();
  const HostCopyLoad::Summary second = load.stop();
  EXPECT_EQ(first.bytes, second.bytes);
  EXPECT_TRUE(second.valid);
}

TEST(HostCopyLoad, ZeroThreadsIsANoOp) {
  HostCopyLoad load(1 << 16, 0);
  EXPECT_EQ(load.stop().bytes, 0u);
}

TEST(AllowedCpus, ListsAtLeastTheCpuWeRunOn) {
  const std::vector<int> cpus = allowed_cpus();
  ASSERT_FALSE(cpus.empty());
  for (std::size_t i = 1; i < cpus.size(); ++i) EXPECT_LT(cpus[i - 1], cpus[i]);
}

}  // namespace
}  // namespace gb::sys
