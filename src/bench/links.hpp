// bench/links.hpp: what connects two GPUs of a node, and the theoretical per-direction rate of
// that path, from NVML: NVLink (nvmlDeviceGetNvLinkState / Version / RemotePciInfo and
// nvmlDeviceGetP2PStatus) or PCIe (nvmlDeviceGetTopologyCommonAncestor, each GPU's maximum link
// generation and width). CUDA-free: describe_peer_link is a pure function of the facts, tested
// without a GPU.
//
// NVLink rate: the links from one GPU that end at the other, times the per-link rate of their
// version (core/gpu_specs nvlink_gbps_per_link); when none ends at the other but NVML says P2P
// over NVLink works, the GPUs meet through NVSwitches and every active link counts (H100/H200
// SXM: 18 x 25 = 450 GB/s per direction). PCIe rate: the slower of the two GPUs' maximum links
// (pcie_link_gbps), through whatever they share (a PCIe switch, the host bridge, the SMP
// interconnect).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "sys/nvml.hpp"

namespace gb::bench {

struct PeerLinkFacts {
  bool same_device = false;
  int cc_major = 0;
  std::string peer_pci_bus_id;           // the other GPU's, CUDA's spelling
  std::vector<sys::NvLinkInfo> nvlinks;  // of this GPU
  std::optional<bool> nvlink_p2p;        // NVML: P2P over NVLink works between them
  std::optional<int> common_ancestor;    // nvmlGpuTopologyLevel_t
  std::optional<int> pcie_gen, pcie_width;            // this GPU's maximum link
  std::optional<int> peer_pcie_gen, peer_pcie_width;  // the other's
};

struct PeerLink {
  std::string kind;  // "device-local", "NVLink", "PCIe", "unknown"
  std::string name;  // "NVLink 4 x18 (through NVSwitch)", "PCIe Gen5 x16 through the host bridge"
  std::optional<double> gbps;  // theoretical per direction; empty when not known
};

PeerLink describe_peer_link(const PeerLinkFacts& f);

// The facts through NVML for two devices (a == b: the same GPU).
PeerLinkFacts read_peer_link_facts(const sys::NvmlDevice& a, const sys::NvmlDevice& b,
                                   bool same_device, int cc_major);

}  // namespace gb::bench
