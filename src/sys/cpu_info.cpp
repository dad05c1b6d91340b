// sys/cpu_info.cpp: host facts from /proc, /sys, /etc/os-release and uname; see cpu_info.hpp.
#include "sys/text_parse.hpp"
#include "sys/cpu_info.hpp"

#include <sys/utsname.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <utility>

namespace gb::sys {

namespace {

using namespace text;  // is_space, trim, for_each_line, split_fields, parse_number

}  // namespace

CpuTopology parse_cpuinfo(std::string_view cpuinfo_text) {
  // One record per "processor" stanza; "physical id"/"core id" are absent on most ARM kernels
  // and in some VMs, in which case physical cores and sockets stay unknown.
  struct Processor {
    std::optional<int> physical_id;
    std::optional<int> core_id;
  };
  std::vector<Processor> processors;
  CpuTopology topology;

  for_each_line(cpuinfo_text, [&](std::string_view line) {
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) return;
    const std::string_view key = trim(line.substr(0, colon));
    const std::string_view value = trim(line.substr(colon + 1));
    if (key == "processor") {
      processors.emplace_back();
    } else if (processors.empty()) {
      return;  // header lines before the first processor (s390, some ARM kernels)
    } else if (key == "model name" && !topology.model_name && !value.empty()) {
      topology.model_name = std::string(value);
    } else if (key == "physical id") {
      processors.back().physical_id = parse_number<int>(value);
    } else if (key == "core id") {
      processors.back().core_id = parse_number<int>(value);
    }
  });

  if (processors.empty()) return topology;
  topology.logical_cores = static_cast<int>(processors.size());

  std::set<std::pair<int, int>> cores;
  std::set<int> packages;
  for (const Processor& p : processors) {
    if (!p.physical_id || !p.core_id) return topology;
    cores.emplace(*p.physical_id, *p.core_id);
    packages.insert(*p.physical_id);
  }
  topology.physical_cores = static_cast<int>(cores.size());
  topology.sockets = static_cast<int>(packages.size());
  return topology;
}

std::optional<std::uint64_t> parse_meminfo_total_bytes(std::string_view meminfo_text) {
  std::optional<std::uint64_t> total_bytes;
  for_each_line(meminfo_text, [&](std::string_view line) {
    constexpr std::string_view key = "MemTotal:";
    if (total_bytes || line.substr(0, key.size()) != key) return;
    std::string_view value = trim(line.substr(key.size()));
    constexpr std::string_view unit = "kB";  // the kernel's "kB" is KiB
    if (value.size() < unit.size() || value.substr(value.size() - unit.size()) != unit) return;
    value.remove_suffix(unit.size());
    if (const auto kib = parse_number<std::uint64_t>(value)) total_bytes = *kib * 1024;
  });
  return total_bytes;
}

std::optional<std::string> parse_os_release_pretty_name(std::string_view os_release_text) {
  std::optional<std::string> pretty_name;
  for_each_line(os_release_text, [&](std::string_view line) {
    constexpr std::string_view key = "PRETTY_NAME=";
    line = trim(line);
    if (pretty_name || line.substr(0, key.size()) != key) return;
    std::string_view value = line.substr(key.size());
    // os-release(5): shell-style assignment; values may be in single or double quotes, and
    // inside double quotes \" \\ \$ \` are escapes.
    std::string name;
    if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') &&
        value.back() == value.front()) {
      const char quote = value.front();
      value = value.substr(1, value.size() - 2);
      for (std::size_t i = 0; i < value.size(); ++i) {
        if (quote == '"' && value[i] == '\\' && i + 1 < value.size()) ++i;
        name.push_back(value[i]);
      }
    } else {
      name = std::string(value);
    }
    if (!name.empty()) pretty_name = std::move(name);
  });
  return pretty_name;
}

std::optional<int> count_numa_nodes(const std::string& numa_node_dir) {
  std::error_code ec;
  std::filesystem::directory_iterator it(numa_node_dir, ec);
  if (ec) return std::nullopt;
  int nodes = 0;
  for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
    if (ec) return std::nullopt;
    const std::string name = it->path().filename().string();
    if (name.size() > 4 && name.compare(0, 4, "node") == 0 &&
        parse_number<unsigned>(std::string_view(name).substr(4))) {
      ++nodes;
    }
  }
  return nodes;
}

std::optional<std::string> kernel_release() {
  utsname uts{};
  if (uname(&uts) != 0) return std::nullopt;
  return std::string(uts.release);
}

HostInfo read_host_info(const HostPaths& paths) {
  HostInfo host;
  if (const auto text = read_text_file(paths.cpuinfo)) host.cpu = parse_cpuinfo(*text);
  if (const auto text = read_text_file(paths.meminfo)) {
    host.memory_total_bytes = parse_meminfo_total_bytes(*text);
  }
  if (const auto text = read_text_file(paths.os_release)) {
    host.os_pretty_name = parse_os_release_pretty_name(*text);
  }
  host.numa_nodes = count_numa_nodes(paths.numa_node_dir);
  host.kernel_release = kernel_release();
  return host;
}

std::optional<std::string> normalize_pci_bus_id(std::string_view pci_bus_id) {
  // [domain:]bus:device.function, all hex.
  std::string_view s = trim(pci_bus_id);
  std::vector<std::string_view> fields;
  for (std::size_t colon; (colon = s.find(':')) != std::string_view::npos;) {
    fields.push_back(s.substr(0, colon));
    s.remove_prefix(colon + 1);
  }
  const std::size_t dot = s.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  fields.push_back(s.substr(0, dot));
  fields.push_back(s.substr(dot + 1));
  if (fields.size() == 3) fields.insert(fields.begin(), "0");
  if (fields.size() != 4) return std::nullopt;

  const auto domain = parse_number<unsigned>(fields[0], 16);
  const auto bus = parse_number<unsigned>(fields[1], 16);
  const auto device = parse_number<unsigned>(fields[2], 16);
  const auto function = parse_number<unsigned>(fields[3], 16);
  if (!domain || !bus || !device || !function || *bus > 0xFF || *device > 0x1F || *function > 0x7) {
    return std::nullopt;
  }
  char text[32];
  std::snprintf(text, sizeof(text), "%04X:%02X:%02X.%X", *domain, *bus, *device, *function);
  return std::string(text);
}

PciLocality read_pci_locality(std::string_view pci_bus_id, const std::string& sysfs_root) {
  PciLocality locality;
  std::optional<std::string> id = normalize_pci_bus_id(pci_bus_id);
  if (!id) return locality;
  std::transform(id->begin(), id->end(), id->begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const std::string dir = sysfs_root + "/bus/pci/devices/" + *id + "/";
  if (const auto text = read_text_file(dir + "numa_node")) {
    locality.numa_node = parse_number<int>(*text);
  }
  if (const auto text = read_text_file(dir + "local_cpulist")) {
    if (parse_cpu_list(*text)) locality.cpu_list = std::string(trim(*text));
  }
  return locality;
}

std::optional<std::vector<int>> parse_cpu_list(std::string_view cpu_list) {
  std::vector<int> cpus;
  std::string_view s = trim(cpu_list);
  if (s.empty()) return cpus;  // a device local to no CPU
  for (bool more = true; more;) {
    const std::size_t comma = s.find(',');
    const std::string_view item = s.substr(0, comma);
    more = comma != std::string_view::npos;
    if (more) s.remove_prefix(comma + 1);
    const std::size_t dash = item.find('-');
    const auto first = parse_number<int>(item.substr(0, dash));
    const auto last =
        dash == std::string_view::npos ? first : parse_number<int>(item.substr(dash + 1));
    // Linux caps CPU numbers at NR_CPUS (at most 8192 today); a larger one is corrupt input.
    constexpr int kMaxCpus = 1 << 16;
    if (!first || !last || *first < 0 || *last < *first || *last >= kMaxCpus) return std::nullopt;
    for (int cpu = *first; cpu <= *last; ++cpu) cpus.push_back(cpu);
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

std::string format_cpu_list(std::vector<int> cpus) {
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  std::string text;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!text.empty()) text += ',';
    text += std::to_string(cpus[i]);
    if (j > i) text += '-' + std::to_string(cpus[j]);
    i = j + 1;
  }
  return text;
}

namespace {
std::string text_or_na(const std::optional<std::string>& v) { return v ? *v : "N/A"; }
Fact count_fact(std::string key, std::string label, const std::optional<int>& v) {
  if (!v) return Fact::text(std::move(key), std::move(label), "N/A");
  return Fact::numeric(std::move(key), std::move(label), *v, "", 0);
}
}  // namespace

std::vector<Fact> host_facts(const HostInfo& host) {
  std::vector<Fact> facts;
  facts.push_back({"host.cpu_model", "CPU", text_or_na(host.cpu.model_name)});
  facts.push_back(count_fact("host.logical_cores", "logical cores", host.cpu.logical_cores));
  facts.push_back(count_fact("host.physical_cores", "physical cores", host.cpu.physical_cores));
  facts.push_back(count_fact("host.sockets", "sockets", host.cpu.sockets));
  facts.push_back(count_fact("host.numa_nodes", "NUMA nodes", host.numa_nodes));
  if (host.memory_total_bytes)
    facts.push_back(Fact::numeric("host.memory", "host memory",
                                  static_cast<double>(*host.memory_total_bytes) / (1024.0 * 1024 * 1024),
                                  "GiB", 0));
  else
    facts.push_back(Fact::text("host.memory", "host memory", "N/A"));
  facts.push_back({"host.kernel", "kernel", text_or_na(host.kernel_release)});
  facts.push_back({"host.os", "OS", text_or_na(host.os_pretty_name)});
  return facts;
}

}  // namespace gb::sys
