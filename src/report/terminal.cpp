// report/terminal.cpp: the terminal printer. Fits `width` columns (100 by default): fixed
// columns for figures, the text columns (labels, evidence) shrink and wrap. Colour only when
// the caller asks for it. Layout:
//
//   gpubase probe
//   Environment      label  value
//   <section>        test | value | ± CV | datasheet | achievable | status
//                        skipped: reason / FAIL: evidence / advice: what to do
//   <watch section>  figure | value | what it belongs to (process, core, disk) or status
//                        skipped: reason (once for consecutive figures skipped alike; a
//                        long reason said before reads "<first clause> (as above)")
//   Training         model | prec | batch | images/s | step ms (min-max) | ± CV | memory |
//                    vs torch | status, one row per configuration (reasons once, as above)
//   Baseline checklist   check (target) | measured | verdict | evidence, -> advice
//                        (right after the header for `gpubase baseline`)
//   Diagnosis            verdict | title, evidence, -> advice      (when the run has findings)
//   Overall: FAIL (counts)
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "report/report.hpp"
#include "report/text.hpp"

namespace gb::report {

namespace {

using namespace detail;

class TerminalWriter {
 public:
  TerminalWriter(const Run& run, const TerminalOptions& options)
      : run_(run), opt_(options), width_(static_cast<std::size_t>(std::max(60, options.width))) {}

  std::string write() {
    header();
    // `gpubase baseline` answers first: the checklist fits one screen, the details follow.
    const bool checklist_first = run_.command == "baseline";
    if (checklist_first) checklist();
    environment();
    const std::vector<Section> sections = group_sections(run_);
    size_monitor_columns(sections);
    for (const Section& s : sections) section(s);
    if (!checklist_first) checklist();
    diagnosis();
    summary();
    return out_;
  }

 private:
  std::string paint(std::string_view text, std::string_view sgr) const {
    if (!opt_.color || sgr.empty()) return std::string(text);
    return fmt::format("\x1b[{}m{}\x1b[0m", sgr, text);
  }

  void line(std::string_view text = "") {
    while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
    out_ += text;
    out_ += '\n';
  }

  void heading(std::string_view title) {
    line();
    line(paint(title, "1"));
  }

  // Wrapped text under a row: "      <prefix><text>", continuation lines aligned after prefix.
  // The reason (for a figure that is not a plain pass/info) and the advice under a result row;
  // nothing but verbose notes when the next row repeats the same reason.
  void explain(const Result& r, bool same_as_next = false) {
    const bool judged = r.status == Status::skipped || r.status == Status::invalid ||
                        r.status == Status::warn || r.status == Status::fail;
    if (judged && !same_as_next) {
      const std::string reason = r.reason.empty() ? "no reason given"
                                 : r.status == Status::skipped ? reasons_.text(r.reason)
                                                               : r.reason;
      detail(std::string(to_string(r.status)) + ": ", reason, r.status);
    }
    if (!judged && opt_.verbose && !r.reason.empty()) detail("", r.reason);
    if (!r.advice.empty() && r.status != Status::pass && !same_as_next)
      detail("advice: ", r.advice);
  }

  void detail(std::string_view prefix, std::string_view text, Status tone = Status::info) {
    constexpr std::size_t kIndent = 6;
    const std::size_t avail = width_ - kIndent - display_width(prefix);
    const auto lines = wrap(text, avail);
    for (std::size_t i = 0; i < lines.size(); ++i) {
      const std::string lead = i == 0 ? paint(prefix, status_color(tone))
                                      : std::string(display_width(prefix), ' ');
      line(std::string(kIndent, ' ') + lead + lines[i]);
    }
  }

  void header() {
    const std::string title = "gpubase " + (run_.command.empty() ? "run" : run_.command);
    line(paint(title, "1"));
    line(run_subtitle(run_));
    line(std::string(width_, '='));
  }

  void environment() {
    if (run_.environment.empty()) return;
    heading("Environment");
    std::size_t label_w = 0;
    for (const Fact& f : run_.environment) label_w = std::max(label_w, display_width(f.label));
    label_w = std::min<std::size_t>(label_w, 30);
    const std::size_t value_w = width_ - 2 - label_w - 2;
    for (const Fact& f : run_.environment) {
      const auto labels = wrap(f.label, label_w);
      const auto values = wrap(fact_text(f), value_w);
      for (std::size_t i = 0; i < std::max(labels.size(), values.size()); ++i) {
        const std::string l = i < labels.size() ? labels[i] : "";
        const std::string v = i < values.size() ? values[i] : "";
        line(fmt::format("  {}  {}", pad_right(l, label_w), v));
      }
    }
  }

  // Result table columns: label (flexible), value, CV, % datasheet, % achievable, status.
  // Below 85 columns the figure columns get shorter headers so the label keeps some room.
  struct Columns {
    std::size_t value, cv, datasheet, achievable;
    const char* datasheet_header;
    const char* achievable_header;
  };
  static constexpr std::size_t kStatusW = 7;
  static constexpr Columns kWide{16, 7, 9, 10, "datasheet", "achievable"};
  static constexpr Columns kNarrow{13, 6, 5, 5, "% ds", "% ach"};

  static std::size_t fixed_width(const Columns& c) {
    return 2 + 2 + c.value + 2 + c.cv + 2 + c.datasheet + 2 + c.achievable + 2 + kStatusW;
  }
  const Columns& columns() const { return width_ >= fixed_width(kWide) + 24 ? kWide : kNarrow; }
  std::size_t label_width() const {
    const std::size_t fixed = fixed_width(columns());
    return width_ > fixed + 10 ? width_ - fixed : 10;
  }

  void section(const Section& s) {
    if (s.layout == Layout::monitor) {
      monitor_section(s);
      return;
    }
    if (s.layout == Layout::configurations) {
      training_section(s);
      return;
    }
    heading(s.title);
    const Columns& c = columns();
    const std::size_t lw = label_width();
    line(fmt::format("  {}  {}  {}  {}  {}  {}", pad_right("test", lw), pad_left("value", c.value),
                     pad_left("± CV", c.cv), pad_left(c.datasheet_header, c.datasheet),
                     pad_left(c.achievable_header, c.achievable), "status"));
    for (const Result* r : s.results) row(*r, lw);
  }

  void row(const Result& r, std::size_t lw) {
    const Columns& c = columns();
    const auto labels = wrap(r.label.empty() ? r.key : r.label, lw);
    const std::string status = paint(status_word(r.status), status_color(r.status));
    line(fmt::format("  {}  {}  {}  {}  {}  {}", pad_right(labels[0], lw),
                     pad_left(value_text(r), c.value), pad_left(cv_text(r), c.cv),
                     pad_left(ratio_text(r, "datasheet"), c.datasheet),
                     pad_left(ratio_text(r, "achievable"), c.achievable), status));
    for (std::size_t i = 1; i < labels.size(); ++i) line("  " + labels[i]);

    explain(r);
    if (opt_.verbose && r.status != Status::skipped) {
      detail("telemetry: ", telemetry_text(r.telemetry));
      for (const Reference& ref : r.references)
        detail(ref.kind + ": ", format_number(ref.value) + " " + r.unit + " - " + ref.source);
    }
  }

  // Monitor sections: label | value | subject (or status), no header: the figures speak for
  // themselves and a watch run has many sections. One label width for all of them, so the
  // values line up down the whole report.
  void size_monitor_columns(const std::vector<Section>& sections) {
    std::size_t label_w = 0, value_w = 6;
    for (const Section& s : sections) {
      if (s.layout != Layout::monitor) continue;
      for (const Result* r : s.results) {
        label_w = std::max(label_w, display_width(r->label.empty() ? r->key : r->label));
        value_w = std::max(value_w, display_width(value_text(*r)));
      }
    }
    const std::size_t note_min = width_ >= 90 ? 20 : 10;
    monitor_value_w_ = std::min<std::size_t>(value_w, 16);
    monitor_label_w_ = std::min(label_w, width_ - 2 - 2 - monitor_value_w_ - 2 - note_min);
  }

  void monitor_section(const Section& s) {
    heading(s.title);
    const std::size_t lw = monitor_label_w_;
    const std::size_t note_w = width_ - 2 - lw - 2 - monitor_value_w_ - 2;
    for (std::size_t i = 0; i < s.results.size(); ++i) {
      const Result& r = *s.results[i];
      const auto labels = wrap(r.label.empty() ? r.key : r.label, lw);
      const std::string subject = subject_text(r);
      const std::string status = r.status == Status::info ? "" : status_word(r.status);
      const auto notes =
          wrap(status.empty() || subject.empty() ? status + subject : status + ", " + subject,
               note_w);
      const std::size_t n = std::max(labels.size(), notes.size());
      for (std::size_t k = 0; k < n; ++k) {
        std::string text = k < notes.size() ? notes[k] : "";
        if (k == 0 && !status.empty())
          text = paint(status, status_color(r.status)) + text.substr(status.size());
        line(fmt::format("  {}  {}  {}", pad_right(k < labels.size() ? labels[k] : "", lw),
                         pad_left(k == 0 ? value_text(r) : "", monitor_value_w_), text));
      }
      // The reason once for a run of figures skipped (or judged) for the same reason.
      const Result* next = i + 1 < s.results.size() ? s.results[i + 1] : nullptr;
      const bool same_as_next = next && next->status == r.status && next->reason == r.reason;
      explain(r, same_as_next);
      if (opt_.verbose && r.telemetry) detail("telemetry: ", telemetry_text(r.telemetry));
    }
  }

  // Training: one row per configuration (model x precision x batch). Below ~100 columns the
  // step column shows the median alone and the CV column goes. "vs torch" is images/s against
  // PyTorch's figure for the same configuration on the same card model, when known.
  void training_section(const Section& s) {
    const std::vector<TrainingRow> rows = training_rows(s);
    const bool graph = std::any_of(rows.begin(), rows.end(), [](const auto& r) { return r.graph; });
    heading(graph ? s.title + ", CUDA graph" : s.title);
    std::size_t model_w = 5;
    for (const TrainingRow& r : rows) model_w = std::max(model_w, display_width(r.model));
    constexpr std::size_t kPrecW = 4, kBatchW = 5, kImagesW = 9, kCvW = 6, kMemW = 9, kTorchW = 8;
    const std::size_t wide = 2 + model_w + 2 + kPrecW + 2 + kBatchW + 2 + kImagesW + 2 + 18 + 2 +
                             kCvW + 2 + kMemW + 2 + kTorchW + 2 + kStatusW;
    const bool full = width_ >= wide;
    const std::size_t step_w = full ? 18 : 8;
    auto row_text = [&](std::string_view model, std::string_view prec, std::string_view batch,
                        std::string_view images, std::string_view step, std::string_view cv,
                        std::string_view memory, std::string_view torch) {
      std::string t = fmt::format("  {}  {}  {}  {}  {}", pad_right(model, model_w),
                                  pad_right(prec, kPrecW), pad_left(batch, kBatchW),
                                  pad_left(images, kImagesW), pad_right(step, step_w));
      if (full) t += "  " + pad_left(cv, kCvW);
      return t + fmt::format("  {}  {}  ", pad_left(memory, kMemW), pad_left(torch, kTorchW));
    };
    line(row_text("model", "prec", "batch", "images/s", full ? "step ms (min-max)" : "step ms",
                  "± CV", "memory", "vs torch") +
         "status");
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const TrainingRow& row = rows[i];
      const Result& main = *row.main;
      const std::string images =
          row.images && row.images->value ? format_number(*row.images->value) : "-";
      const std::string memory = row.memory && row.memory->value
                                     ? format_number(*row.memory->value) + " GiB"
                                     : "";
      line(row_text(row.model, row.precision, row.batch, images, step_text(row, full),
                    row.step ? cv_text(*row.step) : "", memory, torch_ratio_text(row)) +
           paint(status_word(main.status), status_color(main.status)));
      const Result* next = i + 1 < rows.size() ? rows[i + 1].main : nullptr;
      explain(main, next && next->status == main.status && next->reason == main.reason &&
                        main.status == Status::skipped);
      if (const std::string fed = data_wait_text(row); !fed.empty()) {
        detail("", fed);
        explain(*row.data_wait);
      }
      if (opt_.verbose && main.status != Status::skipped) {
        if (const std::string notes = training_notes(row); !notes.empty()) detail("", notes);
        detail("telemetry: ", telemetry_text(main.telemetry));
        for (const Reference& ref : main.references)
          detail(ref.kind + ": ", format_number(ref.value) + " " + main.unit + " - " + ref.source);
      }
    }
    if (const std::string note = torch_column_note(rows); !note.empty()) detail("", note);
  }

  // Findings of a watched job: "FAIL     title", then the evidence and "-> advice" under it.
  void diagnosis() {
    if (run_.findings.empty()) return;
    heading("Diagnosis");
    constexpr std::size_t kVerdictW = 7;
    const std::string indent(2 + kVerdictW + 2, ' ');
    const std::size_t text_w = width_ - indent.size();
    for (const Finding& f : run_.findings) {
      if (&f != &run_.findings.front()) line();
      const auto title = wrap(f.title, text_w);
      const std::string verdict =
          paint(pad_right(status_word(f.status), kVerdictW), status_color(f.status));
      for (std::size_t i = 0; i < title.size(); ++i)
        line(i == 0 ? "  " + verdict + "  " + paint(title[i], "1") : indent + title[i]);
      if (!f.evidence.empty())
        for (const auto& l : wrap(f.evidence, text_w)) line(indent + l);
      if (!f.advice.empty()) {
        const auto advice = wrap(f.advice, text_w - 3);
        for (std::size_t i = 0; i < advice.size(); ++i)
          line(indent + (i == 0 ? "-> " : "   ") + advice[i]);
      }
    }
  }

  void checklist() {
    if (run_.checklist.empty()) return;
    heading("Baseline checklist");
    const bool wide = width_ >= 90;
    const std::size_t check_w = wide ? 26 : 18, measured_w = wide ? 16 : 12;
    constexpr std::size_t verdict_w = 7;
    const std::size_t fixed = 2 + check_w + 2 + measured_w + 2 + verdict_w + 2;
    const std::size_t ev_w = width_ > fixed + 12 ? width_ - fixed : 12;
    line(fmt::format("  {}  {}  {}  {}", pad_right("check (target)", check_w),
                     pad_right("measured", measured_w), pad_right("verdict", verdict_w),
                     ev_w >= 17 ? "evidence / advice" : "evidence"));
    for (const ChecklistRow& c : run_.checklist) {
      if (&c != &run_.checklist.front()) line();
      // One cause behind two rows (a pegged loader starves the GPU and fills a core): its
      // advice once.
      const bool advice_repeats = std::any_of(
          run_.checklist.data(), &c, [&](const ChecklistRow& o) { return o.advice == c.advice; });
      std::vector<std::string> check = wrap(c.check, check_w);
      for (auto& l : wrap("(" + c.target + ")", check_w)) check.push_back(std::move(l));
      const auto measured = wrap(c.measured.value_or("-"), measured_w);
      constexpr std::string_view kSkipped = "skipped: ";
      const std::string ev =
          c.evidence.empty() ? "-"
          : c.status == Status::skipped && c.evidence.starts_with(kSkipped)
              ? std::string(kSkipped) + reasons_.text(c.evidence.substr(kSkipped.size()))
              : c.evidence;
      std::vector<std::string> evidence = wrap(ev, ev_w);
      if (!c.advice.empty()) {
        const auto advice = wrap(advice_repeats ? "as above" : c.advice, ev_w - 3);
        for (std::size_t i = 0; i < advice.size(); ++i)
          evidence.push_back((i == 0 ? "-> " : "   ") + advice[i]);
      }
      const std::size_t n = std::max({check.size(), measured.size(), evidence.size()});
      for (std::size_t i = 0; i < n; ++i) {
        const std::string verdict =
            i == 0 ? paint(pad_right(status_word(c.status), verdict_w), status_color(c.status))
                   : std::string(verdict_w, ' ');
        line(fmt::format("  {}  {}  {}  {}", pad_right(i < check.size() ? check[i] : "", check_w),
                         pad_right(i < measured.size() ? measured[i] : "", measured_w), verdict,
                         i < evidence.size() ? evidence[i] : ""));
      }
    }
  }

  void summary() {
    line();
    if (!has_verdict(run_)) {
      line(fmt::format("Overall: nothing judged ({})", status_counts(run_)));
      return;
    }
    const Status worst = run_.worst_status();
    line(fmt::format("{} ({})", paint("Overall: " + status_word(worst), status_color(worst)),
                     status_counts(run_)));
  }

  const Run& run_;
  const TerminalOptions& opt_;
  std::size_t width_;
  std::size_t monitor_label_w_ = 0;  // monitor sections: one label and value width for all
  std::size_t monitor_value_w_ = 0;
  RepeatedReasons reasons_;  // skip reasons said once in full
  std::string out_;
};

}  // namespace

std::string render_terminal(const Run& run, const TerminalOptions& options) {
  return TerminalWriter(run, options).write();
}

}  // namespace gb::report
