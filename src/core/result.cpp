// core/result.cpp: see result.hpp.
#include "core/result.hpp"

#include <algorithm>
#include <array>

namespace gb {

namespace {
constexpr std::array<std::pair<Status, std::string_view>, 6> kStatusNames{{
    {Status::pass, "pass"},
    {Status::warn, "warn"},
    {Status::fail, "fail"},
    {Status::skipped, "skipped"},
    {Status::invalid, "invalid"},
    {Status::info, "info"},
}};
}  // namespace

std::string_view to_string(Status s) {
  for (const auto& [status, name] : kStatusNames)
    if (status == s) return name;
  return "info";
}

std::optional<Status> parse_status(std::string_view s) {
  for (const auto& [status, name] : kStatusNames)
    if (name == s) return status;
  return std::nullopt;
}

std::string_view to_string(Layout l) {
  switch (l) {
    case Layout::benchmark: return "benchmark";
    case Layout::monitor: return "monitor";
    case Layout::configurations: return "configurations";
  }
  return "benchmark";
}

std::optional<Layout> parse_layout(std::string_view s) {
  for (const Layout l : {Layout::benchmark, Layout::monitor, Layout::configurations})
    if (to_string(l) == s) return l;
  return std::nullopt;
}

int severity(Status s) {
  switch (s) {
    case Status::skipped: return 0;
    case Status::info: return 1;
    case Status::pass: return 2;
    case Status::warn: return 3;
    case Status::invalid: return 4;
    case Status::fail: return 5;
  }
  return 0;
}

Result Result::measured(std::string key, std::string label, std::string unit,
                        std::vector<double> samples, bool higher_is_better) {
  Result r;
  r.key = std::move(key);
  r.label = std::move(label);
  r.unit = std::move(unit);
  r.higher_is_better = higher_is_better;
  r.stats = compute_stats(samples);
  r.samples = std::move(samples);
  if (r.stats.n > 0) r.value = r.stats.median;
  r.status = Status::info;
  return r;
}

Result Result::skipped(std::string key, std::string label, std::string unit, std::string reason) {
  Result r;
  r.key = std::move(key);
  r.label = std::move(label);
  r.unit = std::move(unit);
  r.status = Status::skipped;
  r.reason = std::move(reason);
  return r;
}

Result& Result::param(std::string name, std::string text) {
  Param p;
  p.name = std::move(name);
  p.text = std::move(text);
  params.push_back(std::move(p));
  return *this;
}

Result& Result::param(std::string name, double number, std::string number_unit, int decimals) {
  Param p;
  p.name = std::move(name);
  p.number = number;
  p.unit = std::move(number_unit);
  p.decimals = decimals;
  params.push_back(std::move(p));
  return *this;
}

Result& Result::reference(std::string kind, double ref_value, std::string source,
                          std::string origin) {
  Reference ref{std::move(kind), ref_value, std::move(source), 0, std::move(origin)};
  if (value && ref_value > 0) ref.ratio = *value / ref_value;
  references.push_back(std::move(ref));
  return *this;
}

const Reference* Result::find_reference(std::string_view kind) const {
  for (const auto& r : references)
    if (r.kind == kind) return &r;
  return nullptr;
}

const Param* Result::find_param(std::string_view name) const {
  for (const auto& p : params)
    if (p.name == name) return &p;
  return nullptr;
}

std::optional<std::string> Result::text_param(std::string_view name) const {
  const Param* p = find_param(name);
  if (!p || p->is_number()) return std::nullopt;
  return p->text;
}

std::optional<double> Result::number_param(std::string_view name) const {
  const Param* p = find_param(name);
  if (!p) return std::nullopt;
  return p->number;
}

Fact Fact::text(std::string key, std::string label, std::string value) {
  Fact f;
  f.key = std::move(key);
  f.label = std::move(label);
  f.value = std::move(value);
  return f;
}

Fact Fact::numeric(std::string key, std::string label, double number, std::string unit,
                   int decimals) {
  Fact f;
  f.key = std::move(key);
  f.label = std::move(label);
  f.number = number;
  f.unit = std::move(unit);
  f.decimals = decimals;
  return f;
}

const Result* find_result(std::span<const Result> results, std::string_view key) {
  for (const auto& r : results)
    if (r.key == key) return &r;
  return nullptr;
}

const Result* Run::find(std::string_view key) const { return find_result(results, key); }

const Fact* Run::find_fact(std::string_view key) const {
  for (const auto& f : environment)
    if (f.key == key) return &f;
  return nullptr;
}

const SectionRule* find_section_rule(std::span<const SectionRule> rules, std::string_view key) {
  const SectionRule* best = nullptr;
  for (const SectionRule& rule : rules)
    if (key.starts_with(rule.key_prefix) &&
        (!best || rule.key_prefix.size() > best->key_prefix.size()))
      best = &rule;
  return best;
}

void place_in_section(Result& r, std::span<const SectionRule> rules,
                      std::vector<SectionSpec>& sections) {
  const SectionRule* rule = find_section_rule(rules, r.key);
  if (!rule) return;
  r.section = rule->id;
  const bool known = std::any_of(sections.begin(), sections.end(),
                                 [&](const SectionSpec& s) { return s.id == rule->id; });
  if (!known) sections.push_back({std::string(rule->id), std::string(rule->title), rule->layout});
}

void Run::place_in_sections(std::span<const SectionRule> rules) {
  for (Result& r : results)
    if (r.section.empty()) place_in_section(r, rules, sections);
}

const SectionSpec* Run::find_section(std::string_view id) const {
  for (const auto& s : sections)
    if (s.id == id) return &s;
  return nullptr;
}

std::optional<std::string> Run::fact(std::string_view key) const {
  const Fact* f = find_fact(key);
  if (!f || f->number) return std::nullopt;
  return f->value;
}

std::optional<double> Run::fact_number(std::string_view key) const {
  const Fact* f = find_fact(key);
  if (!f) return std::nullopt;
  return f->number;
}

Status Run::worst_status() const {
  Status worst = Status::pass;
  auto consider = [&](Status s) {
    if (s == Status::info || s == Status::skipped) return;
    if (severity(s) > severity(worst)) worst = s;
  };
  for (const auto& r : results) consider(r.status);
  for (const auto& c : checklist) consider(c.status);
  for (const auto& f : findings) consider(f.status);
  return worst;
}

}  // namespace gb
