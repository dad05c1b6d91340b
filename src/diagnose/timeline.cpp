// diagnose/timeline.cpp: see timeline.hpp.
#include "diagnose/timeline.hpp"

#include <cmath>
#include <functional>
#include <string>

#include "diagnose/watch_rules.hpp"
#include "diagnose/thresholds.hpp"

namespace gb::diagnose {

namespace {

// A series line by its column id, or null.
const std::vector<double>* line(const RunSeries& s, std::string_view id) {
  for (const SeriesPanel& p : s.panels)
    for (const SeriesLine& l : p.lines)
      if (l.id == id) return &l.values;
  return nullptr;
}

// The data-wait share: a column whose name says so (watch/series_chart draws every one).
const std::vector<double>* data_wait_line(const RunSeries& s) {
  for (const SeriesPanel& p : s.panels)
    for (const SeriesLine& l : p.lines)
      if (l.id.find("data_wait") != std::string::npos) return &l.values;
  return nullptr;
}

// v[k] when the column has a measured value there.
std::optional<double> at(const std::vector<double>* v, std::size_t k) {
  if (!v || k >= v->size() || !std::isfinite((*v)[k])) return std::nullopt;
  return (*v)[k];
}

struct Rule {
  std::string condition;
  std::function<bool(std::size_t)> holds;  // at point k; false where a figure is missing
};

std::optional<Rule> rule_for(const std::string& id, const RunSeries& s) {
  const WatchThresholds& t = watch_thresholds();
  const CudaWatchThresholds& c = cuda_watch_thresholds();
  const auto* util = line(s, "gpu_util_pct");
  const auto* sm = line(s, "gpu_sm_active_pct");
  const auto* tensor = line(s, "gpu_tensor_active_pct");
  const auto* busiest = line(s, "cpu_busiest_core_pct");
  const auto* iowait = line(s, "cpu_iowait_pct");
  const auto* disk = line(s, "disk_busiest_util_pct");
  const auto* saturated = line(s, "job_saturated_processes");
  const auto* wait = data_wait_line(s);
  const std::string below = "GPU busy < " + pct_text(t.gpu_busy_pct);
  auto starved = [=](std::size_t k) {
    const auto u = at(util, k);
    return u && *u < t.gpu_busy_pct;
  };
  // A job process (or, without the tree's figures, a core) at its limit.
  auto cpu_limit = [=](std::size_t k) {
    if (saturated) {
      const auto n = at(saturated, k);
      return n && *n >= 1;
    }
    const auto b = at(busiest, k);
    return b && *b >= t.saturated_pct;
  };
  const std::string limit_text = saturated ? "a job process >= " + pct_text(t.saturated_pct) + " of a core"
                                           : "a core >= " + pct_text(t.saturated_pct) + " busy";
  if (!util && id != "input_wait") return std::nullopt;
  if (id == "gpu_bound")
    return Rule{"GPU busy > " + pct_text(t.gpu_busy_pct), [=](std::size_t k) {
                  const auto u = at(util, k);
                  return u && *u > t.gpu_busy_pct;
                }};
  if (id == "job_not_using_gpu")
    return Rule{"GPU busy <= " + pct_text(t.job_no_gpu_pct), [=](std::size_t k) {
                  const auto u = at(util, k);
                  return u && *u <= t.job_no_gpu_pct;
                }};
  if (id == "launch_bound") return Rule{below, starved};
  if (id == "input_bound_cpu" || id == "main_process_bound" || id == "one_process_bound")
    return Rule{below + " while " + limit_text,
                [=](std::size_t k) { return starved(k) && cpu_limit(k); }};
  if (id == "storage_bound") {
    if (!iowait && !disk) return std::nullopt;
    return Rule{below + " while I/O wait >= " + pct_text(t.iowait_pct) + " or a disk >= " +
                    pct_text(t.disk_busy_pct) + " busy",
                [=](std::size_t k) {
                  const auto w = at(iowait, k);
                  const auto d = at(disk, k);
                  return starved(k) && ((w && *w >= t.iowait_pct) || (d && *d >= t.disk_busy_pct));
                }};
  }
  if (id == "small_kernels" && sm)
    return Rule{"GPU busy >= " + pct_text(t.efficiency_min_util_pct) + " with SMs active < " +
                    pct_text(t.sm_active_low_pct),
                [=](std::size_t k) {
                  const auto u = at(util, k);
                  const auto a = at(sm, k);
                  return u && a && *u >= t.efficiency_min_util_pct && *a < t.sm_active_low_pct;
                }};
  if (id == "tensor_cores_unused" && tensor)
    return Rule{"GPU busy >= " + pct_text(t.efficiency_min_util_pct) + " with tensor activity < " +
                    pct_text(t.tensor_unused_pct),
                [=](std::size_t k) {
                  const auto u = at(util, k);
                  const auto a = at(tensor, k);
                  return u && a && *u >= t.efficiency_min_util_pct && *a < t.tensor_unused_pct;
                }};
  if (id == "input_wait" && wait)
    return Rule{"data wait >= " + pct_text(c.data_wait_warn_pct), [=](std::size_t k) {
                  const auto w = at(wait, k);
                  return w && *w >= c.data_wait_warn_pct;
                }};
  return std::nullopt;
}

}  // namespace

std::vector<FindingTimeline> finding_timelines(const Run& run, const RunSeries& series,
                                               double merge_gap_s) {
  std::vector<FindingTimeline> out;
  const std::vector<double>& t = series.t_s;
  if (t.empty()) return out;
  if (merge_gap_s <= 0) merge_gap_s = (t.back() - t.front()) / 800;
  // Point k covers the interval that ends at t[k]; the first point's length is the second's.
  auto start_of = [&](std::size_t k) {
    if (k > 0) return t[k - 1];
    return t.size() > 1 ? t[0] - (t[1] - t[0]) : t[0];
  };
  for (const Finding& f : run.findings) {
    const std::optional<Rule> rule = rule_for(f.id, series);
    if (!rule) continue;
    FindingTimeline tl{f.id, rule->condition, {}, 0};
    for (std::size_t k = 0; k < t.size(); ++k) {
      if (!rule->holds(k)) continue;
      const double from = start_of(k);
      tl.held_s += t[k] - from;
      if (!tl.spans.empty() && from - tl.spans.back().to_s <= merge_gap_s)
        tl.spans.back().to_s = t[k];
      else
        tl.spans.push_back({from, t[k]});
    }
    out.push_back(std::move(tl));
  }
  return out;
}

}  // namespace gb::diagnose
