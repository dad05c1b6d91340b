// core/series.hpp: time series a report can draw, in a form that knows no suite: panels of
// lines over one time axis (GPU busy %, SM active %, a disk's util, ...) and heat strips (one row
// per CPU core). The suite that recorded the series (watch: watch/series_chart.hpp) says which
// columns go into which panel; a printer (report/html) only draws them. Missing samples are NaN,
// never 0.
#pragma once
#include <string>
#include <vector>

namespace gb {

struct SeriesLine {
  std::string id;     // "gpu_util_pct": the column it came from
  std::string label;  // "GPU busy"
  std::vector<double> values;  // one per time point; NaN where not measured
};

struct SeriesPanel {
  std::string id;     // "gpu": stable, for tests and anchors
  std::string title;  // "GPU"
  std::string unit;   // "%": the y axis
  double y_max = 0;   // fixed top of the y axis (100 for a share); 0: the data's maximum
  std::vector<SeriesLine> lines;
};

// One row per subject (a CPU core), one cell per time point, values in 0..100.
struct HeatStrip {
  std::string id;
  std::string title;  // "CPU busy per core"
  std::string unit;   // "%"
  std::vector<std::string> rows;            // "cpu0", "cpu1", ...
  std::vector<std::vector<double>> values;  // [row][time point]; NaN where not measured
};

// When a finding's evidence held, on the series' time axis: the finding (Run::findings, by
// id), the condition checked at each point ("GPU busy < 95 %") and the spans it held, each
// from the start of its first interval to the end of its last.
struct FindingSpan {
  double from_s = 0;
  double to_s = 0;
};
struct FindingTimeline {
  std::string finding_id;
  std::string condition;
  std::vector<FindingSpan> spans;
  double held_s = 0;  // the time it held, summed over the points (before spans were merged)
};

struct RunSeries {
  std::string source;       // the file it was read from, for the caption
  std::vector<double> t_s;  // seconds since monitoring started, one per point
  std::vector<SeriesPanel> panels;
  std::vector<HeatStrip> strips;
  std::vector<FindingTimeline> findings;  // diagnose/timeline: drawn as markers on the axis
  bool empty() const { return t_s.empty(); }
};

}  // namespace gb
