// report/report.cpp: render() dispatch and the JSON printer (the result model's own JSON,
// core/json, pretty printed: the same document `gpubase report RUN.json` reads back).
#include "report/report.hpp"

#include "core/json.hpp"

namespace gb::report {

std::string render_json(const Run& run) { return to_json(run).dump(2) + "\n"; }

std::string render(const Run& run, Format format, const TerminalOptions& options) {
  switch (format) {
    case Format::terminal: return render_terminal(run, options);
    case Format::markdown: return render_markdown(run);
    case Format::json: return render_json(run);
    case Format::csv: return render_csv(run);
    case Format::html: return render_html(run);
  }
  return render_terminal(run, options);
}

}  // namespace gb::report
