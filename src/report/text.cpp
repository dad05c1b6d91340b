// report/text.cpp: see text.hpp.
#include "report/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>

namespace gb::report::detail {

std::string format_number(double v) {
  if (!std::isfinite(v)) return "N/A";
  const double magnitude = std::fabs(v);
  int decimals = 0;
  if (magnitude > 0 && magnitude < 100)
    decimals = std::min(6, 2 - static_cast<int>(std::floor(std::log10(magnitude))));
  std::string s = fmt::format("{:.{}f}", v, decimals);
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  if (s == "-0") s = "0";
  return s;
}

namespace {

// "1 cores" -> "1 core", "1 processes" -> "1 process": only for plain lowercase words, so
// "GB/s" or "TFLOP/s" keep their s.
std::string unit_for(const std::string& number, const std::string& unit) {
  if (number != "1" || unit.size() < 2 || unit.back() != 's') return unit;
  if (!std::all_of(unit.begin(), unit.end(), [](char c) { return c >= 'a' && c <= 'z'; }))
    return unit;
  if (unit.size() > 4 && unit.compare(unit.size() - 4, 4, "sses") == 0)
    return unit.substr(0, unit.size() - 2);
  return unit.substr(0, unit.size() - 1);
}

}  // namespace

std::string value_text(const Result& r) {
  if (!r.value) return "-";
  // A count needs no unit word ("3 replays" is the label's job, not "3 count").
  const std::string number = format_number(*r.value);
  if (r.unit.empty() || r.unit == "count") return number;
  return number + " " + unit_for(number, r.unit);
}

std::string number_text(double v, const std::string& unit, int decimals) {
  std::string number;
  if (decimals < 0 || !std::isfinite(v)) {
    number = format_number(v);
  } else {
    number = fmt::format("{:.{}f}", v, decimals);
    if (decimals == 0 && std::fabs(v) >= 10000) {  // 12,345: digits a person can count
      const std::size_t first = number[0] == '-' ? 1 : 0;
      for (int i = static_cast<int>(number.size()) - 3; i > static_cast<int>(first); i -= 3)
        number.insert(static_cast<std::size_t>(i), ",");
    }
  }
  if (unit.empty() || unit == "count") return number;
  return number + " " + unit_for(number, unit);
}

std::string param_text(const Param& p) {
  return p.number ? number_text(*p.number, p.unit, p.decimals) : p.text;
}

std::string fact_text(const Fact& f) {
  if (f.number) return number_text(*f.number, f.unit, f.decimals);
  return f.value.empty() ? "N/A" : f.value;
}

std::optional<std::string> param_string(const Result& r, std::string_view name) {
  const Param* p = r.find_param(name);
  if (!p) return std::nullopt;
  return param_text(*p);
}

std::string cv_text(const Result& r) {
  if (!r.value || r.stats.n < 2) return "";
  return fmt::format("{:.1f} %", r.stats.cv * 100.0);
}

std::string ratio_text(const Result& r, std::string_view kind) {
  const Reference* ref = r.find_reference(kind);
  if (!ref || !r.value || ref->value <= 0) return "";
  return fmt::format("{:.0f} %", *r.value / ref->value * 100.0);
}

std::string status_word(Status s) {
  switch (s) {
    case Status::pass: return "pass";
    case Status::warn: return "WARN";
    case Status::fail: return "FAIL";
    case Status::invalid: return "INVALID";
    case Status::skipped: return "skipped";
    case Status::info: return "info";
  }
  return "info";
}

std::string_view status_color(Status s) {
  switch (s) {
    case Status::pass: return "32";
    case Status::warn: return "33";
    case Status::fail: return "1;31";
    case Status::invalid: return "35";
    case Status::skipped: return "2";
    case Status::info: return "";
  }
  return "";
}

std::string throttle_text(std::uint64_t bits) {
  static constexpr std::array<std::pair<std::uint64_t, const char*>, 9> kNames{{
      {0x1, "idle"},
      {0x2, "application clocks"},
      {0x4, "power cap"},
      {0x8, "HW slowdown"},
      {0x10, "sync boost"},
      {0x20, "SW thermal"},
      {0x40, "HW thermal"},
      {0x80, "power brake"},
      {0x100, "display clocks"},
  }};
  std::string out;
  std::uint64_t known = 0;
  for (const auto& [bit, name] : kNames) {
    known |= bit;
    if ((bits & bit) == 0) continue;
    if (!out.empty()) out += ", ";
    out += name;
  }
  if (bits & ~known) out += fmt::format("{}0x{:x}", out.empty() ? "" : ", ", bits & ~known);
  return out.empty() ? "none" : out;
}

std::string telemetry_text(const std::optional<Telemetry>& t) {
  if (!t) return "N/A (no NVML)";
  std::string sm = "SM N/A";
  if (t->sm_clock_mhz_min && t->sm_clock_mhz_max)
    sm = *t->sm_clock_mhz_min == *t->sm_clock_mhz_max
             ? fmt::format("SM {} MHz", format_number(*t->sm_clock_mhz_min))
             : fmt::format("SM {}-{} MHz", format_number(*t->sm_clock_mhz_min),
                           format_number(*t->sm_clock_mhz_max));
  else if (t->sm_clock_mhz_mean)
    sm = fmt::format("SM {} MHz", format_number(*t->sm_clock_mhz_mean));
  std::string power = "power N/A";
  const auto drawn = t->power_w_mean ? t->power_w_mean : t->power_w_max;
  if (drawn && t->power_limit_w)
    power = fmt::format("{} of {} W", format_number(*drawn), format_number(*t->power_limit_w));
  else if (drawn)
    power = fmt::format("{} W", format_number(*drawn));
  const std::string temp =
      t->temp_c_max ? fmt::format("{} C max", format_number(*t->temp_c_max)) : "temp N/A";
  const std::string throttle =
      t->throttle_reasons ? "throttle: " + throttle_text(*t->throttle_reasons) : "throttle N/A";
  std::string link = "PCIe N/A";
  if (t->pcie_gen_min || t->pcie_width_min)
    link = fmt::format("PCIe Gen{} x{}", t->pcie_gen_min ? std::to_string(*t->pcie_gen_min) : "?",
                       t->pcie_width_min ? std::to_string(*t->pcie_width_min) : "?");
  return fmt::format("{}, {}, {}, {}, {}", sm, power, temp, throttle, link);
}

std::string run_subtitle(const Run& run) {
  std::string s = run.tool_version.empty() ? "gpubase" : "gpubase " + run.tool_version;
  if (!run.started_at.empty()) s += ", started " + run.started_at;
  if (run.duration_s >= 0.1)
    s += ", took " + format_number(run.duration_s) + " s";
  else if (run.duration_s > 0)
    s += ", took < 0.1 s";
  return s;
}

bool has_verdict(const Run& run) {
  auto judged = [](Status s) {
    return s == Status::pass || s == Status::warn || s == Status::fail || s == Status::invalid;
  };
  return std::any_of(run.results.begin(), run.results.end(),
                     [&](const Result& r) { return judged(r.status); }) ||
         std::any_of(run.checklist.begin(), run.checklist.end(),
                     [&](const ChecklistRow& c) { return judged(c.status); });
}

std::string status_counts(const Run& run) {
  static constexpr Status kOrder[] = {Status::pass,    Status::warn,    Status::fail,
                                      Status::invalid, Status::skipped, Status::info};
  std::string out;
  for (const Status s : kOrder) {
    const auto n = std::count_if(run.results.begin(), run.results.end(),
                                 [&](const Result& r) { return r.status == s; });
    if (n == 0) continue;
    if (!out.empty()) out += ", ";
    out += fmt::format("{} {}", n, to_string(s));
  }
  return out.empty() ? "no results" : out;
}

namespace {

// A result no suite placed (a file written before sections were declared): grouped by the
// first two segments of its key, titled by them, laid out as figures against references.
std::string fallback_section(const std::string& key) {
  const auto first = key.find('.');
  if (first == std::string::npos) return key;
  const auto second = key.find('.', first + 1);
  return second == std::string::npos ? key : key.substr(0, second);
}

}  // namespace

std::vector<Section> group_sections(const Run& run) {
  std::vector<Section> sections;
  for (const Result& r : run.results) {
    const std::string id = r.section.empty() ? fallback_section(r.key) : r.section;
    auto it = std::find_if(sections.begin(), sections.end(),
                           [&](const Section& s) { return s.id == id; });
    if (it == sections.end()) {
      const SectionSpec* spec = run.find_section(id);
      sections.push_back({id, spec ? spec->title : id,
                          spec ? spec->layout : Layout::benchmark, {}});
      it = sections.end() - 1;
    }
    it->results.push_back(&r);
  }
  return sections;
}

std::vector<TrainingRow> training_rows(const Section& s) {
  std::vector<TrainingRow> rows;
  std::vector<std::string> prefixes;  // the configuration part of the key, per row
  for (const Result* r : s.results) {
    const auto dot = r->key.rfind('.');
    const std::string prefix = dot == std::string::npos ? r->key : r->key.substr(0, dot);
    const std::string figure = dot == std::string::npos ? "" : r->key.substr(dot + 1);
    auto it = std::find(prefixes.begin(), prefixes.end(), prefix);
    if (it == prefixes.end()) {
      prefixes.push_back(prefix);
      TrainingRow row;
      row.model = param_string(*r, "model").value_or(prefix);
      std::string precision = param_string(*r, "precision").value_or("");
      for (char& c : precision) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      row.precision = precision;
      row.batch = param_string(*r, "batch").value_or("");
      row.graph = param_string(*r, "graph").value_or("no") == "yes";
      row.main = r;
      rows.push_back(std::move(row));
      it = prefixes.end() - 1;
    }
    TrainingRow& row = rows[static_cast<std::size_t>(it - prefixes.begin())];
    if (figure == "images_per_s") {
      row.images = r;
      row.main = r;
    } else if (figure == "step_ms") {
      row.step = r;
    } else if (figure == "memory_gib") {
      row.memory = r;
    } else if (figure == "data_wait_pct") {
      row.data_wait = r;
    }
  }
  return rows;
}

std::string step_text(const TrainingRow& row, bool range) {
  if (!row.step || !row.step->value) return "-";
  const std::string median = format_number(*row.step->value);
  if (!range || row.step->stats.n < 2) return median;
  return fmt::format("{} ({}-{})", median, format_number(row.step->stats.min),
                     format_number(row.step->stats.max));
}

std::string data_wait_text(const TrainingRow& row) {
  if (!row.data_wait || !row.data_wait->value) return "";
  const auto data = param_string(*row.data_wait, "data");
  return "fed by the loader" + (data ? " (" + *data + ")" : std::string()) +
         ": the GPU waited for data " + format_number(*row.data_wait->value) +
         " % of step time";
}

std::string torch_ratio_text(const TrainingRow& row) {
  return row.images ? ratio_text(*row.images, "pytorch") : "";
}

std::string torch_column_note(const std::vector<TrainingRow>& rows) {
  for (const TrainingRow& row : rows) {
    const Reference* ref = row.images ? row.images->find_reference("pytorch") : nullptr;
    if (!ref || ref->origin != "quoted") continue;
    return "vs torch: against PyTorch's figure for the same configuration, quoted from a run "
           "on the same card model, not measured in this run (--verbose names each; "
           "bench/train_vs_torch.py measures both side by side)";
  }
  return "";
}

std::string training_notes(const TrainingRow& row) {
  if (!row.images) return "";
  const Result& r = *row.images;
  std::vector<std::string> parts;
  const auto first = param_string(r, "first_loss");
  const auto last = param_string(r, "final_loss");
  if (first && last)
    parts.push_back("loss " + *first + " -> " + *last);
  else if (last)
    parts.push_back("loss " + *last);
  if (const auto p = param_string(r, "parameters")) parts.push_back(*p + " parameters");
  if (const auto p = param_string(r, "input")) parts.push_back("input " + *p);
  if (const auto p = param_string(r, "loss_scale"))
    parts.push_back("loss scale " + *p + " (" + param_string(r, "skipped_steps").value_or("0") +
                    " steps skipped)");
  if (const auto p = param_string(r, "steps")) parts.push_back(*p + " timed steps");
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

std::string subject_text(const Result& r) {
  std::vector<std::string> parts;
  if (const auto comm = param_string(r, "comm")) parts.push_back(*comm);
  if (const auto pid = param_string(r, "pid")) parts.push_back("pid " + *pid);
  if (const auto pids = param_string(r, "pids")) parts.push_back("pids " + *pids);
  if (const auto core = param_string(r, "core")) parts.push_back(*core);
  if (const auto device = param_string(r, "device")) parts.push_back(*device);
  if (const auto verdict = param_string(r, "verdict")) {
    const auto rates = param_string(r, "images/s");
    parts.push_back(*verdict + (rates ? " (" + *rates + " images/s)" : std::string()));
  }
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

namespace {

// "no NVIDIA driver found (CUDA: ...); install ..." -> "no NVIDIA driver found"; a long first
// clause is cut at its first colon or comma too.
std::string first_clause(std::string_view reason) {
  auto cut_at = [&](std::initializer_list<std::string_view> seps, std::size_t cut) {
    for (const std::string_view sep : seps) {
      const std::size_t at = reason.find(sep);
      if (at != std::string_view::npos && at >= 6) cut = std::min(cut, at);
    }
    return cut;
  };
  std::size_t cut = cut_at({" (", "; "}, reason.size());
  if (cut > 60) cut = cut_at({": ", ", "}, cut);
  return std::string(reason.substr(0, cut));
}

}  // namespace

std::string RepeatedReasons::text(std::string_view reason) {
  std::string out(reason);
  // Longest first: a reason that holds a shorter one seen before is replaced whole.
  std::vector<const std::string*> order;
  for (const std::string& s : seen_) order.push_back(&s);
  std::sort(order.begin(), order.end(),
            [](const std::string* a, const std::string* b) { return a->size() > b->size(); });
  bool shortened = false;
  for (const std::string* s : order) {
    const std::size_t at = out.find(*s);
    if (at == std::string::npos) continue;
    out.replace(at, s->size(), first_clause(*s) + " (as above)");
    shortened = true;
    break;
  }
  if (!shortened && reason.size() >= kMinChars) seen_.emplace_back(reason);
  return out;
}

std::size_t display_width(std::string_view s) {
  std::size_t n = 0;
  for (const char c : s)
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
  return n;
}

std::string pad_right(std::string_view s, std::size_t width) {
  const std::size_t w = display_width(s);
  return std::string(s) + std::string(w < width ? width - w : 0, ' ');
}

std::string pad_left(std::string_view s, std::size_t width) {
  const std::size_t w = display_width(s);
  return std::string(w < width ? width - w : 0, ' ') + std::string(s);
}

namespace {

// Byte offset after `columns` code points of s (or s.size()).
std::size_t byte_offset(std::string_view s, std::size_t columns) {
  std::size_t seen = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) {
      if (seen == columns) return i;
      ++seen;
    }
  }
  return s.size();
}

}  // namespace

namespace {

// A unit after a number stays on the number's line: "700 W", "80 %", "1290 MHz".
bool is_unit_word(std::string_view word) {
  while (!word.empty() && (word.back() == ',' || word.back() == ';' || word.back() == ')' ||
                           word.back() == '.'))
    word.remove_suffix(1);
  static constexpr std::string_view kUnits[] = {"%",       "W",     "C",  "MHz", "GB/s", "GiB",
                                                "TFLOP/s", "TOP/s", "us", "µs",  "s",    "GB"};
  return std::find(std::begin(kUnits), std::end(kUnits), word) != std::end(kUnits);
}

bool ends_with_digit(std::string_view word) {
  return !word.empty() && word.back() >= '0' && word.back() <= '9';
}

// Words of `text`, a number and its unit joined into one.
std::vector<std::string> words_of(std::string_view text) {
  std::vector<std::string> words;
  std::size_t pos = 0;
  while (pos < text.size()) {
    while (pos < text.size() && text[pos] == ' ') ++pos;
    if (pos >= text.size()) break;
    std::size_t end = text.find(' ', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view word = text.substr(pos, end - pos);
    if (!words.empty() && ends_with_digit(words.back()) && is_unit_word(word))
      words.back() += " " + std::string(word);
    else
      words.emplace_back(word);
    pos = end;
  }
  return words;
}

}  // namespace

std::vector<std::string> wrap(std::string_view text, std::size_t width) {
  if (width == 0) width = 1;
  std::vector<std::string> lines;
  std::string line;
  for (const std::string& whole : words_of(text)) {
    std::string_view word = whole;
    while (display_width(word) > width) {  // a word longer than a line: split it
      if (!line.empty()) {
        lines.push_back(std::move(line));
        line.clear();
      }
      const std::size_t cut = byte_offset(word, width);
      lines.emplace_back(word.substr(0, cut));
      word = word.substr(cut);
    }
    if (word.empty()) continue;
    const std::size_t needed = display_width(line) + (line.empty() ? 0 : 1) + display_width(word);
    if (!line.empty() && needed > width) {
      lines.push_back(std::move(line));
      line.clear();
    }
    if (!line.empty()) line += ' ';
    line += word;
  }
  if (!line.empty() || lines.empty()) lines.push_back(std::move(line));
  return lines;
}

}  // namespace gb::report::detail
