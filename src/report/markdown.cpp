// report/markdown.cpp: the Markdown printer: the terminal report's content as GitHub tables,
// for issues, pull requests and wikis. Every result row carries its evidence, advice and the
// telemetry it ran under (N/A where NVML did not report a field).
#include <fmt/format.h>

#include <string>

#include "report/report.hpp"
#include "report/text.hpp"

namespace gb::report {

namespace {

using namespace detail;

// A table cell: pipes escaped, line breaks as <br>.
std::string cell(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n')
      out += "<br>";
    else
      out += c;
  }
  return out.empty() ? "" : out;
}

std::string notes(const Result& r) {
  std::string n;
  switch (r.status) {
    case Status::skipped:
    case Status::invalid:
      n = std::string(to_string(r.status)) + ": " + r.reason;
      break;
    case Status::warn:
    case Status::fail:
    case Status::pass:
    case Status::info:
      n = r.reason;
      break;
  }
  if (!r.advice.empty() && r.status != Status::pass)
    n += (n.empty() ? "" : "<br>") + std::string("**advice:** ") + r.advice;
  return n;
}

}  // namespace

std::string render_markdown(const Run& run) {
  std::string out;
  auto line = [&](std::string_view text = "") {
    out += text;
    out += '\n';
  };
  line("# gpubase " + (run.command.empty() ? std::string("run") : run.command));
  line();
  line(run_subtitle(run));

  if (!run.environment.empty()) {
    line();
    line("## Environment");
    line();
    line("| fact | value |");
    line("|---|---|");
    for (const Fact& f : run.environment)
      line(fmt::format("| {} | {} |", cell(f.label), cell(f.value.empty() ? "N/A" : f.value)));
  }

  for (const Section& s : group_sections(run)) {
    line();
    line("## " + s.title);
    line();
    line("| test | value | ± CV | datasheet | achievable | status | notes | telemetry |");
    line("|---|---:|---:|---:|---:|---|---|---|");
    for (const Result* r : s.results) {
      const bool ran = r->status != Status::skipped;
      line(fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} |",
                       cell(r->label.empty() ? r->key : r->label), cell(value_text(*r)),
                       cv_text(*r), ratio_text(*r, "datasheet"), ratio_text(*r, "achievable"),
                       status_word(r->status), cell(notes(*r)),
                       ran ? cell(telemetry_text(r->telemetry)) : ""));
    }
  }

  if (!run.checklist.empty()) {
    line();
    line("## Baseline checklist");
    line();
    line("| check | target | measured | verdict | evidence | advice |");
    line("|---|---|---|---|---|---|");
    for (const ChecklistRow& c : run.checklist)
      line(fmt::format("| {} | {} | {} | {} | {} | {} |", cell(c.check), cell(c.target),
                       cell(c.measured.value_or("-")), status_word(c.status), cell(c.evidence),
                       cell(c.advice)));
  }

  line();
  if (has_verdict(run))
    line(fmt::format("**Overall: {}** ({})", status_word(run.worst_status()), status_counts(run)));
  else
    line(fmt::format("**Overall: nothing judged** ({})", status_counts(run)));
  return out;
}

}  // namespace gb::report
