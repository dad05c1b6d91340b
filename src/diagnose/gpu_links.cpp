// diagnose/gpu_links.cpp: the verdicts of the GPU-to-GPU figures (see rules.hpp,
// judge_gpu_link): P2P copies and NCCL bus bandwidth against the link's theoretical rate.
#include <algorithm>

#include "diagnose/rules.hpp"
#include "diagnose/text.hpp"
#include "diagnose/thresholds.hpp"

namespace gb::diagnose {

namespace {

// probe.nccl.<c>.busbw_gbps (no size part).
bool nccl_headline(const std::string& key) {
  return key.starts_with("probe.nccl.") && key.ends_with(".busbw_gbps") &&
         std::count(key.begin(), key.end(), '.') == 3;
}

}  // namespace

bool judge_gpu_link(Result& r) {
  const bool nccl = r.key.starts_with("probe.nccl.");
  const bool p2p = r.key.starts_with("probe.p2p.");
  if (!nccl && !p2p) return false;
  if (nccl && r.key.ends_with(".busbw_gbps") && r.number_param("ranks") == 1.0) {
    r.status = Status::skipped;
    r.reason = "one GPU, no link to judge: " + r.reason;
    return true;
  }
  const bool judged = (nccl && nccl_headline(r.key)) ||
                      (p2p && (r.key.ends_with(".unidir_gbps") || r.key.ends_with(".bidir_gbps")));
  const Reference* theory = r.find_reference("datasheet");
  if (!judged || !theory || theory->value <= 0 || !r.value) return true;  // stays info
  const double ratio = *r.value / theory->value;
  r.status = ratio >= kPassAtLinkTheory   ? Status::pass
             : ratio >= kWarnAtLinkTheory ? Status::warn
                                          : Status::fail;
  r.reason = format_number(*r.value) + " " + r.unit + " = " + format_percent(ratio) + " of " +
             theory->source + " " + format_number(theory->value) + " " + r.unit + " (pass at " +
             format_percent(kPassAtLinkTheory) + ")";
  if (r.status != Status::pass)
    r.advice = "a GPU-to-GPU link below its rate: check `nvidia-smi topo -m` and `nvidia-smi "
               "nvlink -s` (links down or at a lower speed), NVLink and PCIe error counters, "
               "and PCIe ACS / IOMMU settings that route P2P through the root complex";
  return true;
}

}  // namespace gb::diagnose
