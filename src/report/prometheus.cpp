// report/prometheus.cpp: see prometheus.hpp.
#include "report/prometheus.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <set>

#include "core/error.hpp"

namespace gb::report {

namespace {

bool name_char(char c, bool first, bool colon_ok) {
  const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  if (alpha || (colon_ok && c == ':')) return true;
  return !first && c >= '0' && c <= '9';
}

bool valid_name(std::string_view name, bool colon_ok) {
  if (name.empty()) return false;
  for (std::size_t i = 0; i < name.size(); ++i)
    if (!name_char(name[i], i == 0, colon_ok)) return false;
  return true;
}

}  // namespace

bool valid_metric_name(std::string_view name) { return valid_name(name, true); }

bool valid_label_name(std::string_view name) {
  return valid_name(name, false) && !name.starts_with("__");  // __ is Prometheus' own
}

std::string prometheus_escape_label(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (const char c : value) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string prometheus_escape_help(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string prometheus_number(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (value == 0) return "0";  // also -0
  char buf[32];
  // Whole numbers as integers (bytes, hertz): 1500000000 rather than 1.5e+09.
  if (std::fabs(value) < 1e15 && value == std::trunc(value)) {
    std::snprintf(buf, sizeof buf, "%.0f", value);
    return buf;
  }
  const auto r = std::to_chars(buf, buf + sizeof buf, value);
  return std::string(buf, r.ptr);
}

std::string format_prometheus(std::span<const MetricFamily> families) {
  std::string out;
  std::set<std::string_view> seen;
  for (const MetricFamily& f : families) {
    if (!valid_metric_name(f.name))
      throw Error(ErrorKind::runtime, "not a Prometheus metric name: '" + f.name + "'");
    if (!seen.insert(f.name).second)
      throw Error(ErrorKind::runtime, "metric family given twice: " + f.name);
    if (f.samples.empty()) continue;
    out += "# HELP " + f.name + " " + prometheus_escape_help(f.help) + "\n";
    out += "# TYPE " + f.name + (f.type == MetricType::counter ? " counter\n" : " gauge\n");
    for (const MetricSample& s : f.samples) {
      out += f.name;
      if (!s.labels.empty()) {
        out += '{';
        std::set<std::string_view> label_names;
        for (std::size_t i = 0; i < s.labels.size(); ++i) {
          const auto& [name, value] = s.labels[i];
          if (!valid_label_name(name) || !label_names.insert(name).second)
            throw Error(ErrorKind::runtime,
                        "bad or repeated label name '" + name + "' on " + f.name);
          out += (i ? ",": "") + name + "=\"" + prometheus_escape_label(value) + "\"";
        }
        out += '}';
      }
      out += ' ' + prometheus_number(s.value) + '\n';
    }
  }
  return out;
}

}  // namespace gb::report
