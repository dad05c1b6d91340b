// bench/links.cpp: see links.hpp.
#include "bench/links.hpp"

#include <algorithm>
#include <cctype>

#include "core/gpu_specs.hpp"

namespace gb::bench {

namespace {

bool same_bus_id(const std::string& a, const std::string& b) {
  if (a.empty() || a.size() != b.size()) return false;
  return std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
    return std::toupper(static_cast<unsigned char>(x)) == std::toupper(static_cast<unsigned char>(y));
  });
}

}  // namespace

PeerLink describe_peer_link(const PeerLinkFacts& f) {
  PeerLink l;
  if (f.same_device) {
    l.kind = "device-local";
    l.name = "device-local copy (no link)";
    return l;
  }
  std::vector<const sys::NvLinkInfo*> active, to_peer;
  for (const sys::NvLinkInfo& link : f.nvlinks) {
    if (!link.active) continue;
    active.push_back(&link);
    if (same_bus_id(link.remote_pci_bus_id, f.peer_pci_bus_id)) to_peer.push_back(&link);
  }
  const bool through_switch = to_peer.empty() && f.nvlink_p2p.value_or(false) && !active.empty();
  if (!to_peer.empty() || through_switch) {
    const auto& used = to_peer.empty() ? active : to_peer;
    const int version = used.front()->version.value_or(0);
    l.kind = "NVLink";
    l.name = nvlink_version_name(version, f.cc_major) + " x" + std::to_string(used.size()) +
             (through_switch ? " (through NVSwitch)" : " (direct)");
    if (const auto per_link = nvlink_gbps_per_link(version, f.cc_major))
      l.gbps = *per_link * static_cast<double>(used.size());
    return l;
  }
  std::optional<int> gen, width;
  if (f.pcie_gen && f.peer_pcie_gen) gen = std::min(*f.pcie_gen, *f.peer_pcie_gen);
  if (f.pcie_width && f.peer_pcie_width) width = std::min(*f.pcie_width, *f.peer_pcie_width);
  if (!f.common_ancestor && !gen) {
    l.kind = "unknown";
    l.name = "unknown (NVML does not say)";
    return l;
  }
  l.kind = "PCIe";
  l.name = "PCIe";
  if (gen && width) {
    l.name += " Gen" + std::to_string(*gen) + " x" + std::to_string(*width);
    l.gbps = pcie_link_gbps(*gen, *width);
  }
  if (f.common_ancestor) l.name += " through " + sys::topology_level_name(*f.common_ancestor);
  return l;
}

PeerLinkFacts read_peer_link_facts(const sys::NvmlDevice& a, const sys::NvmlDevice& b,
                                   bool same_device, int cc_major) {
  PeerLinkFacts f;
  f.same_device = same_device;
  f.cc_major = cc_major;
  if (same_device) return f;
  const sys::NvmlDeviceInfo ia = a.info(), ib = b.info();
  f.peer_pci_bus_id = ib.pci_bus_id.value_or("");
  f.nvlinks = a.nvlinks();
  f.nvlink_p2p = a.nvlink_p2p_with(b);
  f.common_ancestor = a.common_ancestor(b);
  f.pcie_gen = ia.pcie.gen_max_gpu ? ia.pcie.gen_max_gpu : ia.pcie.gen_max_slot;
  f.pcie_width = ia.pcie.width_max;
  f.peer_pcie_gen = ib.pcie.gen_max_gpu ? ib.pcie.gen_max_gpu : ib.pcie.gen_max_slot;
  f.peer_pcie_width = ib.pcie.width_max;
  return f;
}

}  // namespace gb::bench
