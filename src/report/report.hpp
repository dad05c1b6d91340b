// report/report.hpp: the printers. They format a gb::Run and nothing else: no measuring, no
// judging (diagnose did that). One entry point, render(), plus one function per format.
//
//   report::TerminalOptions opt{.color = isatty(1), .width = 100, .verbose = false};
//   std::fputs(report::render(run, report::Format::terminal, opt).c_str(), stdout);
#pragma once
#include <string>

#include "core/result.hpp"
#include "core/series.hpp"

namespace gb::report {

enum class Format { terminal, markdown, json, csv, html };

struct TerminalOptions {
  bool color = false;   // ANSI colours; the caller decides (isatty, NO_COLOR, --no-color)
  int width = 100;      // columns to fit; tables shrink their text columns to it (min 60)
  bool verbose = false; // also evidence of passing rows, telemetry and reference sources
};

struct HtmlOptions {
  const RunSeries* series = nullptr;  // time series to draw (a watch run's), when read
  std::string series_note;            // why there are none ("not recorded: --no-series")
};

// html: without series (render_html draws them when given).
std::string render(const Run& run, Format format, const TerminalOptions& options = {});

// Sections: header, environment, results grouped by key section (probe figures against their
// references, watch figures as a list), the checklist, the diagnosis of a watched job (when
// run.findings has any), a summary.
std::string render_terminal(const Run& run, const TerminalOptions& options);
// The same content as GitHub-flavoured Markdown tables.
std::string render_markdown(const Run& run);
// core/json to_json, pretty printed with a 2-space indent and a final newline.
std::string render_json(const Run& run);
// One row per result: key, label, value, unit, status, median, min, max, cv, n, reason
// (RFC 4180; numbers in full, empty when missing).
std::string render_csv(const Run& run);
// One self-contained HTML page (inline CSS and SVG, a few lines of inline script for hover, no
// network): the checklist first, the diagnosis, then each section with its charts (figures as
// bars against their references, sweeps over a parameter as lines, variants with their noise,
// time series downsampled keeping each bucket's extremes) above its table, the environment last.
std::string render_html(const Run& run, const HtmlOptions& options = {});

}  // namespace gb::report
