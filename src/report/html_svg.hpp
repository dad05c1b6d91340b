// report/html_svg.hpp: the SVG charts of the HTML printer, each a function of plain data (no
// result model): horizontal bars with reference ticks and whiskers, a line chart over a swept
// parameter, a time-series panel and a heat strip. Every chart is one <svg class="chart"> scaled
// to its box (viewBox kChartWidth wide); its drawn data points carry class "mark" and its texts
// class "label", so a browser test can count them.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "core/series.hpp"

namespace gb::report::html {

inline constexpr double kChartWidth = 960;

// Text made safe for HTML element content and attribute values.
std::string escape(std::string_view text);

// A reference drawn as a tick across a bar: datasheet, achievable, a peer's figure.
struct Tick {
  std::string kind;   // "datasheet": picks the colour and the legend entry
  std::string label;  // legend text: "datasheet", "PyTorch eager (quoted)"
  double value = 0;
};

struct Bar {
  std::string label;
  std::optional<double> value;  // empty: drawn as "skipped" text, no mark
  std::string value_text;       // "791 TFLOP/s"
  Status status = Status::info;
  std::vector<Tick> ticks;
  std::optional<double> low, high;  // whisker (noise band, min-max)
  std::string tip;                  // hover text
};

// Horizontal bars on one axis (unit shown in the caption), zero included; negative values
// extend left of zero. Legend for the tick kinds and the whisker meaning (whisker_note).
std::string bar_chart(const std::string& id, const std::string& unit,
                      const std::vector<Bar>& bars, const std::string& whisker_note = "");

struct Point {
  double x = 0;
  double y = 0;
  std::string tip;
};

struct SweepChart {
  std::string id;
  std::string x_name;  // "workers"
  std::string y_name;  // "images/s"
  std::vector<Point> points;
  bool log_x = true;  // a log axis when the x values span a factor of 4 or more (1, 2, 4, 8 workers)
  std::string y2_name;  // second line on the right axis ("per busy core, images/s"); may be empty
  std::vector<Point> points2;
  std::optional<double> marker_x;  // a vertical mark (the knee)
  std::string marker_label;
  std::optional<double> shade_from_x;  // shaded from here to the last point
  std::string shade_label;
};
std::string sweep_chart(const SweepChart& c);

// A small line over an index (a history by epoch).
std::string history_chart(const std::string& id, const std::string& title,
                          const std::vector<double>& values);

// Time-series panels share one time axis (t_s, seconds). Each line is drawn from at most
// `buckets` buckets, each bucket keeping its minimum and maximum (a one-second spike in a
// 24-hour series stays visible), so the drawing stays small whatever the series' length.
inline constexpr std::size_t kTimeBuckets = 800;

// A finding placed on the time axis: where its evidence held (diagnose/timeline).
struct FindingMarks {
  std::string id;     // "input_bound_cpu"
  std::string title;  // "input-bound on CPU"
  Status status = Status::info;
  std::string tip;    // hover text: the condition, the time it held, the evidence
  std::vector<FindingSpan> spans;
};

// `findings`: each one's spans shaded faintly behind the lines (class "finding-band").
std::string time_panel(const SeriesPanel& panel, const std::vector<double>& t_s,
                       std::size_t buckets = kTimeBuckets,
                       const std::vector<FindingMarks>& findings = {});
// One row per finding on the panels' time axis: its id and title, and a marker (class "mark
// finding", hover title) over each span it held.
std::string finding_strip(const std::vector<FindingMarks>& findings, const std::vector<double>& t_s);
// One row per subject, each cell the bucket's maximum, 0..100 from white to dark.
std::string heat_strip(const HeatStrip& strip, const std::vector<double>& t_s,
                       std::size_t buckets = kTimeBuckets / 2);

// "90 s", "12 min", "3.5 h": a time axis label.
std::string duration_text(double seconds);

}  // namespace gb::report::html
