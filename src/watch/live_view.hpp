// watch/live_view.hpp: what `gpubase watch` shows while the job runs, as text: one compact
// line per interval (for a pipe or a log file) or a small panel (for a terminal, redrawn in
// place by the caller). Pure formatting of a WatchSample; missing figures print as "-".
#pragma once
#include <string>
#include <vector>

#include "watch/sample.hpp"

namespace gb::watch {

// "  12.0s gpu  41% sm  35% tc   3% mem 12%  612W | cpu avg  9% max 99% iow 0% | job 1.0c 3p
//  top pt_data_worker 99% | disk vda 2%"
std::string format_line(const WatchSample& s);

struct PanelContext {
  std::string title;  // "pid 4242: python train.py"
  int width = 100;    // columns available
  double elapsed_s = 0;
};

// Four lines: header, GPU, CPU (with one bar glyph per core), job + disk + memory.
std::vector<std::string> format_panel(const WatchSample& s, const PanelContext& ctx);

// One glyph per core from its busy share: ' ' idle ... '█' saturated (UTF-8 block elements).
std::string core_bars(const std::vector<std::pair<int, double>>& core_busy_pct,
                      std::size_t max_cores);

}  // namespace gb::watch
