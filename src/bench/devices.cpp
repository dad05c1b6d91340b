// bench/devices.cpp: see devices.hpp.
#include "bench/devices.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <exception>
#include <sstream>
#include <thread>

#include "core/device_index.hpp"
#include "core/error.hpp"
#include "core/format.hpp"
#include "core/thread_name.hpp"

namespace gb::bench {

std::vector<int> select_devices(const std::string& spec, std::string& no_gpu_reason) {
  std::vector<int> wanted;
  const bool all = spec == "all";
  if (!all) {
    std::stringstream ss(spec);
    for (std::string item; std::getline(ss, item, ',');) {
      int v = -1;
      const auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
      if (item.empty() || ec != std::errc() || ptr != item.data() + item.size())
        throw Error(ErrorKind::usage, "--devices " + spec +
                                          ": give 'all' or device indices separated by commas "
                                          "(e.g. 0,2,5)");
      require_device_index(v, 0);  // negative: wrong on every machine
      if (std::find(wanted.begin(), wanted.end(), v) == wanted.end()) wanted.push_back(v);
    }
    if (wanted.empty()) throw Error(ErrorKind::usage, "--devices: no device given");
  }
  const int count = cuda_device_count(no_gpu_reason);
  if (count == 0) return {};
  if (all)
    for (int i = 0; i < count; ++i) wanted.push_back(i);
  for (const int d : wanted) require_device_index(d, count);
  return wanted;
}

namespace {

// The sections to run on every GPU at once: those asked for, without the ones that span GPUs.
std::vector<std::string> single_gpu_sections(const ProbeOptions& options) {
  std::vector<std::string> out;
  for (const auto& [name, description] : probe_sections())
    if (options.wants(name) && !spans_gpus(name)) out.push_back(name);
  if (out.empty()) out.push_back("env");  // an empty list would mean every section
  return out;
}

}  // namespace

std::vector<ProbeOutcome> run_probe_concurrently(const ProbeOptions& options,
                                                 const std::vector<int>& devices,
                                                 const std::vector<ResultSink*>& sinks) {
  std::vector<ProbeOutcome> outcomes(devices.size());
  std::vector<std::exception_ptr> errors(devices.size());
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    threads.emplace_back([&, i] {
      name_this_thread("gb-device " + std::to_string(devices[i]));
      try {
        ProbeOptions o = options;
        o.device = devices[i];
        o.sections = single_gpu_sections(options);
        outcomes[i] = run_probe(o, *sinks[i]);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
  return outcomes;
}

namespace {

// Headline figures: not a size or shape sweep row, not the sustained variant, not a counter.
bool headline(const std::string& key) {
  if (key.find("KiB") != std::string::npos || key.find("MiB") != std::string::npos ||
      key.find(".sustained.") != std::string::npos || key.starts_with("probe.pcie.link.") ||
      key == "probe.pcie.replay_delta")
    return false;
  // probe.gemm.<p>.<m>x<n>x<k>.tflops: a shape row
  return std::count(key.begin(), key.end(), 'x') < 2 ||
         key.find_first_of("0123456789") == std::string::npos;
}

std::string device_list(const std::vector<int>& devices) {
  std::string s;
  for (const int d : devices) s += (s.empty() ? "" : ",") + std::to_string(d);
  return s;
}

}  // namespace

std::span<const SectionRule> concurrent_section_rules() {
  static constexpr SectionRule kRules[] = {
      {"probe.concurrent", "probe.concurrent", "With the other selected GPUs at once",
       Layout::benchmark},
  };
  return kRules;
}

void add_concurrent_comparison(ResultSink& alone, const std::vector<Result>& together,
                               const std::vector<int>& devices, double slowed_threshold) {
  alone.declare_sections(concurrent_section_rules());
  alone.add_fact(Fact::text("probe.concurrent.devices", "measured together with GPUs",
                            device_list(devices)));
  std::optional<double> worst;
  std::string worst_key;
  std::vector<Result> added;
  for (const Result& t : together) {
    if (!t.value || !t.key.starts_with("probe.")) continue;
    const Result* a = find_result(alone.results(), t.key);
    if (!a || !a->value || *a->value == 0) continue;
    // The change in the figure's good direction: negative = worse together.
    const double change =
        t.higher_is_better ? *t.value / *a->value - 1 : *a->value / *t.value - 1;
    Result r = Result::measured("probe.concurrent." + t.key.substr(6),
                                t.label + " (all selected GPUs at once)", t.unit, t.samples,
                                t.higher_is_better);
    r.telemetry = t.telemetry;
    r.param("alone", *a->value, t.unit).param("change_pct", change * 100, "%", 1);
    added.push_back(std::move(r));
    if (headline(t.key) && std::isfinite(change) && (!worst || change < *worst)) {
      worst = change;
      worst_key = t.key;
    }
  }
  for (Result& r : added) alone.add(std::move(r));
  if (!worst) {
    alone.add(Result::skipped("probe.concurrent.worst_change.pct",
                              "Largest drop when run with the other GPUs", "%",
                              "no figure was measured both alone and together"));
    return;
  }
  Result w = Result::measured("probe.concurrent.worst_change.pct",
                              "Largest drop when run with the other GPUs", "%",
                              {-*worst * 100}, false);
  w.param("figure", worst_key).param("devices", device_list(devices));
  w.reason = -*worst >= slowed_threshold
                 ? "slowed together: " + worst_key + " " + fixed(*worst * 100, 1) +
                       " % with GPUs " + device_list(devices) + " at once (shared PCIe switch, "
                       "NUMA node, power or cooling)"
                 : "no headline figure dropped " + fixed(slowed_threshold * 100, 0) +
                       " % or more with GPUs " + device_list(devices) + " at once";
  alone.add(std::move(w));
}

}  // namespace gb::bench
