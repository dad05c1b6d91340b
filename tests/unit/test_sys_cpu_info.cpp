// test_sys_cpu_info.cpp: host-fact parsers over files captured from a real machine
// (tests/fixtures/proc, tests/fixtures/sys; see the README in each).
#include <gtest/gtest.h>

#include "fixture_file.hpp"

#include <fstream>
#include <sstream>
#include <string>

#include "sys/cpu_info.hpp"

namespace gb::sys {
namespace {

const std::string kFixtures = GPUBASE_FIXTURES_DIR;

TEST(ParseCpuinfo, ReadsModelAndTopologyOfTheCapturedVm) {
  const CpuTopology cpu = parse_cpuinfo(test::read_fixture("proc/cpuinfo"));
  EXPECT_EQ(cpu.model_name, "AMD EPYC");
  EXPECT_EQ(cpu.logical_cores, 2);
  EXPECT_EQ(cpu.physical_cores, 2);
  EXPECT_EQ(cpu.sockets, 1);
}

TEST(ParseCpuinfo, CountsSmtSiblingsAsOnePhysicalCore) {
  // The captured file twice over is what a 2-way SMT kernel lists: each (physical id, core id)
  // pair appears once per hardware thread.
  const std::string once = test::read_fixture("proc/cpuinfo");
  const CpuTopology cpu = parse_cpuinfo(once + "\n" + once);
  EXPECT_EQ(cpu.logical_cores, 4);
  EXPECT_EQ(cpu.physical_cores, 2);
  EXPECT_EQ(cpu.sockets, 1);
}

TEST(ParseCpuinfo, EmptyTextGivesNoFacts) {
  const CpuTopology cpu = parse_cpuinfo("");
  EXPECT_FALSE(cpu.model_name || cpu.logical_cores || cpu.physical_cores || cpu.sockets);
}

TEST(ParseMeminfo, MemTotalKilobytesAreKibibytes) {
  EXPECT_EQ(parse_meminfo_total_bytes(test::read_fixture("proc/meminfo")), 24683584ULL * 1024);
  EXPECT_FALSE(parse_meminfo_total_bytes("MemFree: 12 kB\n").has_value());
}

TEST(ParseOsRelease, PrettyNameLosesItsQuotes) {
  EXPECT_EQ(parse_os_release_pretty_name(test::read_fixture("proc/os-release")),
            "Debian GNU/Linux 12 (bookworm)");
  EXPECT_FALSE(parse_os_release_pretty_name("NAME=\"Debian\"\n").has_value());
}

TEST(CountNumaNodes, CountsNodeDirectoriesOnly) {
  // The captured tree also holds the non-node file "online".
  EXPECT_EQ(count_numa_nodes(kFixtures + "/sys/devices/system/node"), 1);
  EXPECT_FALSE(count_numa_nodes(kFixtures + "/sys/no/such/dir").has_value());
}

TEST(ReadHostInfo, ReadsEveryFactFromTheGivenPaths) {
  HostPaths paths;
  paths.cpuinfo = kFixtures + "/proc/cpuinfo";
  paths.meminfo = kFixtures + "/proc/meminfo";
  paths.os_release = kFixtures + "/proc/os-release";
  paths.numa_node_dir = kFixtures + "/sys/devices/system/node";
  const HostInfo host = read_host_info(paths);
  EXPECT_EQ(host.cpu.model_name, "AMD EPYC");
  EXPECT_EQ(host.cpu.logical_cores, 2);
  EXPECT_EQ(host.numa_nodes, 1);
  EXPECT_EQ(host.memory_total_bytes, 24683584ULL * 1024);
  EXPECT_EQ(host.os_pretty_name, "Debian GNU/Linux 12 (bookworm)");
  ASSERT_TRUE(host.kernel_release.has_value());
  EXPECT_FALSE(host.kernel_release->empty());
}

TEST(ReadHostInfo, MissingFilesLeaveFactsEmpty) {
  HostPaths paths;
  paths.cpuinfo = paths.meminfo = paths.os_release = paths.numa_node_dir = "/nonexistent";
  const HostInfo host = read_host_info(paths);
  EXPECT_FALSE(host.cpu.logical_cores || host.numa_nodes || host.memory_total_bytes ||
               host.os_pretty_name);
}

TEST(ReadPciLocality, ReadsNumaNodeAndLocalCpusFromSysfs) {
  const PciLocality locality = read_pci_locality("0000:00:03.0", kFixtures + "/sys");
  EXPECT_EQ(locality.numa_node, -1);  // the VM reports no NUMA affinity
  EXPECT_EQ(locality.cpu_list, "0-1");
}

TEST(ReadPciLocality, AcceptsNvmlsEightDigitDomain) {
  const PciLocality locality = read_pci_locality("00000000:00:03.0", kFixtures + "/sys");
  EXPECT_EQ(locality.cpu_list, "0-1");
}

TEST(ReadPciLocality, UnknownDeviceHasNoLocality) {
  const PciLocality locality = read_pci_locality("0000:3B:00.0", kFixtures + "/sys");
  EXPECT_FALSE(locality.numa_node || locality.cpu_list);
}

TEST(NormalizePciBusId, GivesCudasSpellingForEveryForm) {
  EXPECT_EQ(normalize_pci_bus_id("0000:3b:00.0"), "0000:3B:00.0");
  EXPECT_EQ(normalize_pci_bus_id("00000000:3B:00.0"), "0000:3B:00.0");
  EXPECT_EQ(normalize_pci_bus_id("3b:00.0"), "0000:3B:00.0");
  EXPECT_EQ(normalize_pci_bus_id("10000:01:00.1"), "10000:01:00.1");  // VMD domains are wider
  EXPECT_FALSE(normalize_pci_bus_id("0000:3B:00").has_value());
  EXPECT_FALSE(normalize_pci_bus_id("0000:3B:20.0").has_value());  // device numbers stop at 1F
  EXPECT_FALSE(normalize_pci_bus_id("GPU-3f0c9a51").has_value());
}

TEST(CpuList, ParsesRangesAndSingles) {
  EXPECT_EQ(parse_cpu_list("0-3,8,10-11\n"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(parse_cpu_list(""), std::vector<int>{});
  EXPECT_FALSE(parse_cpu_list("3-1").has_value());
  EXPECT_FALSE(parse_cpu_list("0-3,").has_value());
  EXPECT_FALSE(parse_cpu_list("x").has_value());
}

TEST(CpuList, FormatsCollapsedRanges) {
  EXPECT_EQ(format_cpu_list({11, 0, 1, 2, 3, 8, 10}), "0-3,8,10-11");
  EXPECT_EQ(format_cpu_list({5}), "5");
  EXPECT_EQ(format_cpu_list({}), "");
}

}  // namespace
}  // namespace gb::sys
