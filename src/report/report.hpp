// report/report.hpp: the printers. They format a gb::Run and nothing else: no measuring, no
// judging (diagnose did that). One entry point, render(), plus one function per format.
//
//   report::TerminalOptions opt{.color = isatty(1), .width = 100, .verbose = false};
//   std::fputs(report::render(run, report::Format::terminal, opt).c_str(), stdout);
#pragma once
#include <string>

#include "core/result.hpp"

namespace gb::report {

enum class Format { terminal, markdown, json };

struct TerminalOptions {
  bool color = false;   // ANSI colours; the caller decides (isatty, NO_COLOR, --no-color)
  int width = 100;      // columns to fit; tables shrink their text columns to it (min 60)
  bool verbose = false; // also evidence of passing rows, telemetry and reference sources
};

std::string render(const Run& run, Format format, const TerminalOptions& options = {});

// Sections: header, environment, results grouped by key section (probe figures against their
// references, watch figures as a list), the checklist, the diagnosis of a watched job (when
// run.findings has any), a summary.
std::string render_terminal(const Run& run, const TerminalOptions& options);
// The same content as GitHub-flavoured Markdown tables.
std::string render_markdown(const Run& run);
// core/json to_json, pretty printed with a 2-space indent and a final newline.
std::string render_json(const Run& run);

}  // namespace gb::report
