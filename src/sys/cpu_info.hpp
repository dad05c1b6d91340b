// sys/cpu_info.hpp: facts about the host a run happened on (CPU model, logical and physical
// cores, sockets, NUMA nodes, memory, kernel, OS) and the NUMA locality of a PCI device.
//
// Each source is read by a pure parser over the file's text so the CPU tests can feed captured
// files (tests/fixtures/proc, tests/fixtures/sys); read_host_info() takes the paths, so a test
// can point it at a fixture tree. A fact that cannot be read stays empty ("N/A").
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace gb::sys {

// What /proc/cpuinfo says about the processors.
struct CpuTopology {
  std::optional<std::string> model_name;  // "model name" of the first processor (x86)
  std::optional<int> logical_cores;       // "processor" entries: online logical CPUs
  std::optional<int> physical_cores;      // distinct ("physical id", "core id") pairs
  std::optional<int> sockets;             // distinct "physical id" values
};

struct HostInfo {
  CpuTopology cpu;
  std::optional<int> numa_nodes;
  std::optional<std::uint64_t> memory_total_bytes;
  std::optional<std::string> kernel_release;  // uname -r
  std::optional<std::string> os_pretty_name;  // PRETTY_NAME of os-release
};

// Where read_host_info() looks; the defaults are the live system.
struct HostPaths {
  std::string cpuinfo = "/proc/cpuinfo";
  std::string meminfo = "/proc/meminfo";
  std::string os_release = "/etc/os-release";
  std::string numa_node_dir = "/sys/devices/system/node";
};

// NUMA placement of a PCI device, from sysfs.
struct PciLocality {
  std::optional<int> numa_node;         // -1 when the platform reports no NUMA affinity
  std::optional<std::string> cpu_list;  // local_cpulist, e.g. "0-15,32-47"
};

CpuTopology parse_cpuinfo(std::string_view cpuinfo_text);
// MemTotal of /proc/meminfo (reported in kB, i.e. KiB) in bytes.
std::optional<std::uint64_t> parse_meminfo_total_bytes(std::string_view meminfo_text);
// PRETTY_NAME of an os-release file, quotes and escapes removed.
std::optional<std::string> parse_os_release_pretty_name(std::string_view os_release_text);
// Number of node<N> entries under numa_node_dir; empty when the directory cannot be read.
std::optional<int> count_numa_nodes(const std::string& numa_node_dir);
// Release of the running kernel (uname -r).
std::optional<std::string> kernel_release();

HostInfo read_host_info(const HostPaths& paths = {});
// The run's host facts (host.cpu_model, host.logical_cores, ... docs/results.md); "N/A" for
// what could not be read.
std::vector<Fact> host_facts(const HostInfo& host);

// A PCI bus id in CUDA's form, "0000:3B:00.0" (4-digit domain, uppercase hex), from any
// spelling NVML, CUDA or sysfs use ("00000000:3b:00.0", "3b:00.0"); empty if it is not one.
std::optional<std::string> normalize_pci_bus_id(std::string_view pci_bus_id);

// Reads <sysfs_root>/bus/pci/devices/<bus id>/{numa_node,local_cpulist}; pci_bus_id in any
// spelling normalize_pci_bus_id accepts (sysfs names are lowercase).
PciLocality read_pci_locality(std::string_view pci_bus_id, const std::string& sysfs_root = "/sys");

// Linux CPU-list syntax ("0-3,8,10-11"): parse into sorted CPU numbers and format back.
// parse_cpu_list returns empty on malformed text.
std::optional<std::vector<int>> parse_cpu_list(std::string_view cpu_list);
std::string format_cpu_list(std::vector<int> cpus);

}  // namespace gb::sys
