// report/markdown.cpp: the Markdown printer: the terminal report's content as GitHub tables,
// for issues, pull requests and wikis. Every benchmark row carries its evidence, advice and the
// telemetry it ran under (N/A where NVML did not report a field); watch figures carry what they
// belong to; a watched job's findings close the report as a "Diagnosis" table.
#include <fmt/format.h>

#include <algorithm>
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
  // The baseline checklist; `gpubase baseline` prints it first (the answer before the details).
  auto checklist = [&] {
    if (!run.checklist.empty()) {
      line();
      line("## Baseline checklist");
      line();
      line("| check | target | measured | verdict | evidence | advice |");
      line("|---|---|---|---|---|---|");
      for (const ChecklistRow& c : run.checklist) {
        const bool advice_repeats =
            !c.advice.empty() && std::any_of(run.checklist.data(), &c, [&](const ChecklistRow& o) {
              return o.advice == c.advice;
            });
        line(fmt::format("| {} | {} | {} | {} | {} | {} |", cell(c.check), cell(c.target),
                         cell(c.measured.value_or("-")), status_word(c.status), cell(c.evidence),
                         cell(advice_repeats ? "as above" : c.advice)));
      }
    }
  };
  const bool checklist_first = run.command == "baseline";
  if (checklist_first) checklist();

  if (!run.environment.empty()) {
    line();
    line("## Environment");
    line();
    line("| fact | value |");
    line("|---|---|");
    for (const Fact& f : run.environment)
      line(fmt::format("| {} | {} |", cell(f.label), cell(fact_text(f))));
  }

  for (const Section& s : group_sections(run)) {
    line();
    line("## " + s.title);
    line();
    if (s.layout == Layout::monitor) {
      // Watch figures: no references to compare with; notes say what a figure belongs to and
      // why it is missing (once for consecutive figures skipped for the same reason).
      line("| figure | value | notes |");
      line("|---|---:|---|");
      const Result* previous = nullptr;
      for (const Result* r : s.results) {
        std::string n = subject_text(*r);
        if (r->telemetry) n += (n.empty() ? "" : "<br>") + telemetry_text(r->telemetry);
        if (r->status != Status::info) {
          const bool repeat = previous && previous->status == r->status &&
                              previous->reason == r->reason && !r->reason.empty();
          const std::string why = repeat ? std::string(to_string(r->status)) + " (as above)"
                                         : notes(*r);
          n = n.empty() ? why : n + "<br>" + why;
        }
        line(fmt::format("| {} | {} | {} |", cell(r->label.empty() ? r->key : r->label),
                         cell(value_text(*r)), cell(n)));
        previous = r;
      }
      continue;
    }
    if (s.layout == Layout::configurations) {
      // One row per configuration; the notes carry the loss, parameters, input layout and
      // the reason for a skipped or failed configuration.
      line("| model | precision | batch | graph | images/s | step ms (median, min-max) | ± CV | "
           "memory | vs PyTorch | status | notes | telemetry |");
      line("|---|---|---:|---|---:|---:|---:|---:|---:|---|---|---|");
      const std::vector<TrainingRow> rows = training_rows(s);
      for (const TrainingRow& row : rows) {
        const Result& main = *row.main;
        const bool ran = main.status != Status::skipped;
        std::string n = notes(main);
        if (const std::string t = training_notes(row); !t.empty())
          n += (n.empty() ? "" : "<br>") + t;
        if (const std::string t = data_wait_text(row); !t.empty())
          n += (n.empty() ? "" : "<br>") + t;
        line(fmt::format(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |", cell(row.model),
            row.precision, row.batch, row.graph ? "yes" : "no",
            row.images && row.images->value ? format_number(*row.images->value) : "-",
            step_text(row, true), row.step ? cv_text(*row.step) : "",
            row.memory && row.memory->value ? format_number(*row.memory->value) + " GiB" : "",
            torch_ratio_text(row), status_word(main.status), cell(n),
            ran ? cell(telemetry_text(main.telemetry)) : ""));
      }
      if (const std::string note = torch_column_note(rows); !note.empty()) {
        line();
        line("_" + note + "_");
      }
      continue;
    }
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

  if (!checklist_first) checklist();

  if (!run.findings.empty()) {
    line();
    line("## Diagnosis");
    line();
    line("| verdict | finding | evidence | advice |");
    line("|---|---|---|---|");
    for (const Finding& f : run.findings)
      line(fmt::format("| {} | **{}** | {} | {} |", status_word(f.status), cell(f.title),
                       cell(f.evidence), cell(f.advice)));
  }

  line();
  if (has_verdict(run))
    line(fmt::format("**Overall: {}** ({})", status_word(run.worst_status()), status_counts(run)));
  else
    line(fmt::format("**Overall: nothing judged** ({})", status_counts(run)));
  return out;
}

}  // namespace gb::report
