// report/html_svg.cpp: see html_svg.hpp. Coordinates are in viewBox units (kChartWidth wide);
// the page scales each chart to its box. Texts are kept inside the box by truncating labels
// (the full text in a <title> for hover) and by reserving columns for values.
#include "report/html_svg.hpp"

#include "core/format.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

#include "report/text.hpp"

namespace gb::report::html {

namespace {

using detail::display_width;
using detail::format_number;

constexpr double W = kChartWidth;

std::string n1(double v) { return fmt::format("{:.1f}", v); }

// Width of a text at 12 px in a common sans-serif, a little generous (DejaVu Sans, the widest
// of the usual defaults): capitals and digits 8 units, lower case 7, spaces and narrow
// punctuation 4. A label cut to fit this estimate fits the box in any of them.
double text_units(std::string_view text) {
  double w = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if ((c & 0xC0) == 0x80) continue;
    if (c == ' ' || c == '.' || c == ',' || c == ':' || c == 'i' || c == 'l' || c == 'j' ||
        c == '(' || c == ')' || c == '\'' || c == '|' || c == 'I' || c == 't' || c == 'f')
      w += 4.8;
    else if (c == 'm' || c == 'w' || c == 'M' || c == 'W' || c == '%')
      w += 11.5;
    else if (std::isupper(c) || std::isdigit(c) || c >= 0x80 || c == '+' || c == '=')
      w += 8.6;
    else
      w += 7.5;
  }
  return w;
}

// The text cut (with an ellipsis) to fit `units` at 12 px.
std::string fit(std::string_view text, double units) {
  if (text_units(text) <= units) return std::string(text);
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    std::size_t len = 1;
    while (i + len < text.size() && (static_cast<unsigned char>(text[i + len]) & 0xC0) == 0x80)
      ++len;
    if (text_units(out + std::string(text.substr(i, len))) + 9 > units) break;
    out += text.substr(i, len);
    i += len;
  }
  return out + "…";
}

std::string status_fill(Status s) {
  switch (s) {
    case Status::pass: return "#2e7d32";
    case Status::warn: return "#e08a00";
    case Status::fail: return "#c62828";
    case Status::invalid: return "#7b1fa2";
    case Status::skipped: return "#9e9e9e";
    case Status::info: return "#4a6fa5";
  }
  return "#4a6fa5";
}

std::string tick_color(std::string_view kind) {
  if (kind == "datasheet") return "#222222";
  if (kind == "clock_adjusted") return "#777777";
  if (kind == "achievable") return "#e65100";
  if (kind == "pytorch") return "#1565c0";
  if (kind == "torch_compile") return "#6a1b9a";
  if (kind == "torchvision") return "#00838f";
  return "#555555";
}

constexpr const char* kLineColors[] = {"#1565c0", "#e65100", "#2e7d32", "#6a1b9a", "#00838f",
                                       "#c62828"};

// About n round numbers covering [lo, hi].
std::vector<double> nice_ticks(double lo, double hi, int n = 5) {
  std::vector<double> ticks;
  if (!(hi > lo)) return {lo};
  const double raw = (hi - lo) / n;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (const double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (raw <= m * mag) {
      step = m * mag;
      break;
    }
  for (double v = std::ceil(lo / step - 1e-9) * step; v < hi + step * (1 - 1e-9); v += step)
    ticks.push_back(std::fabs(v) < step * 1e-9 ? 0 : v);
  return ticks;  // the last tick is at or above hi: an axis topped by it holds every value
}

std::string svg_open(const std::string& id, const std::string& kind, double height,
                     const std::string& aria) {
  return fmt::format(
      "<svg class=\"chart {}\" id=\"{}\" viewBox=\"0 0 {} {}\" preserveAspectRatio=\"xMinYMin "
      "meet\" role=\"img\" aria-label=\"{}\">",
      kind, escape(id), n1(W), n1(height), escape(aria));
}

std::string text_el(double x, double y, std::string_view cls, std::string_view anchor,
                    const std::string& text, const std::string& full = "") {
  std::string out = fmt::format("<text class=\"{}\" x=\"{}\" y=\"{}\" text-anchor=\"{}\">", cls,
                                n1(x), n1(y), anchor);
  if (!full.empty() && full != text) out += "<title>" + escape(full) + "</title>";
  return out + escape(text) + "</text>";
}

}  // namespace

std::string escape(std::string_view text) { return html_escape(text); }

std::string duration_text(double s) {
  if (s < 120) return format_number(s) + " s";
  if (s < 7200) return format_number(s / 60) + " min";
  return format_number(s / 3600) + " h";
}

std::string bar_chart(const std::string& id, const std::string& unit, const std::vector<Bar>& bars,
                      const std::string& whisker_note) {
  constexpr double kLabelW = 300, kValueW = 120, kRowH = 22, kBarH = 14;
  const double left = kLabelW + 10, right = W - kValueW - 10;
  // The legend: one entry per tick kind, then the whisker's meaning.
  std::vector<const Tick*> kinds;
  bool whiskers = false;
  double lo = 0, hi = 0;
  for (const Bar& b : bars) {
    for (const Tick& t : b.ticks) {
      if (std::none_of(kinds.begin(), kinds.end(), [&](const Tick* k) { return k->kind == t.kind; }))
        kinds.push_back(&t);
      lo = std::min(lo, t.value);
      hi = std::max(hi, t.value);
    }
    if (b.value) lo = std::min(lo, *b.value), hi = std::max(hi, *b.value);
    if (b.low) lo = std::min(lo, *b.low), whiskers = true;
    if (b.high) hi = std::max(hi, *b.high), whiskers = true;
  }
  if (!(hi > lo)) hi = lo + 1;
  const double span = hi - lo;
  if (hi > 0) hi += span * 0.03;
  if (lo < 0) lo -= span * 0.03;
  auto x = [&](double v) { return left + (v - lo) / (hi - lo) * (right - left); };

  const bool legend = !kinds.empty() || (whiskers && !whisker_note.empty());
  const double top = legend ? 28 : 8;
  const double height = top + static_cast<double>(bars.size()) * kRowH + 26;
  std::string out = svg_open(id, "bars", height, unit.empty() ? "bars" : "bars in " + unit);

  if (legend) {
    double lx = left;
    for (const Tick* k : kinds) {
      out += fmt::format("<line class=\"legend\" x1=\"{}\" y1=\"8\" x2=\"{}\" y2=\"20\" "
                         "stroke=\"{}\" stroke-width=\"3\"/>",
                         n1(lx), n1(lx), tick_color(k->kind));
      out += text_el(lx + 6, 18, "legend", "start", k->label);
      lx += 20 + text_units(k->label);
    }
    if (whiskers && !whisker_note.empty()) {
      out += fmt::format("<line class=\"legend\" x1=\"{}\" y1=\"14\" x2=\"{}\" y2=\"14\" "
                         "stroke=\"#333\" stroke-width=\"1.5\"/>",
                         n1(lx), n1(lx + 14));
      out += text_el(lx + 18, 18, "legend", "start", whisker_note);
    }
  }
  if (lo < 0)
    out += fmt::format("<line class=\"zero\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>",
                       n1(x(0)), n1(top - 4), n1(height - 22));
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    const double y = top + static_cast<double>(i) * kRowH;
    const double cy = y + kBarH / 2;
    out += "<g class=\"row\">";
    out += text_el(kLabelW, cy + 4, "label", "end", fit(b.label, kLabelW - 4), b.label);
    if (b.value) {
      const double x0 = x(std::min(0.0, *b.value)), x1 = x(std::max(0.0, *b.value));
      out += fmt::format(
          "<rect class=\"mark\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\">"
          "<title>{}</title></rect>",
          n1(x0), n1(y), n1(std::max(1.0, x1 - x0)), n1(kBarH), status_fill(b.status),
          escape(b.tip.empty() ? b.label + ": " + b.value_text : b.tip));
    }
    if (b.low && b.high) {
      const double a = x(*b.low), c = x(*b.high);
      out += fmt::format(
          "<path class=\"whisker\" d=\"M{0} {2}V{3}M{0} {4}H{1}M{1} {2}V{3}\"/>", n1(a), n1(c),
          n1(cy - 5), n1(cy + 5), n1(cy));
    }
    for (const Tick& t : b.ticks)
      out += fmt::format(
          "<line class=\"tick\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"{3}\">"
          "<title>{4}: {5}</title></line>",
          n1(x(t.value)), n1(y - 3), n1(y + kBarH + 3), tick_color(t.kind), escape(t.label),
          escape(format_number(t.value) + (unit.empty() ? "" : " " + unit)));
    out += text_el(W - 4, cy + 4, b.value ? "label value" : "label value skipped", "end",
                   fit(b.value_text, kValueW - 6), b.value_text);
    out += "</g>";
  }
  // The value axis.
  const double axis_y = height - 20;
  out += fmt::format("<line class=\"axis\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>", n1(left),
                     n1(axis_y), n1(right), n1(axis_y));
  for (const double t : nice_ticks(lo, hi)) {
    if (t > hi || t < lo) continue;
    out += fmt::format("<line class=\"axis\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>",
                       n1(x(t)), n1(axis_y), n1(axis_y + 4));
    out += text_el(x(t), axis_y + 15, "axis", "middle", format_number(t));
  }
  out += text_el(right + 8, axis_y + 15, "axis", "start", unit);
  return out + "</svg>";
}

std::string sweep_chart(const SweepChart& c) {
  constexpr double kHeight = 290, top = 40, bottom = kHeight - 46;
  const bool second = !c.points2.empty();
  const double left = 80, right = W - (second ? 90 : 30);
  double x_lo = std::numeric_limits<double>::max(), x_hi = std::numeric_limits<double>::lowest();
  double y_hi = 0, y2_hi = 0;
  for (const Point& p : c.points) {
    x_lo = std::min(x_lo, p.x), x_hi = std::max(x_hi, p.x), y_hi = std::max(y_hi, p.y);
  }
  for (const Point& p : c.points2) y2_hi = std::max(y2_hi, p.y);
  const bool log_x = c.log_x && x_lo > 0 && x_hi / x_lo >= 4;
  auto xt = [&](double v) { return log_x ? std::log2(v) : v; };
  const double a = xt(x_lo), b = xt(x_hi) > xt(x_lo) ? xt(x_hi) : xt(x_lo) + 1;
  auto x = [&](double v) { return left + 20 + (xt(v) - a) / (b - a) * (right - left - 40); };
  const auto y_ticks = nice_ticks(0, y_hi > 0 ? y_hi * 1.02 : 1);
  const double y_top = y_ticks.back();
  auto y = [&](double v) { return bottom - v / y_top * (bottom - top); };
  const auto y2_ticks = nice_ticks(0, y2_hi > 0 ? y2_hi * 1.02 : 1);
  const double y2_top = y2_ticks.back();
  auto y2 = [&](double v) { return bottom - v / y2_top * (bottom - top); };

  std::string out = svg_open(c.id, "sweep", kHeight, c.y_name + " against " + c.x_name);
  if (c.shade_from_x) {
    const double sx = x(*c.shade_from_x);
    out += fmt::format("<rect class=\"shade\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\">"
                       "<title>{}</title></rect>",
                       n1(sx), n1(top), n1(std::max(1.0, right - sx)), n1(bottom - top),
                       escape(c.shade_label));
    out += text_el(right - 4, top + 14, "label shade-label", "end", fit(c.shade_label, 0.55 * W),
                   c.shade_label);
  }
  for (const double t : y_ticks) {
    out += fmt::format("<line class=\"grid\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>", n1(left),
                       n1(y(t)), n1(right), n1(y(t)));
    out += text_el(left - 6, y(t) + 4, "axis", "end", format_number(t));
  }
  if (second)
    for (const double t : y2_ticks) out += text_el(right + 6, y2(t) + 4, "axis", "start", format_number(t));
  for (const Point& p : c.points) out += text_el(x(p.x), bottom + 16, "axis", "middle", format_number(p.x));
  out += text_el((left + right) / 2, bottom + 36, "axis", "middle", c.x_name);
  out += text_el(left - 70, top - 22, "axis", "start", c.y_name);
  if (c.marker_x) {
    const double mx = x(*c.marker_x);
    out += fmt::format("<line class=\"marker\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>",
                       n1(mx), n1(top), n1(bottom));
    const bool right_half = mx > (left + right) / 2;
    out += text_el(right_half ? mx - 6 : mx + 6, top + 30, "label marker-label",
                   right_half ? "end" : "start", fit(c.marker_label, 0.45 * W), c.marker_label);
  }
  auto line = [&](const std::vector<Point>& pts, auto&& yf, const char* color, bool dashed,
                  const std::string& name) {
    std::string d;
    for (const Point& p : pts) d += (d.empty() ? "M" : "L") + n1(x(p.x)) + " " + n1(yf(p.y));
    std::string s = fmt::format("<path class=\"line\" d=\"{}\" stroke=\"{}\"{}/>", d, color,
                                dashed ? " stroke-dasharray=\"6 4\"" : "");
    for (const Point& p : pts)
      s += fmt::format("<circle class=\"mark\" cx=\"{}\" cy=\"{}\" r=\"4.5\" fill=\"{}\" "
                       "stroke=\"{}\"><title>{}</title></circle>",
                       n1(x(p.x)), n1(yf(p.y)), dashed ? "#fff" : color, color,
                       escape(p.tip.empty() ? name + ": " + format_number(p.y) : p.tip));
    return s;
  };
  out += line(c.points, y, kLineColors[0], false, c.y_name);
  if (second) {
    out += line(c.points2, y2, kLineColors[1], true, c.y2_name);
    out += text_el(W - 4, top - 22, "axis", "end", c.y2_name + " (dashed, right axis)");
  }
  return out + "</svg>";
}

std::string history_chart(const std::string& id, const std::string& title,
                          const std::vector<double>& values) {
  SweepChart c;
  c.id = id;
  c.x_name = "step of the history";
  c.log_x = false;
  c.y_name = title;
  for (std::size_t i = 0; i < values.size(); ++i)
    c.points.push_back({static_cast<double>(i + 1), values[i],
                        fmt::format("{} {}: {}", c.x_name, i + 1, format_number(values[i]))});
  return sweep_chart(c);
}

namespace {

struct Bucketed {
  std::vector<double> lo, hi;  // NaN where the bucket has no finite value
};

// Buckets by time: each point falls in floor((t - t0) / span * n); min and max per bucket.
Bucketed bucket(const std::vector<double>& t, const std::vector<double>& v, std::size_t n) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Bucketed b{std::vector<double>(n, nan), std::vector<double>(n, nan)};
  if (t.empty()) return b;
  const double t0 = t.front(), span = std::max(1e-9, t.back() - t0);
  for (std::size_t i = 0; i < t.size() && i < v.size(); ++i) {
    if (!std::isfinite(v[i])) continue;
    const auto k = std::min(n - 1, static_cast<std::size_t>((t[i] - t0) / span * static_cast<double>(n)));
    if (std::isnan(b.lo[k]) || v[i] < b.lo[k]) b.lo[k] = v[i];
    if (std::isnan(b.hi[k]) || v[i] > b.hi[k]) b.hi[k] = v[i];
  }
  return b;
}

std::vector<double> time_ticks(double span) {
  static constexpr double kSteps[] = {1,   2,    5,    10,   15,    30,    60,    120,   300,
                                      600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400};
  double step = kSteps[std::size(kSteps) - 1];
  for (const double s : kSteps)
    if (span / s <= 8) {
      step = s;
      break;
    }
  std::vector<double> out;
  for (double v = 0; v <= span + 1e-9; v += step) out.push_back(v);
  return out;
}

std::string time_axis(double left, double right, double y, double span) {
  std::string out = fmt::format("<line class=\"axis\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>",
                                n1(left), n1(y), n1(right), n1(y));
  for (const double t : time_ticks(span)) {
    const double x = left + (span > 0 ? t / span : 0) * (right - left);
    out += fmt::format("<line class=\"axis\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>", n1(x),
                       n1(y), n1(y + 4));
    out += text_el(x, y + 15, "axis", t == 0 ? "start" : "middle", duration_text(t));
  }
  return out;
}

}  // namespace

namespace {

// A span's x range on a time axis from left to right over t_s's span, clipped to the axis.
std::pair<double, double> span_x(const FindingSpan& sp, const std::vector<double>& t_s,
                                 double left, double right) {
  const double t0 = t_s.front(), span = t_s.back() - t_s.front();
  auto x = [&](double t) {
    return left + (span > 0 ? std::clamp((t - t0) / span, 0.0, 1.0) : 0) * (right - left);
  };
  const double a = x(sp.from_s), b = x(sp.to_s);
  return {a, std::max(b, a + 1.5)};  // at least visible
}

}  // namespace

std::string finding_strip(const std::vector<FindingMarks>& findings, const std::vector<double>& t_s) {
  constexpr double left = 60, top = 24, row_h = 26;
  const double right = W - 20;
  const double height = top + row_h * static_cast<double>(findings.size()) + 24;
  const double span = t_s.empty() ? 0 : t_s.back() - t_s.front();
  std::string out = svg_open("series-findings", "timeline findings", height,
                             "when each finding held");
  out += text_el(left, 14, "label panel-title", "start", "Findings on the timeline");
  for (std::size_t i = 0; i < findings.size(); ++i) {
    const FindingMarks& f = findings[i];
    const double y = top + row_h * static_cast<double>(i);
    const std::string fill = status_fill(f.status);
    out += fmt::format("<g class=\"finding\" data-finding=\"{}\">", escape(f.id));
    out += fmt::format("<line class=\"grid\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>", n1(left),
                       n1(y + 21), n1(right), n1(y + 21));
    std::string label = f.id + ": " + f.title;
    if (f.spans.empty()) label += " (at no single sample)";
    out += text_el(left, y + 10, "label finding-label", "start", fit(label, right - left), f.tip);
    for (const FindingSpan& sp : f.spans) {
      const auto [a, b] = span_x(sp, t_s, left, right);
      out += fmt::format("<rect class=\"mark finding\" x=\"{}\" y=\"{}\" width=\"{}\" "
                         "height=\"8\" fill=\"{}\"><title>{}</title></rect>",
                         n1(a), n1(y + 13), n1(b - a), fill,
                         escape(f.id + ": " + duration_text(sp.from_s - t_s.front()) + " to " +
                                duration_text(sp.to_s - t_s.front()) + "\n" + f.tip));
    }
    out += "</g>";
  }
  const double axis_y = top + row_h * static_cast<double>(findings.size());
  out += time_axis(left, right, axis_y, span);
  out += fmt::format("<line class=\"cursor\" x1=\"0\" y1=\"{}\" x2=\"0\" y2=\"{}\" "
                     "visibility=\"hidden\"/>",
                     n1(top), n1(axis_y));
  return out + "</svg>";
}

std::string time_panel(const SeriesPanel& panel, const std::vector<double>& t_s,
                       std::size_t buckets, const std::vector<FindingMarks>& findings) {
  constexpr double kHeight = 170, left = 60, top = 30, bottom = kHeight - 26;
  const double right = W - 20;
  const double span = t_s.empty() ? 0 : t_s.back() - t_s.front();
  const bool every_point = t_s.size() <= buckets;
  const std::size_t n = every_point ? t_s.size() : buckets;
  std::vector<Bucketed> lines;
  double data_hi = 0;
  for (const SeriesLine& l : panel.lines) {
    Bucketed b;
    if (every_point) {
      b.lo = l.values;
      b.hi = l.values;
      b.lo.resize(n, std::numeric_limits<double>::quiet_NaN());
      b.hi.resize(n, std::numeric_limits<double>::quiet_NaN());
    } else {
      b = bucket(t_s, l.values, n);
    }
    for (const double v : b.hi)
      if (std::isfinite(v)) data_hi = std::max(data_hi, v);
    lines.push_back(std::move(b));
  }
  const auto ticks = nice_ticks(0, panel.y_max > 0 ? panel.y_max : (data_hi > 0 ? data_hi : 1), 3);
  const double y_top = std::max(ticks.back(), panel.y_max);
  auto y = [&](double v) { return bottom - std::clamp(v / y_top, 0.0, 1.0) * (bottom - top); };
  auto x_of = [&](std::size_t k) {
    if (every_point)
      return left + (span > 0 ? (t_s[k] - t_s.front()) / span : 0) * (right - left);
    return left + (static_cast<double>(k) + 0.5) / static_cast<double>(n) * (right - left);
  };

  std::string out = svg_open("series-" + panel.id, "timeline", kHeight,
                             panel.title + " over time");
  out += text_el(left, 14, "label panel-title", "start",
                 panel.title + (panel.unit.empty() ? "" : " (" + panel.unit + ")"));
  double lx = left + 24 + text_units(panel.title + " (" + panel.unit + ")") * 1.1;
  for (std::size_t i = 0; i < panel.lines.size(); ++i) {
    const char* color = kLineColors[i % std::size(kLineColors)];
    out += fmt::format("<rect class=\"legend\" x=\"{}\" y=\"6\" width=\"12\" height=\"4\" "
                       "fill=\"{}\"/>",
                       n1(lx), color);
    out += text_el(lx + 16, 14, "legend", "start", panel.lines[i].label);
    lx += 30 + text_units(panel.lines[i].label);
  }
  for (const FindingMarks& f : findings)
    for (const FindingSpan& sp : f.spans) {
      const auto [a, b] = span_x(sp, t_s, left, right);
      out += fmt::format("<rect class=\"finding-band\" data-finding=\"{}\" x=\"{}\" y=\"{}\" "
                         "width=\"{}\" height=\"{}\" fill=\"{}\"/>",
                         escape(f.id), n1(a), n1(top), n1(b - a), n1(bottom - top),
                         status_fill(f.status));
    }
  for (const double t : ticks) {
    out += fmt::format("<line class=\"grid\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>", n1(left),
                       n1(y(t)), n1(right), n1(y(t)));
    out += text_el(left - 6, y(t) + 4, "axis", "end", format_number(t));
  }
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::string d;
    bool pen = false;
    for (std::size_t k = 0; k < n; ++k) {
      if (!std::isfinite(lines[i].hi[k])) {
        pen = false;
        continue;
      }
      const double x = x_of(k);
      d += (pen ? "L" : "M") + n1(x) + " " + n1(y(lines[i].hi[k]));
      if (lines[i].lo[k] != lines[i].hi[k]) d += "L" + n1(x) + " " + n1(y(lines[i].lo[k]));
      pen = true;
    }
    if (d.empty()) continue;  // a line never measured: no mark
    out += fmt::format("<path class=\"mark line\" data-line=\"{}\" d=\"{}\" stroke=\"{}\">"
                       "<title>{}</title></path>",
                       escape(panel.lines[i].id), d, kLineColors[i % std::size(kLineColors)],
                       escape(panel.lines[i].label));
  }
  out += time_axis(left, right, bottom, span);
  out += fmt::format("<line class=\"cursor\" x1=\"0\" y1=\"{}\" x2=\"0\" y2=\"{}\" "
                     "visibility=\"hidden\"/>",
                     n1(top), n1(bottom));
  return out + "</svg>";
}

std::string heat_strip(const HeatStrip& strip, const std::vector<double>& t_s,
                       std::size_t buckets) {
  const std::size_t rows = strip.rows.size();
  const double row_h = rows > 48 ? 5 : rows > 24 ? 8 : 12;
  const double left = 60, top = 24, right = W - 20;
  const double height = top + static_cast<double>(rows) * row_h + 26;
  const double span = t_s.empty() ? 0 : t_s.back() - t_s.front();
  const std::size_t n = std::max<std::size_t>(1, std::min(buckets, t_s.size()));
  const double cell_w = (right - left) / static_cast<double>(n);
  std::string out = svg_open("series-" + strip.id, "heat timeline", height, strip.title);
  out += text_el(left, 14, "label panel-title", "start",
                 strip.title + (strip.unit.empty() ? "" : " (" + strip.unit + ")"));
  // The scale: five swatches from 0 to 100.
  for (int i = 0; i <= 4; ++i) {
    const double x = right - 200 + i * 40;
    out += fmt::format("<rect class=\"legend\" x=\"{}\" y=\"4\" width=\"14\" height=\"12\" "
                       "fill=\"hsl(8,70%,{}%)\"/>",
                       n1(x), 97 - i * 14);
    out += text_el(x + 17, 14, "legend", "start", std::to_string(i * 25));
  }
  for (std::size_t r = 0; r < rows; ++r) {
    const double y = top + static_cast<double>(r) * row_h;
    const std::vector<double>& v = strip.values[r];
    const Bucketed b = bucket(t_s, v, n);
    out += fmt::format("<g class=\"mark heat-row\" data-row=\"{}\"><title>{}</title>",
                       escape(strip.rows[r]), escape(strip.rows[r]));
    // Runs of cells of the same shade (10 levels) as one rectangle: a small file for a long run.
    std::size_t k = 0;
    while (k < n) {
      if (!std::isfinite(b.hi[k])) {
        ++k;
        continue;
      }
      const int level = static_cast<int>(std::clamp(b.hi[k], 0.0, 100.0) / 10.0 + 0.5);
      std::size_t end = k + 1;
      while (end < n && std::isfinite(b.hi[end]) &&
             static_cast<int>(std::clamp(b.hi[end], 0.0, 100.0) / 10.0 + 0.5) == level)
        ++end;
      out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" "
                         "fill=\"hsl(8,70%,{}%)\"/>",
                         n1(left + static_cast<double>(k) * cell_w), n1(y),
                         n1(static_cast<double>(end - k) * cell_w), n1(row_h - 1),
                         97 - level * 56 / 10);
      k = end;
    }
    out += "</g>";
    if (row_h >= 8 || r % 4 == 0)
      out += text_el(left - 6, y + row_h - 2, "label row-label", "end", fit(strip.rows[r], 50),
                     strip.rows[r]);
  }
  out += time_axis(left, right, height - 22, span);
  return out + "</svg>";
}

}  // namespace gb::report::html
