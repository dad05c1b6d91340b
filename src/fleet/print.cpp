// fleet/print.cpp: see print.hpp.
#include "fleet/print.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "core/format.hpp"
#include "sys/nvml.hpp"

namespace gb::fleet {

namespace {

std::string pct(double fraction, int decimals = 1) { return fixed(fraction * 100, decimals) + " %"; }

std::string number(double v) {
  const double a = std::fabs(v);
  return fixed(v, a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : 3);
}

std::string group_title(const Group& g) {
  std::string t = g.gpu_name.empty() ? std::string("unknown GPU") : g.gpu_name;
  t += " · " + (g.memory_gib ? fixed(*g.memory_gib, 0) + " GiB" : std::string("memory N/A"));
  t += " · " + (g.power_limit_w ? fixed(*g.power_limit_w, 0) + " W" : std::string("power N/A"));
  t += " · driver " + (g.driver.empty() ? std::string("N/A") : g.driver);
  t += " · CUDA " + (g.cuda.empty() ? std::string("N/A") : g.cuda);
  return t;
}

std::string gpu_label(const ScannedRun& r) {
  std::string s = (r.host.empty() ? std::string("unknown host") : r.host);
  s += r.gpu_index.empty() ? std::string(" (no GPU)") : " GPU " + r.gpu_index;
  return s;
}

std::size_t flagged_gpus(const MergeReport& report) { return report.flagged.size(); }

std::size_t gpu_runs(const MergeReport& report) {
  return static_cast<std::size_t>(std::count_if(report.runs.begin(), report.runs.end(),
                                                [](const ScannedRun& r) { return !r.gpu_unavailable; }));
}

std::string summary_line(const MergeReport& report) {
  return fmt::format(
      "{} run files: {} GPUs in {} group{}, {} run{} without a GPU, {} unreadable file{}; "
      "threshold {} below the group's median",
      grouped(static_cast<double>(report.runs.size() + report.unreadable.size())),
      grouped(static_cast<double>(gpu_runs(report))), report.groups.size(),
      report.groups.size() == 1 ? "" : "s",
      grouped(static_cast<double>(report.runs.size() - gpu_runs(report))),
      report.runs.size() - gpu_runs(report) == 1 ? "" : "s",
      grouped(static_cast<double>(report.unreadable.size())),
      report.unreadable.size() == 1 ? "" : "s", pct(report.threshold));
}


}  // namespace

std::string render_terminal(const MergeReport& report, const PrintOptions& options) {
  const char* red = options.color ? "\033[31m" : "";
  const char* bold = options.color ? "\033[1m" : "";
  const char* reset = options.color ? "\033[0m" : "";
  std::string out;
  out += fmt::format("{}gpubase fleet merge{}: {}\n", bold, reset, summary_line(report));
  for (const Group& g : report.groups) {
    out += fmt::format("\n{}{}{}  {}  ({} GPU{}{})\n", bold, g.id, reset, group_title(g),
                       grouped(static_cast<double>(g.gpus)), g.gpus == 1 ? "" : "s",
                       g.gpus < static_cast<std::size_t>(report.min_peers)
                           ? fmt::format("; fewer than {}: not compared", report.min_peers)
                           : "");
    out += fmt::format("  {:<44} {:>8} {:>12} {:>9}\n", "judged figure", "GPUs", "median", "MAD");
    for (const KeyStats& k : g.keys)
      out += fmt::format("  {:<44} {:>8} {:>12} {:>9}\n", report.keys.name(k.key),
                         grouped(static_cast<double>(k.n)), number(k.median),
                         k.median != 0 ? pct(k.mad / std::fabs(k.median), 2) : "N/A");
  }
  out += "\n";
  if (report.flagged.empty()) {
    out += fmt::format("no GPU flagged: every judged figure is within {} of its group's median, "
                       "every link at its maximum, nothing throttled or invalid\n",
                       pct(report.threshold));
  } else {
    const std::size_t total = gpu_runs(report);
    out += fmt::format("{}{} flagged{} ({} of the GPUs), worst first:\n", red,
                       grouped(static_cast<double>(flagged_gpus(report))), reset,
                       total ? pct(static_cast<double>(report.flagged.size()) /
                                   static_cast<double>(std::max<std::size_t>(total, 1)))
                             : std::string("N/A"));
    const std::size_t shown = options.limit == 0 ? report.flagged.size()
                                                 : std::min(options.limit, report.flagged.size());
    for (std::size_t n = 0; n < shown; ++n) {
      const FlaggedGpu& f = report.flagged[n];
      const ScannedRun& r = report.runs[f.run];
      out += fmt::format("{:>5}. {}{}{}  {}{}  loss {}\n", n + 1, bold, gpu_label(r), reset,
                         r.uuid.empty() ? std::string() : r.uuid + "  ",
                         r.rank ? "rank " + std::to_string(*r.rank) : std::string("no rank"),
                         pct(f.score));
      for (const Problem& p : f.problems) {
        out += fmt::format("        {}{}{}: {}\n", red, to_string(p.kind), reset, p.evidence);
        out += fmt::format("          advice: {}\n", p.advice);
      }
      out += fmt::format("          file: {}\n", report.files[f.run]);
    }
    if (shown < report.flagged.size())
      out += fmt::format("  ... and {} more (--limit 0 lists all; --json or --html for the whole "
                         "report)\n",
                         grouped(static_cast<double>(report.flagged.size() - shown)));
  }
  if (!report.fleet_reports.empty())
    out += fmt::format("\n{} fleet report{} left out (not runs): {}{}\n",
                       report.fleet_reports.size(), report.fleet_reports.size() == 1 ? "" : "s",
                       report.fleet_reports.front(), report.fleet_reports.size() > 1 ? ", ..." : "");
  if (!report.unreadable.empty()) {
    out += fmt::format("\n{}{} unreadable run file{}{} (their GPUs are not known to be healthy):\n",
                       red, report.unreadable.size(), report.unreadable.size() == 1 ? "" : "s",
                       reset);
    const std::size_t shown = options.limit == 0 ? report.unreadable.size()
                                                 : std::min(options.limit, report.unreadable.size());
    for (std::size_t n = 0; n < shown; ++n)
      out += fmt::format("  {}: {}\n", report.unreadable[n].file, report.unreadable[n].reason);
    if (shown < report.unreadable.size())
      out += fmt::format("  ... and {} more\n", report.unreadable.size() - shown);
  }
  return out;
}

Json to_json(const MergeReport& report) {
  Json groups = Json::array();
  for (const Group& g : report.groups) {
    Json keys = Json::array();
    for (const KeyStats& k : g.keys)
      keys.push_back({{"key", report.keys.name(k.key)},
                      {"n", k.n},
                      {"median", k.median},
                      {"mad", k.mad},
                      {"higher_is_better", k.higher_is_better}});
    groups.push_back({{"id", g.id},
                      {"gpu", g.gpu_name},
                      {"memory_gib", g.memory_gib ? Json(*g.memory_gib) : Json(nullptr)},
                      {"power_limit_w", g.power_limit_w ? Json(*g.power_limit_w) : Json(nullptr)},
                      {"driver", g.driver},
                      {"cuda", g.cuda},
                      {"gpus", g.gpus},
                      {"compared", g.gpus >= static_cast<std::size_t>(report.min_peers)},
                      {"keys", keys}});
  }
  Json flagged = Json::array();
  for (const FlaggedGpu& f : report.flagged) {
    const ScannedRun& r = report.runs[f.run];
    const std::size_t gi = report.run_group[f.run];
    Json problems = Json::array();
    for (const Problem& p : f.problems)
      problems.push_back({{"kind", std::string(to_string(p.kind))},
                          {"key", p.key.empty() ? Json(nullptr) : Json(p.key)},
                          {"value", p.value ? Json(*p.value) : Json(nullptr)},
                          {"median", p.median ? Json(*p.median) : Json(nullptr)},
                          {"loss_pct", p.loss * 100},
                          {"evidence", p.evidence},
                          {"advice", p.advice}});
    flagged.push_back({{"host", r.host},
                       {"gpu_index", r.gpu_index.empty() ? Json(nullptr) : Json(r.gpu_index)},
                       {"uuid", r.uuid.empty() ? Json(nullptr) : Json(r.uuid)},
                       {"rank", r.rank ? Json(*r.rank) : Json(nullptr)},
                       {"job_id", r.job_id.empty() ? Json(nullptr) : Json(r.job_id)},
                       {"group", gi < report.groups.size() ? Json(report.groups[gi].id)
                                                           : Json(nullptr)},
                       {"file", report.files[f.run]},
                       {"loss_pct", f.score * 100},
                       {"problems", problems}});
  }
  Json unreadable = Json::array();
  for (const UnreadableFile& u : report.unreadable)
    unreadable.push_back({{"file", u.file}, {"reason", u.reason}});
  return Json{{"schema", "gpubase.fleet"},
              {"schema_version", 1},
              {"threshold_pct", report.threshold * 100},
              {"min_peers", report.min_peers},
              {"run_files", report.runs.size() + report.unreadable.size()},
              {"gpus", gpu_runs(report)},
              {"runs_without_gpu", report.runs.size() - gpu_runs(report)},
              {"flagged_count", report.flagged.size()},
              {"fleet_reports_left_out", report.fleet_reports.size()},
              {"groups", groups},
              {"flagged", flagged},
              {"unreadable", unreadable}};
}

namespace {

// One strip per judged key of a group: every GPU's figure as its deviation from the group's
// median, signed so that left is worse. Healthy GPUs are binned (a column's darkness is how many
// GPUs fall there, so 80,000 GPUs stay a small page); GPUs flagged on that key are red dots with
// their name on hover. The dashed line is the threshold.
std::string strip_chart(const MergeReport& report, std::size_t gi, const KeyStats& ks,
                        const std::vector<char>& flagged_run) {
  constexpr double kLeft = -0.15, kRight = 0.05;  // worse .. better, as fractions
  constexpr int kWidth = 640, kHeight = 34, kBins = 160;
  auto x_of = [&](double dev) {
    const double c = std::clamp(dev, kLeft, kRight);
    return (c - kLeft) / (kRight - kLeft) * kWidth;
  };
  std::vector<int> bins(kBins, 0);
  std::string dots;
  std::size_t below = 0, above = 0;
  for (std::size_t i = 0; i < report.runs.size(); ++i) {
    if (report.run_group[i] != gi) continue;
    for (const ScannedFigure& f : report.runs[i].figures) {
      if (f.key != ks.key || !f.has_value || ks.median == 0) continue;
      const double dev = ks.higher_is_better ? f.value / ks.median - 1 : 1 - f.value / ks.median;
      if (dev < kLeft) ++below;
      if (dev > kRight) ++above;
      const bool bad = flagged_run[i] && (-dev >= report.threshold || f.invalid ||
                                          sys::is_slowdown(f.throttle_reasons));
      if (bad) {
        dots += fmt::format(
            "<circle cx=\"{:.1f}\" cy=\"{}\" r=\"3\" fill=\"#c0392b\"><title>{}: {} ({})</title>"
            "</circle>",
            x_of(dev), kHeight / 2, html_escape(gpu_label(report.runs[i])), number(f.value),
            pct(dev));
      } else {
        const int b = std::clamp(static_cast<int>(x_of(dev) / kWidth * kBins), 0, kBins - 1);
        ++bins[static_cast<std::size_t>(b)];
      }
    }
  }
  const int peak = *std::max_element(bins.begin(), bins.end());
  std::string svg = fmt::format(
      "<svg width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" role=\"img\">", kWidth, kHeight + 14,
      kWidth, kHeight + 14);
  const double bw = static_cast<double>(kWidth) / kBins;
  for (int b = 0; b < kBins; ++b) {
    if (bins[static_cast<std::size_t>(b)] == 0) continue;
    const double shade = 0.15 + 0.85 * std::log1p(bins[static_cast<std::size_t>(b)]) /
                                    std::log1p(std::max(peak, 1));
    svg += fmt::format("<rect x=\"{:.1f}\" y=\"4\" width=\"{:.1f}\" height=\"{}\" fill=\"#2c3e50\" "
                       "fill-opacity=\"{:.2f}\"><title>{} GPUs</title></rect>",
                       b * bw, bw, kHeight - 8, shade, bins[static_cast<std::size_t>(b)]);
  }
  const double xt = x_of(-report.threshold), x0 = x_of(0);
  svg += fmt::format("<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"0\" y2=\"{1}\" stroke=\"#c0392b\" "
                     "stroke-dasharray=\"3,2\"/>",
                     xt, kHeight);
  svg += fmt::format("<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"0\" y2=\"{1}\" stroke=\"#27ae60\"/>",
                     x0, kHeight);
  svg += dots;
  for (const double tick : {-0.15, -0.10, -0.05, 0.0, 0.05})
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\">{}</text>",
                       std::clamp(x_of(tick), 12.0, kWidth - 12.0), kHeight + 12,
                       tick == 0 ? std::string("median") : fixed(tick * 100, 0) + " %");
  svg += "</svg>";
  if (below || above)
    svg += fmt::format("<div class=\"note\">{} beyond the left edge, {} beyond the right</div>",
                       below, above);
  return svg;
}

}  // namespace

std::string render_html(const MergeReport& report) {
  std::vector<char> flagged_run(report.runs.size(), 0);
  for (const FlaggedGpu& f : report.flagged) flagged_run[f.run] = 1;
  std::string h;
  h += "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>gpubase fleet merge</title>"
       "<style>body{font-family:sans-serif;margin:2em;color:#222}table{border-collapse:collapse}"
       "td,th{padding:2px 8px;border-bottom:1px solid #ddd;text-align:left;vertical-align:top}"
       ".bad{color:#c0392b}.note{font-size:11px;color:#666}.key{font-family:monospace}"
       "</style></head><body>";
  h += "<h1>gpubase fleet merge</h1><p>" + html_escape(summary_line(report)) + "</p>";
  h += fmt::format("<p class=\"{}\">{} GPU{} flagged.</p>", report.flagged.empty() ? "" : "bad",
                   grouped(static_cast<double>(report.flagged.size())),
                   report.flagged.size() == 1 ? "" : "s");
  for (std::size_t gi = 0; gi < report.groups.size(); ++gi) {
    const Group& g = report.groups[gi];
    h += fmt::format("<h2>{} — {} ({} GPUs)</h2>", g.id, html_escape(group_title(g)),
                     grouped(static_cast<double>(g.gpus)));
    h += "<p class=\"note\">Each strip: every GPU's figure against the group's median (green), "
         "worse to the left; grey columns are GPUs not flagged on that figure (darker: more "
         "GPUs), red dots the flagged ones; the dashed line is the threshold.</p><table>"
         "<tr><th>judged figure</th><th>GPUs</th><th>median</th><th>MAD</th><th></th></tr>";
    for (const KeyStats& k : g.keys)
      h += fmt::format("<tr><td class=\"key\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
                       "</tr>",
                       html_escape(report.keys.name(k.key)), grouped(static_cast<double>(k.n)),
                       number(k.median), k.median != 0 ? pct(k.mad / std::fabs(k.median), 2) : "N/A",
                       strip_chart(report, gi, k, flagged_run));
    h += "</table>";
  }
  if (!report.flagged.empty()) {
    constexpr std::size_t kRows = 2000;
    h += "<h2>Flagged GPUs, worst first</h2><table><tr><th>#</th><th>GPU</th><th>rank</th>"
         "<th>loss</th><th>problems</th></tr>";
    for (std::size_t n = 0; n < std::min(kRows, report.flagged.size()); ++n) {
      const FlaggedGpu& f = report.flagged[n];
      const ScannedRun& r = report.runs[f.run];
      std::string problems;
      for (const Problem& p : f.problems)
        problems += fmt::format("<div><b class=\"bad\">{}</b>: {}<br><span class=\"note\">{}"
                                "</span></div>",
                                to_string(p.kind), html_escape(p.evidence), html_escape(p.advice));
      h += fmt::format("<tr><td>{}</td><td>{}<br><span class=\"note\">{}<br>{}</span></td>"
                       "<td>{}</td><td>{}</td><td>{}</td></tr>",
                       n + 1, html_escape(gpu_label(r)), html_escape(r.uuid),
                       html_escape(report.files[f.run]),
                       r.rank ? std::to_string(*r.rank) : std::string("N/A"), pct(f.score),
                       problems);
    }
    h += "</table>";
    if (report.flagged.size() > kRows)
      h += fmt::format("<p class=\"note\">{} more in the JSON report (--json).</p>",
                       report.flagged.size() - kRows);
  }
  if (!report.unreadable.empty()) {
    h += "<h2 class=\"bad\">Unreadable run files</h2><table>";
    for (const UnreadableFile& u : report.unreadable)
      h += "<tr><td>" + html_escape(u.file) + "</td><td>" + html_escape(u.reason) + "</td></tr>";
    h += "</table>";
  }
  h += "</body></html>\n";
  return h;
}

}  // namespace gb::fleet
