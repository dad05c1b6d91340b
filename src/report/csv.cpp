// report/csv.cpp: the CSV printer (RFC 4180): one row per result, for a spreadsheet or a script.
//
//   key,label,value,unit,status,median,min,max,cv,n,reason
//   probe.gemm.bf16.tflops,BF16 GEMM 8192³,791,TFLOP/s,pass,791,789,793,0.0019,5,
//
// Numbers are written in full (the shortest text that reads back to the same double), never
// rounded for display; a missing number is an empty cell. cv is a fraction (stddev / mean), as in
// the JSON. Fields holding a comma, a double quote or a line break are quoted, quotes doubled;
// lines end in CRLF as the RFC says.
#include <fmt/format.h>

#include <cmath>
#include <string>

#include "report/report.hpp"

namespace gb::report {

namespace {

std::string csv_field(std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

std::string csv_number(double v) { return std::isfinite(v) ? fmt::format("{}", v) : ""; }

}  // namespace

std::string render_csv(const Run& run) {
  std::string out = "key,label,value,unit,status,median,min,max,cv,n,reason\r\n";
  for (const Result& r : run.results) {
    const bool stats = r.stats.n > 0;
    out += csv_field(r.key) + ',' + csv_field(r.label) + ',' +
           (r.value ? csv_number(*r.value) : "") + ',' + csv_field(r.unit) + ',' +
           std::string(to_string(r.status)) + ',' + (stats ? csv_number(r.stats.median) : "") +
           ',' + (stats ? csv_number(r.stats.min) : "") + ',' +
           (stats ? csv_number(r.stats.max) : "") + ',' +
           (r.stats.n >= 2 ? csv_number(r.stats.cv) : "") + ',' + std::to_string(r.stats.n) +
           ',' + csv_field(r.reason) + "\r\n";
  }
  return out;
}

}  // namespace gb::report
