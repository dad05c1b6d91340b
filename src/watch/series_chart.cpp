// watch/series_chart.cpp: see series_chart.hpp. Column names are series_io's (docs/watch.md).
#include "watch/series_chart.hpp"

#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "watch/series_io.hpp"

namespace gb::watch {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct LineSpec {
  const char* column;
  const char* label;
  double scale = 1;  // job_cpu_pct (100 = one core) drawn in cores
};

struct PanelSpec {
  const char* id;
  const char* title;
  const char* unit;
  double y_max;
  std::vector<LineSpec> lines;
};

const std::vector<PanelSpec>& panel_specs() {
  static const std::vector<PanelSpec> specs = {
      {"gpu", "GPU activity", "%", 100,
       {{"gpu_util_pct", "busy (driver)"},
        {"gpu_sm_active_pct", "SM active"},
        {"gpu_tensor_active_pct", "tensor active"}}},
      {"gpu_power", "GPU power", "W", 0, {{"gpu_power_w", "power"}}},
      {"cpu", "CPU", "%", 100,
       {{"cpu_busiest_core_pct", "busiest core"},
        {"cpu_mean_core_pct", "mean over cores"},
        {"cpu_iowait_pct", "I/O wait"}}},
      {"job", "The job's processes", "processes", 0,
       {{"job_processes", "processes"},
        {"job_active_processes", "active (>= 10 % of a core)"},
        {"job_saturated_processes", "saturated (>= 90 %)"}}},
      {"job_cpu", "The job's CPU", "cores", 0, {{"job_cpu_pct", "CPU time", 0.01}}},
      {"disk", "Disk", "%", 100, {{"disk_busiest_util_pct", "busiest disk, util"}}},
  };
  return specs;
}

// Columns by name, one value per point (NaN where null or empty), and the per-core strip.
struct Table {
  std::vector<double> t_s;
  std::map<std::string, std::vector<double>> columns;
  std::map<int, std::vector<double>> cores;
};

void add_point(Table& t) {
  for (auto& [name, v] : t.columns) v.push_back(kNaN);
  for (auto& [core, v] : t.cores) v.push_back(kNaN);
}

std::vector<double>& column(Table& t, const std::string& name) {
  auto [it, fresh] = t.columns.try_emplace(name);
  if (fresh) it->second.assign(t.t_s.size(), kNaN);
  return it->second;
}

void read_jsonl(std::istream& in, Table& t) {
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("t_s") || !j["t_s"].is_number()) continue;
    t.t_s.push_back(j["t_s"].get<double>());
    add_point(t);
    const std::size_t k = t.t_s.size() - 1;
    for (const auto& [name, value] : j.items()) {
      if (value.is_number()) column(t, name)[k] = value.get<double>();
    }
    if (const auto it = j.find("cpu_cores_busy_pct"); it != j.end() && it->is_array()) {
      for (const auto& pair : *it) {
        if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number() || !pair[1].is_number())
          continue;
        auto [c, fresh] = t.cores.try_emplace(pair[0].get<int>());
        if (fresh) c->second.assign(t.t_s.size(), kNaN);
        c->second[k] = pair[1].get<double>();
      }
    }
  }
}

void read_csv(std::istream& in, Table& t) {
  std::string header;
  if (!std::getline(in, header)) return;
  std::vector<std::string> names;
  std::stringstream hs(header);
  for (std::string name; std::getline(hs, name, ',');) names.push_back(name);
  std::size_t t_col = names.size();
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == "t_s") t_col = i;
  if (t_col == names.size()) return;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells;
    std::stringstream ls(line);
    for (std::string cell; std::getline(ls, cell, ',');) cells.push_back(cell);
    if (cells.size() <= t_col || cells[t_col].empty()) continue;
    char* end = nullptr;
    const double ts = std::strtod(cells[t_col].c_str(), &end);
    if (end == cells[t_col].c_str()) continue;
    t.t_s.push_back(ts);
    add_point(t);
    for (std::size_t i = 0; i < cells.size() && i < names.size(); ++i) {
      if (cells[i].empty()) continue;
      const double v = std::strtod(cells[i].c_str(), &end);
      if (end != cells[i].c_str()) column(t, names[i])[t.t_s.size() - 1] = v;
    }
  }
}

bool measured(const std::vector<double>& v) {
  for (const double x : v)
    if (std::isfinite(x)) return true;
  return false;
}

}  // namespace

RunSeries read_series_chart(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(ErrorKind::usage, "cannot read the time series " + path);
  Table t;
  if (series_format_for(path) == SeriesFormat::csv)
    read_csv(in, t);
  else
    read_jsonl(in, t);

  RunSeries out;
  out.source = path;
  out.t_s = t.t_s;
  for (const PanelSpec& spec : panel_specs()) {
    SeriesPanel panel{spec.id, spec.title, spec.unit, spec.y_max, {}};
    for (const LineSpec& l : spec.lines) {
      const auto it = t.columns.find(l.column);
      if (it == t.columns.end() || !measured(it->second)) continue;
      SeriesLine line{l.column, l.label, it->second};
      if (l.scale != 1)
        for (double& v : line.values) v *= l.scale;
      panel.lines.push_back(std::move(line));
    }
    if (!panel.lines.empty()) out.panels.push_back(std::move(panel));
  }
  // A data-wait share, when the run measured one (a column named *data_wait*).
  SeriesPanel wait{"data_wait", "Data wait", "%", 100, {}};
  for (const auto& [name, values] : t.columns)
    if (name.find("data_wait") != std::string::npos && measured(values))
      wait.lines.push_back({name, name, values});
  if (!wait.lines.empty()) out.panels.push_back(std::move(wait));
  if (!t.cores.empty()) {
    HeatStrip strip{"cpu_cores", "CPU busy per core", "%", {}, {}};
    for (auto& [core, values] : t.cores) {
      strip.rows.push_back("cpu" + std::to_string(core));
      strip.values.push_back(std::move(values));
    }
    out.strips.push_back(std::move(strip));
  }
  return out;
}

}  // namespace gb::watch
