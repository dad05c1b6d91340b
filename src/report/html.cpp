// report/html.cpp: the HTML printer. One self-contained page (inline CSS and SVG, a few lines of
// script for a shared cursor on the time series, nothing fetched), readable on a laptop and
// printable. Like the terminal printer it knows no suite: it lays out the sections the run
// declares, by their layout, and picks charts from the shape of the data alone:
//
//   benchmark       bars per unit, each with ticks at its references (datasheet, achievable,
//                   peers' figures labelled quoted/measured), the PCIe link seen under load
//   configurations  one bar per configuration (images/s) with the peers' figures as ticks
//   monitor         variants of one figure (keys differing in one segment: amp.<p>.x) as bars
//                   with their noise (noise band, std or min-max) as whiskers
//   any layout      a sweep (results whose keys differ in a number that is also a param of
//                   theirs: loader.cpu.w<N>.images_per_s with workers = N) as a line, a per-core
//                   param as a second line, a result counted in the swept param (the knee) as a
//                   vertical mark, and the points past the best that are slower beyond both
//                   spreads shaded; a "history" param as a small line
//
// then the section's table. The checklist comes first, a watched job's time series (RunSeries,
// given by the caller) after the sections, the environment last.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

#include "report/html_svg.hpp"
#include "report/report.hpp"
#include "report/text.hpp"

namespace gb::report {

namespace {

using namespace detail;
using html::escape;

constexpr const char* kStyle = R"css(
:root{--pass:#2e7d32;--warn:#e08a00;--fail:#c62828;--invalid:#7b1fa2;--info:#4a6fa5;--skipped:#8a8a8a}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:#1d1d1f;background:#fafafa}
main{max-width:1120px;margin:0 auto;padding:20px 24px 40px;background:#fff}
h1{font-size:24px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;padding-top:8px;border-top:1px solid #e3e3e3}
h3{font-size:15px;margin:16px 0 6px}
.sub{color:#555;margin:0 0 8px}.overall{font-weight:600}
table{border-collapse:collapse;width:100%;margin:6px 0 12px;font-size:13px}
th,td{text-align:left;vertical-align:top;padding:4px 8px;border-bottom:1px solid #eee;overflow-wrap:anywhere}
th{background:#f3f3f5;font-weight:600;white-space:nowrap}
td.num{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}
.chip{display:inline-block;padding:0 6px;border-radius:3px;color:#fff;font-size:12px;font-weight:600;white-space:nowrap}
.s-pass{background:var(--pass)}.s-warn{background:var(--warn)}.s-fail{background:var(--fail)}
.s-invalid{background:var(--invalid)}.s-info{background:var(--info)}.s-skipped{background:var(--skipped)}
.note{color:#444}.advice{color:#1d1d1f}.advice:before{content:"\2192  "}
.caption{color:#555;font-size:13px;margin:4px 0}
.finding{border-left:4px solid var(--info);padding:4px 10px;margin:8px 0;background:#f8f9fb}
.finding.f-fail{border-color:var(--fail)}.finding.f-warn{border-color:var(--warn)}.finding.f-pass{border-color:var(--pass)}
.chart{display:block;width:100%;height:auto;margin:6px 0 10px;overflow:hidden}
.chart text{font-size:12px;fill:#222}.chart text.axis{fill:#555;font-size:11px}.chart text.legend{font-size:11.5px}
.chart text.row-label{font-size:10px}.chart text.skipped{fill:#8a8a8a;font-style:italic}
.chart .axis,.chart .grid,.chart .zero{stroke:#999;stroke-width:1}.chart .grid{stroke:#eee}.chart .zero{stroke:#555}
.chart .tick{stroke-width:3}.chart .whisker{stroke:#222;stroke-width:1.5;fill:none}
.chart path.line{fill:none;stroke-width:2}.chart path.mark.line{stroke-width:1.4}
.chart .shade{fill:#fbe3df}.chart text.shade-label{fill:#a12b1b}.chart .marker{stroke:#6a1b9a;stroke-width:2;stroke-dasharray:5 4}
.chart text.marker-label{fill:#6a1b9a;font-weight:600}.chart .cursor{stroke:#333;stroke-width:1}
.chart text.panel-title{font-weight:600;font-size:13px}
.chart .finding-band{opacity:.13}.chart rect.finding{opacity:.85}
details summary{cursor:pointer;font-weight:600}
.cursor-time{font-variant-numeric:tabular-nums;color:#333}
@media print{body{background:#fff}main{max-width:none;padding:0}h2{break-after:avoid}.chart,tr{break-inside:avoid}}
)css";

// The shared cursor over the time-series panels: they share one time axis (x from 60 to 940 of
// 960), so one mouse position is one moment in all of them.
constexpr const char* kScript = R"js(
(function(){
var box=document.querySelector('.timelines');if(!box)return;
var span=parseFloat(box.getAttribute('data-span'))||0,out=box.querySelector('.cursor-time');
var svgs=box.querySelectorAll('svg.timeline');
function show(x){svgs.forEach(function(s){var c=s.querySelector('.cursor');if(!c)return;
if(x===null){c.setAttribute('visibility','hidden');return;}
c.setAttribute('x1',x);c.setAttribute('x2',x);c.setAttribute('visibility','visible');});}
svgs.forEach(function(s){
s.addEventListener('mousemove',function(e){var r=s.getBoundingClientRect();
var x=(e.clientX-r.left)*960/r.width;if(x<60||x>940){show(null);return;}
show(x);if(out){var t=(x-60)/880*span;out.textContent='cursor: '+(t<120?t.toFixed(1)+' s':(t/60).toFixed(1)+' min');}});
s.addEventListener('mouseleave',function(){show(null);if(out)out.textContent='';});});
})();
)js";

std::string chip(Status s) {
  return fmt::format("<span class=\"chip s-{}\">{}</span>", to_string(s), escape(status_word(s)));
}

std::string id_for(std::string_view text) {
  std::string out;
  for (const char c : text)
    out += std::isalnum(static_cast<unsigned char>(c)) ? c : '-';
  return out;
}

// The number in a param: a numeric param's, or the first number in a text one (files written
// before params carried numbers: "+/- 0.26 points (2 standard errors)").
std::optional<double> loose_number(const Result& r, std::string_view name) {
  const Param* p = r.find_param(name);
  if (!p) return std::nullopt;
  if (p->number) return p->number;
  const std::string& t = p->text;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(t[i]))) continue;
    std::size_t used = 0;
    try {
      return std::stod(t.substr(i), &used);
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

// Every number after the last ':' of a text ("seed 1, by epoch: 65536, 32768, ..."), or of the
// whole text.
std::vector<double> numbers_in(std::string_view text) {
  const auto colon = text.rfind(':');
  if (colon != std::string_view::npos) text.remove_prefix(colon + 1);
  std::vector<double> out;
  std::size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (std::isdigit(static_cast<unsigned char>(c)) ||
        ((c == '-' || c == '.') && i + 1 < text.size() &&
         std::isdigit(static_cast<unsigned char>(text[i + 1])))) {
      std::size_t used = 0;
      try {
        out.push_back(std::stod(std::string(text.substr(i, 32)), &used));
      } catch (const std::exception&) {
        return {};
      }
      i += std::max<std::size_t>(1, used);
    } else {
      ++i;
    }
  }
  return out;
}

std::vector<std::string> split_key(const std::string& key) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (true) {
    const auto dot = key.find('.', pos);
    out.push_back(key.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos));
    if (dot == std::string::npos) break;
    pos = dot + 1;
  }
  return out;
}

// The key with every run of digits replaced by '#', and the runs.
std::string digit_shape(const std::string& key, std::vector<std::string>& runs) {
  std::string shape;
  for (std::size_t i = 0; i < key.size();) {
    if (std::isdigit(static_cast<unsigned char>(key[i]))) {
      std::size_t j = i;
      while (j < key.size() && std::isdigit(static_cast<unsigned char>(key[j]))) ++j;
      runs.push_back(key.substr(i, j - i));
      shape += '#';
      i = j;
    } else {
      shape += key[i++];
    }
  }
  return shape;
}

struct Sweep {
  std::string param;  // the swept param ("workers")
  std::string unit;
  std::vector<const Result*> points;  // by x
};

// Results of one section that form a sweep: the same key but for one number, that number being
// the value of one of their numeric params, at least three distinct values.
std::vector<Sweep> find_sweeps(const std::vector<const Result*>& results) {
  std::map<std::string, Sweep> groups;
  std::vector<std::string> order;
  for (const Result* r : results) {
    if (!r->value) continue;
    std::vector<std::string> runs;
    const std::string shape = digit_shape(r->key, runs);
    for (const Param& p : r->params) {
      if (!p.number || *p.number != std::floor(*p.number) || *p.number < 0) continue;
      const std::string text = fmt::format("{}", static_cast<long long>(*p.number));
      const auto at = std::find(runs.begin(), runs.end(), text);
      if (at == runs.end()) continue;
      const std::string id = fmt::format("{}|{}|{}|{}", shape, r->unit, p.name, at - runs.begin());
      auto [it, fresh] = groups.try_emplace(id, Sweep{p.name, r->unit, {}});
      if (fresh) order.push_back(id);
      it->second.points.push_back(r);
      break;
    }
  }
  std::vector<Sweep> out;
  for (const std::string& id : order) {
    Sweep s = groups[id];
    std::set<double> xs;
    for (const Result* r : s.points) xs.insert(*r->number_param(s.param));
    if (s.points.size() < 3 || xs.size() != s.points.size()) continue;
    std::sort(s.points.begin(), s.points.end(), [&](const Result* a, const Result* b) {
      return *a->number_param(s.param) < *b->number_param(s.param);
    });
    out.push_back(std::move(s));
  }
  return out;
}

// The words the members' labels end with ("fp32: test accuracy", "fp16: test accuracy" ->
// "test accuracy"), else `fallback`.
std::string common_ending(const std::vector<const Result*>& members, const std::string& fallback) {
  std::string common = members.front()->label;
  for (const Result* r : members) {
    const std::string& l = r->label;
    std::size_t n = 0;
    while (n < common.size() && n < l.size() &&
           common[common.size() - 1 - n] == l[l.size() - 1 - n])
      ++n;
    common = common.substr(common.size() - n);
  }
  const auto space = common.find_first_of(" ");
  if (space == std::string::npos) return fallback;
  common = common.substr(space + 1);
  while (!common.empty() && (common.front() == ' ' || common.front() == ':')) common.erase(0, 1);
  return common.size() >= 4 ? common : fallback;
}

std::string tick_label(const Reference& ref) {
  std::string kind = ref.kind;
  if (kind == "pytorch") kind = "PyTorch eager";
  if (kind == "torch_compile") kind = "torch.compile";
  if (kind == "baseline") kind = "saved baseline";
  return ref.origin.empty() ? kind : kind + " (" + ref.origin + ")";
}

std::vector<html::Tick> ticks_of(const Result& r) {
  std::vector<html::Tick> out;
  for (const Reference& ref : r.references) {
    if (ref.value <= 0 || ref.kind == "clock_adjusted" || ref.kind == "target") continue;
    out.push_back({ref.kind, tick_label(ref), ref.value});
  }
  return out;
}

std::string result_tip(const Result& r) {
  std::string tip = (r.label.empty() ? r.key : r.label) + ": " + value_text(r);
  if (const std::string cv = cv_text(r); !cv.empty()) tip += " (CV " + cv + ")";
  for (const Reference& ref : r.references)
    if (ref.value > 0 && ref.kind != "target")
      tip += "\n" + tick_label(ref) + ": " + format_number(ref.value) + " " + r.unit +
             (ref.source.empty() ? "" : " - " + ref.source);
  if (r.telemetry) tip += "\ntelemetry: " + telemetry_text(r.telemetry);
  return tip;
}

html::Bar bar_of(const Result& r) {
  html::Bar b;
  b.label = r.label.empty() ? r.key : r.label;
  b.value = r.value;
  b.value_text = r.value ? value_text(r) : status_word(r.status);
  b.status = r.status;
  b.ticks = ticks_of(r);
  b.tip = result_tip(r);
  return b;
}

class HtmlWriter {
 public:
  HtmlWriter(const Run& run, const HtmlOptions& options) : run_(run), opt_(options) {}

  std::string write() {
    const std::string title = "gpubase " + (run_.command.empty() ? "run" : run_.command);
    out_ += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">";
    out_ += "<title>" + escape(title + (run_.started_at.empty() ? "" : ", " + run_.started_at)) +
            "</title><style>" + kStyle + "</style></head>\n<body><main>\n";
    header(title);
    checklist();
    diagnosis();
    for (const Section& s : group_sections(run_)) section(s);
    timeline();
    environment();
    out_ += "</main><script>" + std::string(kScript) + "</script></body></html>\n";
    return out_;
  }

 private:
  void header(const std::string& title) {
    out_ += "<header><h1>" + escape(title) + "</h1><p class=\"sub\">" +
            escape(run_subtitle(run_)) + "</p>";
    if (const auto gpu = run_.fact("gpu.name")) out_ += "<p class=\"sub\">" + escape(*gpu) + "</p>";
    if (has_verdict(run_)) {
      const Status worst = run_.worst_status();
      out_ += "<p class=\"overall\">Overall: " + chip(worst) + " " + escape(status_counts(run_)) +
              "</p>";
    } else {
      out_ += "<p class=\"overall\">Overall: nothing judged (" + escape(status_counts(run_)) +
              ")</p>";
    }
    out_ += "</header>\n";
  }

  void checklist() {
    if (run_.checklist.empty()) return;
    out_ += "<section id=\"checklist\"><h2>Baseline checklist</h2><table><thead><tr>"
            "<th style=\"width:24%\">check (target)</th><th style=\"width:16%\">measured</th>"
            "<th style=\"width:9%\">verdict</th><th>evidence / advice</th></tr></thead><tbody>";
    for (const ChecklistRow& c : run_.checklist) {
      out_ += "<tr data-check=\"" + escape(c.id) + "\"><td>" + escape(c.check) + " (" +
              escape(c.target) + ")</td><td>" + escape(c.measured.value_or("-")) + "</td><td>" +
              chip(c.status) + "</td><td><div class=\"note\">" +
              escape(c.evidence.empty() ? "-" : c.evidence) + "</div>";
      if (!c.advice.empty()) out_ += "<div class=\"advice\">" + escape(c.advice) + "</div>";
      out_ += "</td></tr>";
    }
    out_ += "</tbody></table></section>\n";
  }

  void diagnosis() {
    if (run_.findings.empty()) return;
    out_ += "<section id=\"diagnosis\"><h2>Diagnosis</h2>";
    for (const Finding& f : run_.findings) {
      out_ += fmt::format("<div class=\"finding f-{}\" data-finding=\"{}\"><div>{} <b>{}</b></div>",
                          to_string(f.status), escape(f.id), chip(f.status), escape(f.title));
      if (!f.evidence.empty()) out_ += "<div class=\"note\">" + escape(f.evidence) + "</div>";
      if (!f.advice.empty()) out_ += "<div class=\"advice\">" + escape(f.advice) + "</div>";
      out_ += "</div>";
    }
    out_ += "</section>\n";
  }

  void section(const Section& s) {
    out_ += fmt::format("<section class=\"run-section\" id=\"s-{}\" data-layout=\"{}\"><h2>{}</h2>",
                        id_for(s.id), to_string(s.layout), escape(s.title));
    link_caption(s);
    // Sweeps first (they are the section's story when it has one), then the rest as bars.
    const std::vector<Sweep> sweeps = find_sweeps(s.results);
    std::set<const Result*> drawn;
    for (std::size_t i = 0; i < sweeps.size(); ++i) {
      sweep(s, sweeps[i], i);
      drawn.insert(sweeps[i].points.begin(), sweeps[i].points.end());
    }
    if (s.layout == Layout::configurations) {
      configurations(s);
    } else {
      std::vector<const Result*> rest;
      for (const Result* r : s.results)
        if (!drawn.count(r)) rest.push_back(r);
      if (s.layout == Layout::monitor)
        variants(s, rest);
      else
        bars_by_unit(s, rest);
    }
    histories(s);
    table(s);
    out_ += "</section>\n";
  }

  // "PCIe link under load: Gen3 x8 (slot and GPU allow Gen5 x16)" when the section's figures
  // carry link telemetry.
  void link_caption(const Section& s) {
    std::optional<int> gen, width;
    for (const Result* r : s.results) {
      if (!r->telemetry) continue;
      if (r->telemetry->pcie_gen_min)
        gen = gen ? std::min(*gen, *r->telemetry->pcie_gen_min) : *r->telemetry->pcie_gen_min;
      if (r->telemetry->pcie_width_min)
        width = width ? std::min(*width, *r->telemetry->pcie_width_min)
                      : *r->telemetry->pcie_width_min;
    }
    if (!gen && !width) return;
    // Worth a line where the link is the subject (a PCIe section) or where it ran degraded.
    const PcieLink& max = run_.gpu.link_max_slot;
    const bool degraded = (gen && max.gen && *gen < *max.gen) ||
                          (width && max.width && *width < *max.width);
    if (!degraded && s.id.find("pcie") == std::string::npos) return;
    std::string text = fmt::format("PCIe link under load: Gen{} x{}",
                                   gen ? std::to_string(*gen) : "?",
                                   width ? std::to_string(*width) : "?");
    if (max.known())
      text += fmt::format(" (slot and GPU allow Gen{} x{})",
                          max.gen ? std::to_string(*max.gen) : "?",
                          max.width ? std::to_string(*max.width) : "?");
    out_ += "<p class=\"caption link\">" + escape(text) + "</p>";
  }

  void sweep(const Section& s, const Sweep& sw, std::size_t index) {
    html::SweepChart c;
    c.id = "chart-" + id_for(s.id) + "-sweep" + std::to_string(index);
    c.x_name = sw.param;
    c.y_name = sw.unit;
    const Result* best = nullptr;
    for (const Result* r : sw.points) {
      const double x = *r->number_param(sw.param);
      c.points.push_back({x, *r->value, result_tip(*r)});
      if (!best || (r->higher_is_better ? *r->value > *best->value : *r->value < *best->value))
        best = r;
    }
    // A per-core figure of every point: a second line.
    for (const Param& p : sw.points.front()->params) {
      if (!p.number || (p.name.find("per_busy_core") == std::string::npos &&
                        p.name.find("per_core") == std::string::npos))
        continue;
      std::vector<html::Point> pts;
      for (const Result* r : sw.points)
        if (const auto v = r->number_param(p.name))
          pts.push_back({*r->number_param(sw.param), *v,
                         fmt::format("{} {}: {} {}", format_number(*r->number_param(sw.param)),
                                     sw.param, format_number(*v), p.unit)});
      if (pts.size() != sw.points.size()) continue;
      std::string name = p.name;
      for (char& ch : name)
        if (ch == '_') ch = ' ';
      c.y2_name = name + (p.unit.empty() ? "" : ", " + p.unit);
      c.points2 = std::move(pts);
      break;
    }
    // A result of the section counted in the swept param (the knee): a vertical mark.
    for (const Result* r : s.results) {
      if (!r->value || (r->unit != sw.param && r->unit != sw.param + "s")) continue;
      const bool on_axis = std::any_of(c.points.begin(), c.points.end(),
                                       [&](const html::Point& p) { return p.x == *r->value; });
      if (!on_axis) continue;
      c.marker_x = *r->value;
      c.marker_label = (r->label.empty() ? r->key : r->label) + ": " + format_number(*r->value);
      break;
    }
    // Past the best point: slower beyond both spreads (the point's max below the best's min).
    const double best_x = *best->number_param(sw.param);
    const double best_low = best->stats.n >= 2 ? best->stats.min : *best->value;
    const double best_high = best->stats.n >= 2 ? best->stats.max : *best->value;
    for (const Result* r : sw.points) {
      const double x = *r->number_param(sw.param);
      if (x <= best_x) continue;
      const double high = r->stats.n >= 2 ? r->stats.max : *r->value;
      const double low = r->stats.n >= 2 ? r->stats.min : *r->value;
      const bool worse = best->higher_is_better ? high < best_low : low > best_high;
      if (!worse) continue;
      c.shade_from_x = x;
      c.shade_label = fmt::format("more {} than the best ({}): slower beyond the noise", sw.param,
                                  format_number(best_x));
      break;
    }
    out_ += "<h3>" + escape(sw.unit) + " against " + escape(sw.param) + "</h3>";
    out_ += html::sweep_chart(c);
  }

  void bars_by_unit(const Section& s, const std::vector<const Result*>& results) {
    std::vector<std::string> units;
    for (const Result* r : results)
      if (std::find(units.begin(), units.end(), r->unit) == units.end()) units.push_back(r->unit);
    for (const std::string& unit : units) {
      if (unit.empty() || unit == "count") continue;  // counts and link states: the table
      std::vector<html::Bar> bars;
      bool valued = false, referenced = false;
      for (const Result* r : results) {
        if (r->unit != unit) continue;
        bars.push_back(bar_of(*r));
        valued = valued || r->value.has_value();
        referenced = referenced || !bars.back().ticks.empty();
      }
      if (!valued || (bars.size() < 2 && !referenced)) continue;
      out_ += html::bar_chart("chart-" + id_for(s.id) + "-" + id_for(unit), unit, bars);
    }
  }

  // Monitor sections: figures that differ in one key segment (amp.fp32.x, amp.fp16.x) side by
  // side with their noise.
  void variants(const Section& s, const std::vector<const Result*>& results) {
    std::map<std::string, int> count;
    auto pattern = [](const Result& r, std::size_t i) {
      std::vector<std::string> seg = split_key(r.key);
      seg[i] = "*";
      std::string p;
      for (const auto& x : seg) p += (p.empty() ? "" : ".") + x;
      return p + "|" + r.unit;
    };
    for (const Result* r : results) {
      if (!r->value) continue;
      const std::size_t n = split_key(r->key).size();
      for (std::size_t i = 1; i + 1 < n; ++i) ++count[pattern(*r, i)];
    }
    std::vector<std::string> order;
    std::map<std::string, std::vector<const Result*>> groups;
    for (const Result* r : results) {
      if (!r->value) continue;
      const std::size_t n = split_key(r->key).size();
      std::string best;
      int best_n = 1;
      for (std::size_t i = 1; i + 1 < n; ++i)
        if (count[pattern(*r, i)] > best_n) best = pattern(*r, i), best_n = count[best];
      if (best.empty()) continue;
      if (!groups.count(best)) order.push_back(best);
      groups[best].push_back(r);
    }
    for (const std::string& g : order) {
      const auto& members = groups[g];
      if (members.size() < 2) continue;
      std::vector<html::Bar> bars;
      std::string note;
      for (const Result* r : members) {
        html::Bar b = bar_of(*r);
        if (const auto band = loose_number(*r, "noise band")) {
          b.low = *r->value - *band, b.high = *r->value + *band;
          note = "noise band (2 standard errors)";
        } else if (const auto sd = loose_number(*r, "std")) {
          b.low = *r->value - *sd, b.high = *r->value + *sd;
          if (note.empty()) note = "± 1 standard deviation over seeds";
        } else if (r->stats.n >= 2) {
          b.low = r->stats.min, b.high = r->stats.max;
          if (note.empty()) note = "min-max over samples";
        }
        bars.push_back(std::move(b));
      }
      const std::string unit = g.substr(g.find('|') + 1);
      const std::string name = g.substr(0, g.find('|'));
      out_ += "<h3>" + escape(common_ending(members, name)) + "</h3>";
      out_ += html::bar_chart("chart-" + id_for(s.id) + "-" + id_for(name), unit, bars, note);
    }
  }

  void configurations(const Section& s) {
    const std::vector<TrainingRow> rows = training_rows(s);
    std::vector<html::Bar> bars;
    for (const TrainingRow& row : rows) {
      html::Bar b = row.images ? bar_of(*row.images) : bar_of(*row.main);
      b.label = row.model + " " + row.precision + (row.batch.empty() ? "" : " b" + row.batch) +
                (row.graph ? " (graph)" : "");
      bars.push_back(std::move(b));
    }
    if (std::any_of(bars.begin(), bars.end(), [](const html::Bar& b) { return b.value; }))
      out_ += html::bar_chart("chart-" + id_for(s.id) + "-images", "images/s", bars);
  }

  void histories(const Section& s) {
    for (const Result* r : s.results) {
      const Param* p = r->find_param("history");
      if (!p) continue;
      const std::vector<double> values = p->number ? std::vector<double>{} : numbers_in(p->text);
      if (values.size() < 2) continue;
      out_ += "<h3>" + escape(r->label.empty() ? r->key : r->label) + ": history</h3>";
      out_ += "<p class=\"caption\">" + escape(p->text) + "</p>";
      out_ += html::history_chart("chart-" + id_for(r->key) + "-history",
                                  r->label.empty() ? r->key : r->label, values);
    }
  }

  void table(const Section& s) {
    if (s.layout == Layout::configurations) {
      configurations_table(s);
      return;
    }
    const bool refs = std::any_of(s.results.begin(), s.results.end(), [](const Result* r) {
      return r->find_reference("datasheet") || r->find_reference("achievable");
    });
    out_ += "<table class=\"results\"><thead><tr><th style=\"width:30%\">figure</th>"
            "<th class=\"num\">value</th><th class=\"num\">± CV</th>";
    if (refs) out_ += "<th class=\"num\">datasheet</th><th class=\"num\">achievable</th>";
    out_ += "<th>status</th><th>notes</th></tr></thead><tbody>";
    for (const Result* r : s.results) {
      out_ += "<tr data-key=\"" + escape(r->key) + "\"><td>" +
              escape(r->label.empty() ? r->key : r->label) + "</td><td class=\"num\">" +
              escape(value_text(*r)) + "</td><td class=\"num\">" + escape(cv_text(*r)) + "</td>";
      if (refs)
        out_ += "<td class=\"num\">" + escape(ratio_text(*r, "datasheet")) +
                "</td><td class=\"num\">" + escape(ratio_text(*r, "achievable")) + "</td>";
      out_ += "<td>" + chip(r->status) + "</td><td>" + notes(*r) + "</td></tr>";
    }
    out_ += "</tbody></table>";
  }

  std::string notes(const Result& r) {
    std::string out;
    const std::string subject = subject_text(r);
    if (!subject.empty()) out += "<div class=\"note\">" + escape(subject) + "</div>";
    if (!r.reason.empty()) out += "<div class=\"note\">" + escape(r.reason) + "</div>";
    if (!r.advice.empty() && r.status != Status::pass)
      out += "<div class=\"advice\">" + escape(r.advice) + "</div>";
    return out;
  }

  void configurations_table(const Section& s) {
    const std::vector<TrainingRow> rows = training_rows(s);
    out_ += "<table class=\"results\"><thead><tr><th>model</th><th>precision</th>"
            "<th class=\"num\">batch</th><th class=\"num\">images/s</th>"
            "<th class=\"num\">step ms (min-max)</th><th class=\"num\">± CV</th>"
            "<th class=\"num\">memory</th><th class=\"num\">vs torch</th><th>status</th>"
            "<th>notes</th></tr></thead><tbody>";
    for (const TrainingRow& row : rows) {
      const Result& main = *row.main;
      std::string note = notes(main);
      if (const std::string fed = data_wait_text(row); !fed.empty())
        note += "<div class=\"note\">" + escape(fed) + "</div>";
      if (const std::string more = training_notes(row); !more.empty())
        note += "<div class=\"note\">" + escape(more) + "</div>";
      out_ += "<tr data-key=\"" + escape(main.key) + "\"><td>" + escape(row.model) + "</td><td>" +
              escape(row.precision) + "</td><td class=\"num\">" + escape(row.batch) +
              "</td><td class=\"num\">" +
              escape(row.images && row.images->value ? format_number(*row.images->value) : "-") +
              "</td><td class=\"num\">" + escape(step_text(row, true)) +
              "</td><td class=\"num\">" + escape(row.step ? cv_text(*row.step) : "") +
              "</td><td class=\"num\">" +
              escape(row.memory && row.memory->value ? format_number(*row.memory->value) + " GiB"
                                                     : "") +
              "</td><td class=\"num\">" + escape(torch_ratio_text(row)) + "</td><td>" +
              chip(main.status) + "</td><td>" + note + "</td></tr>";
    }
    out_ += "</tbody></table>";
    if (const std::string n = torch_column_note(rows); !n.empty())
      out_ += "<p class=\"caption\">" + escape(n) + "</p>";
  }

  void timeline() {
    const RunSeries* series = opt_.series;
    if (!series || series->empty()) {
      if (!opt_.series_note.empty())
        out_ += "<section id=\"timeline\"><h2>Time series</h2><p class=\"caption\">" +
                escape(opt_.series_note) + "</p></section>\n";
      return;
    }
    const double span = series->t_s.back() - series->t_s.front();
    out_ += fmt::format("<section id=\"timeline\"><h2>Time series</h2><div class=\"timelines\" "
                        "data-span=\"{}\">",
                        span);
    out_ += "<p class=\"caption\">" +
            escape(fmt::format("{} points over {}{}; each line drawn from at most {} buckets, "
                               "each keeping its lowest and highest value",
                               series->t_s.size(), html::duration_text(span),
                               series->source.empty() ? "" : " from " + series->source,
                               html::kTimeBuckets)) +
            " <span class=\"cursor-time\"></span></p>";
    // Findings with a timeline are marked where their evidence held; the rest are judgements
    // of the whole run, listed.
    std::vector<html::FindingMarks> marks;
    std::string whole_run;
    for (const Finding& f : run_.findings) {
      const auto tl = std::find_if(series->findings.begin(), series->findings.end(),
                                   [&](const FindingTimeline& t) { return t.finding_id == f.id; });
      if (tl == series->findings.end()) {
        whole_run += chip(f.status) + " " + escape(f.title) + " &nbsp; ";
        continue;
      }
      const std::string tip = tl->condition + ": held " + html::duration_text(tl->held_s) +
                              " in " + std::to_string(tl->spans.size()) +
                              (tl->spans.size() == 1 ? " span" : " spans") + ". " + f.evidence;
      marks.push_back({f.id, f.title, f.status, tip, tl->spans});
    }
    if (!marks.empty()) out_ += html::finding_strip(marks, series->t_s);
    if (!whole_run.empty())
      out_ += "<p class=\"caption\">" +
              std::string(marks.empty() ? "Findings over this span: "
                                        : "Findings judged on the whole run: ") +
              whole_run + "</p>";
    for (const SeriesPanel& p : series->panels)
      out_ += html::time_panel(p, series->t_s, html::kTimeBuckets, marks);
    for (const HeatStrip& h : series->strips) out_ += html::heat_strip(h, series->t_s);
    out_ += "</div></section>\n";
  }

  void environment() {
    if (run_.environment.empty()) return;
    out_ += "<section id=\"environment\"><h2>Environment</h2><table><tbody>";
    for (const Fact& f : run_.environment)
      out_ += "<tr><td style=\"width:30%\">" + escape(f.label.empty() ? f.key : f.label) +
              "</td><td>" + escape(fact_text(f)) + "</td></tr>";
    out_ += "</tbody></table></section>\n";
  }

  const Run& run_;
  const HtmlOptions& opt_;
  std::string out_;
};

}  // namespace

std::string render_html(const Run& run, const HtmlOptions& options) {
  return HtmlWriter(run, options).write();
}

}  // namespace gb::report
