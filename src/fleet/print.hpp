// fleet/print.hpp: the merged fleet report as text for a terminal, as JSON (schema
// "gpubase.fleet", docs/fleet.md) and as one self-contained HTML page with a strip chart per
// judged key (every GPU's figure relative to its group's median; flagged GPUs marked). Printers
// only format the MergeReport; the verdicts are merge's.
#pragma once
#include <string>

#include "core/json.hpp"
#include "fleet/merge.hpp"

namespace gb::fleet {

struct PrintOptions {
  std::size_t limit = 50;  // flagged GPUs listed in the terminal report; 0: all
  bool color = false;
};

std::string render_terminal(const MergeReport& report, const PrintOptions& options);
Json to_json(const MergeReport& report);
std::string render_html(const MergeReport& report);

}  // namespace gb::fleet
