// diagnose/checklist.cpp: the baseline checklist every run ends with. "card speed" rolls up the
// probe's verdicts (compute, HBM, PCIe) with the worst figure of each as evidence; the other
// rows read one result each, named in thresholds.cpp, and say which command measures them when
// that suite has not run. A new row is a new MetricRowSpec, not new code. A utilization row
// that warns or fails names its cause from the run's findings (diagnose_watch).
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "diagnose/diagnose.hpp"
#include "diagnose/text.hpp"
#include "diagnose/thresholds.hpp"
#include "diagnose/watch_rules.hpp"

namespace gb::diagnose {

namespace {

struct CardArea {
  std::string_view prefix;  // "probe.gemm" covers probe.gemm and probe.gemm.*
  std::string_view name;
};

constexpr CardArea kCardAreas[] = {
    {"probe.gemm", "compute"}, {"probe.memory", "HBM"}, {"probe.pcie", "PCIe"}};

bool in_area(const Result& r, std::string_view prefix) {
  const std::string_view key = r.key;
  return key == prefix || (key.size() > prefix.size() && key.substr(0, prefix.size()) == prefix &&
                           key[prefix.size()] == '.');
}

bool has_verdict(Status s) {
  return s == Status::pass || s == Status::warn || s == Status::fail || s == Status::invalid;
}

std::optional<double> achievable_ratio(const Result& r) {
  if (r.status == Status::invalid) return std::nullopt;  // a throttled figure says nothing
  const Reference* a = r.find_reference("achievable");
  if (!a || a->value <= 0 || !r.value) return std::nullopt;
  return *r.value / a->value;
}

// Worse first: higher severity, then the lower share of achievable.
bool worse(const Result* a, const Result* b) {
  if (severity(a->status) != severity(b->status))
    return severity(a->status) > severity(b->status);
  return achievable_ratio(*a).value_or(2.0) < achievable_ratio(*b).value_or(2.0);
}

std::optional<ChecklistRow> card_speed_row(const Run& run) {
  ChecklistRow row;
  row.id = "card_speed";
  row.check = "card speed: compute, HBM, PCIe";
  row.target = ">= " + format_percent(kPassAtAchievable) + " of achievable";

  bool any = false;
  std::vector<const Result*> judged_all;
  std::vector<std::string> measured, evidence;
  const Result* first_skipped = nullptr;
  for (const CardArea& area : kCardAreas) {
    std::vector<const Result*> judged;
    for (const Result& r : run.results) {
      if (!in_area(r, area.prefix)) continue;
      any = true;
      if (has_verdict(r.status)) judged.push_back(&r);
      if (r.status == Status::skipped && !first_skipped) first_skipped = &r;
    }
    if (judged.empty()) continue;
    std::sort(judged.begin(), judged.end(), worse);
    judged_all.insert(judged_all.end(), judged.begin(), judged.end());

    std::optional<double> lowest;
    for (const Result* r : judged)
      if (const auto ratio = achievable_ratio(*r); ratio && (!lowest || *ratio < *lowest))
        lowest = ratio;
    if (lowest) measured.push_back(std::string(area.name) + " " + format_percent(*lowest));

    const Result* w = judged.front();
    std::string e = w->label;
    if (w->status != Status::pass) e += ", " + std::string(to_string(w->status));
    e += ": " + w->reason;
    const auto below = std::count_if(judged.begin(), judged.end(),
                                     [](const Result* r) { return r->status != Status::pass; });
    if (below > 1) e += " (+" + std::to_string(below - 1) + " more not passing)";
    evidence.push_back(e);
  }
  if (!any) return std::nullopt;

  if (judged_all.empty()) {
    row.status = first_skipped ? Status::skipped : Status::info;
    row.evidence = first_skipped ? "skipped: " + first_skipped->reason
                                 : "no datasheet or achievable figure for this GPU: not judged";
    return row;
  }
  std::sort(judged_all.begin(), judged_all.end(), worse);
  row.status = judged_all.front()->status;
  if (!measured.empty()) row.measured = join(measured, ", ") + " of achievable";
  row.evidence = join(evidence, "; ");
  std::vector<std::string> advice;
  for (const Result* r : judged_all) {
    if (r->status == Status::pass || r->advice.empty()) continue;
    if (std::find(advice.begin(), advice.end(), r->advice) == advice.end())
      advice.push_back(r->advice);
  }
  row.advice = join(advice, "; ");
  return row;
}

Status judge_metric(double v, const MetricRowSpec& spec) {
  if (spec.higher_is_better) {
    if (v > spec.pass_limit) return Status::pass;
    return v >= spec.warn_limit ? Status::warn : Status::fail;
  }
  if (v < spec.pass_limit) return Status::pass;
  return v <= spec.warn_limit ? Status::warn : Status::fail;
}

// A warn/fail row whose cause diagnose_watch() found says so and carries that advice.
void name_cause(ChecklistRow& row, const Run& run, const MetricRowSpec& spec) {
  std::vector<const Finding*> causes;
  for (const Finding& f : run.findings) {
    if (f.status != Status::warn && f.status != Status::fail) continue;
    if (std::find(spec.causes.begin(), spec.causes.end(), f.id) != spec.causes.end())
      causes.push_back(&f);
  }
  if (causes.empty()) return;
  row.evidence += "; cause: " + causes.front()->title;
  if (causes.size() > 1)
    row.evidence += " (+" + std::to_string(causes.size() - 1) + " more in the diagnosis)";
  row.advice = causes.front()->advice;
}

// The worst measured train.*<train_suffix> result (by the row's direction); without one, the
// first such result that was skipped (its reason is the row's); else nullptr.
const Result* worst_train_figure(const Run& run, const MetricRowSpec& spec) {
  const Result* worst = nullptr;
  const Result* skipped = nullptr;
  for (const Result& r : run.results) {
    if (!r.key.starts_with("train.") || !r.key.ends_with(spec.train_suffix)) continue;
    if (!r.value) {
      if (!skipped) skipped = &r;
      continue;
    }
    if (!worst || (spec.higher_is_better ? *r.value < *worst->value : *r.value > *worst->value))
      worst = &r;
  }
  return worst ? worst : skipped;
}

// The row measured a training run gpubase fed itself: the GPU and CPU rows when the in-process
// sampler watched it, the data row when its figure is a train.* data wait (our loader's).
bool own_loader_row(const Run& run, const MetricRowSpec& spec, const Result& figure) {
  if (spec.id == "gpu_util" || spec.id == "cpu_util")
    return figure.key.starts_with("watch.") && watched_in_process(run);
  if (spec.id == "data_loading") return figure.key.starts_with("train.");
  return false;
}

ChecklistRow metric_row(const Run& run, const MetricRowSpec& spec) {
  ChecklistRow row;
  row.id = std::string(spec.id);
  row.check = std::string(spec.check);
  row.target = std::string(spec.target);
  const Result* r = run.find(spec.key);
  if (!r && !spec.train_suffix.empty()) r = worst_train_figure(run, spec);
  if ((!r || !r->value) && !spec.job_key.empty()) {
    const Result* job = run.find(spec.job_key);
    if (job && (job->value || !r)) r = job;
  }
  if (!r) {
    row.status = Status::skipped;
    row.evidence = "measured by " + std::string(spec.suite) + " (not run)";
    return row;
  }
  if (!r->value) {
    row.status = Status::skipped;
    row.evidence = "skipped: " + (r->reason.empty() ? std::string("no value") : r->reason);
    return row;
  }
  const double v = *r->value;
  row.measured = format_number(v) + (r->unit.empty() ? "" : " " + r->unit);
  row.status = r->status == Status::invalid ? Status::invalid : judge_metric(v, spec);
  row.evidence = r->label + " " + *row.measured + " (" + r->key + ")";
  if (!r->reason.empty()) row.evidence += ": " + r->reason;
  if (row.status == Status::invalid)
    row.advice = r->advice;
  else if (row.status != Status::pass)
    row.advice = own_loader_row(run, spec, *r) ? own_loader_advice(run, spec.id)
                                               : std::string(spec.advice);
  if (row.status == Status::warn || row.status == Status::fail) name_cause(row, run, spec);
  return row;
}

}  // namespace

std::vector<ChecklistRow> build_checklist(const Run& run) {
  std::vector<ChecklistRow> rows;
  if (auto card = card_speed_row(run)) rows.push_back(std::move(*card));
  for (const MetricRowSpec& spec : metric_rows()) rows.push_back(metric_row(run, spec));
  return rows;
}

}  // namespace gb::diagnose
