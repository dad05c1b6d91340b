// core/json.cpp: see json.hpp. Optional fields are written as null, never invented.
#include "core/json.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace gb {

namespace {

template <typename T>
Json opt(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

// A whole number of type T from a file value, or nothing when it is not a number that fits (a
// huge or fractional value from a damaged file is no value, not an overflowing conversion).
template <typename T>
std::optional<T> whole_number(const Json& v) {
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<T>::max())) return std::nullopt;
    return static_cast<T>(u);
  }
  if (v.is_number_integer()) {
    const auto i = v.get<std::int64_t>();
    if constexpr (std::is_unsigned_v<T>) {
      if (i < 0) return std::nullopt;
      return static_cast<T>(i);  // non-negative int64 fits every unsigned type we read
    } else {
      if (i < std::numeric_limits<T>::min() || i > std::numeric_limits<T>::max()) return std::nullopt;
      return static_cast<T>(i);
    }
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    // 2^53: beyond it a double no longer holds every whole number; the bounds also keep the
    // cast below defined.
    const double lo = std::max(static_cast<double>(std::numeric_limits<T>::min()), -9007199254740992.0);
    const double hi = std::min(static_cast<double>(std::numeric_limits<T>::max()), 9007199254740992.0);
    if (!(d >= lo && d <= hi) || d != std::trunc(d)) return std::nullopt;
    return static_cast<T>(d);
  }
  return std::nullopt;
}

template <typename T>
std::optional<T> read_opt(const Json& j, const char* name) {
  if (!j.contains(name) || j.at(name).is_null()) return std::nullopt;
  if constexpr (std::is_integral_v<T>) {
    return whole_number<T>(j.at(name));
  } else {
    return j.at(name).get<T>();
  }
}

Json telemetry_json(const Telemetry& t) {
  return Json{
      {"samples", t.samples},
      {"sm_clock_mhz_min", opt(t.sm_clock_mhz_min)},
      {"sm_clock_mhz_max", opt(t.sm_clock_mhz_max)},
      {"sm_clock_mhz_mean", opt(t.sm_clock_mhz_mean)},
      {"mem_clock_mhz_mean", opt(t.mem_clock_mhz_mean)},
      {"power_w_mean", opt(t.power_w_mean)},
      {"power_w_max", opt(t.power_w_max)},
      {"power_limit_w", opt(t.power_limit_w)},
      {"temp_c_max", opt(t.temp_c_max)},
      {"throttle_reasons", opt(t.throttle_reasons)},
      {"pcie_gen_min", opt(t.pcie_gen_min)},
      {"pcie_gen_max", opt(t.pcie_gen_max)},
      {"pcie_width_min", opt(t.pcie_width_min)},
      {"pcie_width_max", opt(t.pcie_width_max)},
      {"pcie_replay_delta", opt(t.pcie_replay_delta)},
  };
}

Telemetry telemetry_from(const Json& j) {
  Telemetry t;
  t.samples = read_opt<std::size_t>(j, "samples").value_or(0);
  t.sm_clock_mhz_min = read_opt<double>(j, "sm_clock_mhz_min");
  t.sm_clock_mhz_max = read_opt<double>(j, "sm_clock_mhz_max");
  t.sm_clock_mhz_mean = read_opt<double>(j, "sm_clock_mhz_mean");
  t.mem_clock_mhz_mean = read_opt<double>(j, "mem_clock_mhz_mean");
  t.power_w_mean = read_opt<double>(j, "power_w_mean");
  t.power_w_max = read_opt<double>(j, "power_w_max");
  t.power_limit_w = read_opt<double>(j, "power_limit_w");
  t.temp_c_max = read_opt<double>(j, "temp_c_max");
  t.throttle_reasons = read_opt<std::uint64_t>(j, "throttle_reasons");
  t.pcie_gen_min = read_opt<int>(j, "pcie_gen_min");
  t.pcie_gen_max = read_opt<int>(j, "pcie_gen_max");
  t.pcie_width_min = read_opt<int>(j, "pcie_width_min");
  t.pcie_width_max = read_opt<int>(j, "pcie_width_max");
  t.pcie_replay_delta = read_opt<std::uint64_t>(j, "pcie_replay_delta");
  return t;
}

// A number with its unit and display hint, as params and facts write it: "value", "unit" and,
// when set, "decimals".
void put_number(Json& j, double value, const std::string& unit, int decimals) {
  j["value"] = value;
  j["unit"] = unit;
  if (decimals >= 0) j["decimals"] = decimals;
}

void get_number(const Json& j, std::optional<double>& value, std::string& unit, int& decimals) {
  value = j.at("value").get<double>();
  unit = j.value("unit", "");
  // A display hint: a small whole number; anything else from a damaged file is no hint.
  decimals = -1;
  if (const auto d = read_opt<int>(j, "decimals"); d && *d >= 0 && *d <= 20) decimals = *d;
}

// v2 params: a list in the suite's order, {"name", "text"} or {"name", "value", "unit"} (+
// "decimals" when the suite set a display hint). v1 params: an object of name -> text.
Json param_json(const Param& p) {
  Json j{{"name", p.name}};
  if (!p.number) {
    j["text"] = p.text;
    return j;
  }
  put_number(j, *p.number, p.unit, p.decimals);
  return j;
}

Param param_from(const Json& j) {
  Param p;
  p.name = j.at("name").get<std::string>();
  if (j.contains("value")) {
    get_number(j, p.number, p.unit, p.decimals);
  } else {
    p.text = j.value("text", "");
  }
  return p;
}

std::vector<Param> params_from(const Json& j) {
  std::vector<Param> params;
  if (j.is_array()) {
    for (const Json& p : j) params.push_back(param_from(p));
  } else if (j.is_object()) {  // v1
    for (const auto& [name, text] : j.items()) {
      Param p;
      p.name = name;
      p.text = text.get<std::string>();
      params.push_back(std::move(p));
    }
  }
  return params;
}

Json fact_json(const Fact& f) {
  Json j{{"key", f.key}, {"label", f.label}};
  if (f.number) {
    put_number(j, *f.number, f.unit, f.decimals);
  } else {
    j["value"] = f.value;
  }
  return j;
}

Fact fact_from(const Json& j) {
  Fact f;
  f.key = j.at("key");
  f.label = j.value("label", "");
  if (j.contains("value") && j.at("value").is_number()) {
    get_number(j, f.number, f.unit, f.decimals);
  } else {
    f.value = j.value("value", "");
  }
  return f;
}

Json link_json(const PcieLink& l) { return Json{{"gen", opt(l.gen)}, {"width", opt(l.width)}}; }

PcieLink link_from(const Json& j, const char* name) {
  PcieLink l;
  if (!j.contains(name) || j.at(name).is_null()) return l;
  l.gen = read_opt<int>(j.at(name), "gen");
  l.width = read_opt<int>(j.at(name), "width");
  return l;
}

Json gpu_json(const GpuState& g) {
  return Json{{"unavailable", opt(g.unavailable)},
              {"link_max_slot", link_json(g.link_max_slot)},
              {"link_max_gpu", link_json(g.link_max_gpu)}};
}

GpuState gpu_from(const Json& j) {
  GpuState g;
  g.unavailable = read_opt<std::string>(j, "unavailable");
  g.link_max_slot = link_from(j, "link_max_slot");
  g.link_max_gpu = link_from(j, "link_max_gpu");
  return g;
}

// A v1 run said "no GPU" only as the text fact gpu.available = "none: <reason>".
void upgrade_v1(Run& run) {
  const Fact* available = run.find_fact("gpu.available");
  constexpr std::string_view kNone = "none: ";
  if (available && available->value.rfind(kNone, 0) == 0)
    run.gpu.unavailable = available->value.substr(kNone.size());
}

Status status_from(const Json& j) {
  const auto s = parse_status(j.get<std::string>());
  if (!s) throw Error(ErrorKind::usage, "unknown status '" + j.get<std::string>() + "' in run file");
  return *s;
}

}  // namespace

Json to_json(const Result& r) {
  Json refs = Json::array();
  for (const auto& ref : r.references) {
    Json j{{"kind", ref.kind}, {"value", ref.value}, {"ratio", ref.ratio}, {"source", ref.source}};
    if (!ref.origin.empty()) j["origin"] = ref.origin;
    refs.push_back(std::move(j));
  }
  Json params = Json::array();
  for (const auto& p : r.params) params.push_back(param_json(p));
  Json j{
      {"key", r.key},
      {"label", r.label},
      {"unit", r.unit},
      {"higher_is_better", r.higher_is_better},
      {"value", opt(r.value)},
      {"stats",
       {{"n", r.stats.n},
        {"median", r.stats.median},
        {"mean", r.stats.mean},
        {"min", r.stats.min},
        {"max", r.stats.max},
        {"stddev", r.stats.stddev},
        {"cv", r.stats.cv}}},
      {"samples", r.samples},
      {"references", refs},
      {"status", std::string(to_string(r.status))},
      {"reason", r.reason},
      {"advice", r.advice},
      {"telemetry", r.telemetry ? telemetry_json(*r.telemetry) : Json(nullptr)},
      {"params", params},
  };
  if (!r.section.empty()) j["section"] = r.section;
  return j;
}

Json to_json(const Run& run) {
  Json env = Json::array();
  for (const auto& f : run.environment) env.push_back(fact_json(f));
  Json sections = Json::array();
  for (const auto& s : run.sections)
    sections.push_back({{"id", s.id}, {"title", s.title}, {"layout", to_string(s.layout)}});
  Json results = Json::array();
  for (const auto& r : run.results) results.push_back(to_json(r));
  Json checklist = Json::array();
  for (const auto& c : run.checklist)
    checklist.push_back({{"id", c.id},
                         {"check", c.check},
                         {"target", c.target},
                         {"measured", opt(c.measured)},
                         {"status", std::string(to_string(c.status))},
                         {"evidence", c.evidence},
                         {"advice", c.advice}});
  Json findings = Json::array();
  for (const auto& f : run.findings)
    findings.push_back({{"id", f.id},
                        {"status", std::string(to_string(f.status))},
                        {"title", f.title},
                        {"evidence", f.evidence},
                        {"advice", f.advice}});
  return Json{
      {"schema", "gpubase.run"},
      {"schema_version", kSchemaVersion},  // what this writer writes, also for a v1 run read in
      {"tool_version", run.tool_version},
      {"command", run.command},
      {"started_at", run.started_at},
      {"duration_s", run.duration_s},
      {"environment", env},
      {"gpu", gpu_json(run.gpu)},
      {"sections", sections},
      {"results", results},
      {"checklist", checklist},
      {"findings", findings},
  };
}

Run run_from_json(const Json& j) {
  // Every field is checked for its type before it is read: a run file is user input, and a
  // type error escaping from here would be an "internal error" instead of a usage error.
  if (!j.is_object() || !j.contains("schema") || !j.at("schema").is_string() ||
      j.at("schema").get<std::string>() != "gpubase.run")
    throw Error(ErrorKind::usage, "not a gpubase run file (missing \"schema\": \"gpubase.run\")");
  if (!j.contains("schema_version") || !j.at("schema_version").is_number_integer())
    throw Error(ErrorKind::usage, "run file: \"schema_version\" must be an integer");
  const int version = j.at("schema_version").get<int>();
  if (version < 1 || version > kSchemaVersion)
    throw Error(ErrorKind::usage, "run file has schema_version " + std::to_string(version) +
                                      "; this gpubase reads 1.." + std::to_string(kSchemaVersion));
  try {
    Run run;
    run.schema_version = version;
    run.tool_version = j.value("tool_version", "");
    run.command = j.value("command", "");
    run.started_at = j.value("started_at", "");
    run.duration_s = j.value("duration_s", 0.0);
    for (const auto& f : j.at("environment")) run.environment.push_back(fact_from(f));
    if (j.contains("gpu") && j.at("gpu").is_object()) run.gpu = gpu_from(j.at("gpu"));
    for (const auto& js : j.value("sections", Json::array())) {
      const auto layout = parse_layout(js.value("layout", "benchmark"));
      run.sections.push_back(
          {js.at("id"), js.value("title", ""), layout.value_or(Layout::benchmark)});
    }
    for (const auto& jr : j.at("results")) {
      Result r;
      r.key = jr.at("key");
      r.section = jr.value("section", "");
      r.label = jr.value("label", "");
      r.unit = jr.value("unit", "");
      r.higher_is_better = jr.value("higher_is_better", true);
      r.value = read_opt<double>(jr, "value");
      if (jr.contains("stats")) {
        const auto& s = jr.at("stats");
        r.stats = {read_opt<std::size_t>(s, "n").value_or(0), s.value("median", 0.0), s.value("mean", 0.0),
                   s.value("min", 0.0), s.value("max", 0.0), s.value("stddev", 0.0),
                   s.value("cv", 0.0)};
      }
      r.samples = jr.value("samples", std::vector<double>{});
      for (const auto& ref : jr.value("references", Json::array()))
        r.references.push_back({ref.at("kind"), ref.value("value", 0.0), ref.value("source", ""),
                                ref.value("ratio", 0.0), ref.value("origin", "")});
      r.status = status_from(jr.at("status"));
      r.reason = jr.value("reason", "");
      r.advice = jr.value("advice", "");
      if (jr.contains("telemetry") && !jr.at("telemetry").is_null())
        r.telemetry = telemetry_from(jr.at("telemetry"));
      if (jr.contains("params")) r.params = params_from(jr.at("params"));
      run.results.push_back(std::move(r));
    }
    for (const auto& jc : j.value("checklist", Json::array())) {
      ChecklistRow c;
      c.id = jc.at("id");
      c.check = jc.value("check", "");
      c.target = jc.value("target", "");
      c.measured = read_opt<std::string>(jc, "measured");
      c.status = status_from(jc.at("status"));
      c.evidence = jc.value("evidence", "");
      c.advice = jc.value("advice", "");
      run.checklist.push_back(std::move(c));
    }
    for (const auto& jf : j.value("findings", Json::array())) {
      Finding f;
      f.id = jf.at("id");
      f.status = status_from(jf.at("status"));
      f.title = jf.value("title", "");
      f.evidence = jf.value("evidence", "");
      f.advice = jf.value("advice", "");
      run.findings.push_back(std::move(f));
    }
    if (version == 1) upgrade_v1(run);
    return run;
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::usage, std::string("malformed run file: ") + e.what());
  }
}

}  // namespace gb
