// fleet/merge.cpp: see merge.hpp.
//
// Napkin math for the target fleet (10,000 nodes x 8 GPUs = 80,000 run files of a quick probe,
// ~60 KB each, ~5 GB): the scan is bound by bytes skipped; raw samples (most of a file) are
// skipped with memchr at several GB/s, the rest at ~1 GB/s per thread, so two threads need
// ~2-3 s. Grouping and medians: 80,000 x ~20 judged figures = 1.6 M values, nth_element twice
// per (group, key): well under 0.1 s. Memory: the scanned runs (~1 KB each with their
// strings, ~100 MB); the files are mapped, not copied.
#include "fleet/merge.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <thread>

#include "core/cancel.hpp"
#include "core/error.hpp"
#include "core/format.hpp"
#include "core/mapped_file.hpp"
#include "sys/nvml.hpp"
#include "core/thread_name.hpp"

namespace gb::fleet {

std::string_view to_string(ProblemKind k) {
  switch (k) {
    case ProblemKind::no_gpu:
      return "no_gpu";
    case ProblemKind::throttled:
      return "throttled";
    case ProblemKind::invalid:
      return "invalid";
    case ProblemKind::slow:
      return "slow";
    case ProblemKind::link:
      return "link";
  }
  return "slow";
}

double pcie_lane_gbps(int gen) {
  // Transfer rate per lane after line encoding (8b/10b to Gen2, 128b/130b from Gen3; Gen6's
  // FLIT overhead ignored): 2.5, 5, 8, 16, 32, 64 GT/s.
  switch (gen) {
    case 1:
      return 0.25;
    case 2:
      return 0.5;
    case 3:
      return 8.0 * 128 / 130 / 8;
    case 4:
      return 16.0 * 128 / 130 / 8;
    case 5:
      return 32.0 * 128 / 130 / 8;
    case 6:
      return 64.0 * 128 / 130 / 8;
    default:
      return 0;
  }
}

std::vector<std::filesystem::path> collect_run_files(const std::vector<std::string>& paths) {
  namespace fs = std::filesystem;
  if (paths.empty()) throw Error(ErrorKind::usage, "fleet merge: name run files or folders");
  std::vector<fs::path> files;
  for (const std::string& p : paths) {
    std::error_code ec;
    const fs::file_status st = fs::status(p, ec);
    if (ec || !fs::exists(st))
      throw Error(ErrorKind::usage, "fleet merge: " + p + " does not exist");
    if (fs::is_directory(st)) {
      const auto walk = fs::directory_options::skip_permission_denied |
                        fs::directory_options::follow_directory_symlink;
      // Each directory is walked once, however many links lead to it: a link loop would
      // otherwise be followed until the path is too long (with two loops, for ever).
      std::set<std::pair<dev_t, ino_t>> walked;
      const auto first_walk = [&](const fs::path& dir) {
        struct stat ds {};
        return ::stat(dir.c_str(), &ds) != 0 || walked.emplace(ds.st_dev, ds.st_ino).second;
      };
      first_walk(p);
      for (fs::recursive_directory_iterator it(p, walk, ec), end; it != end; it.increment(ec)) {
        if (ec) break;
        throw_if_cancelled();
        std::error_code type_ec;
        if (it->is_directory(type_ec)) {
          if (!first_walk(it->path())) it.disable_recursion_pending();
          continue;
        }
        if (it->path().extension() == ".json" && it->is_regular_file(ec))
          files.push_back(it->path());
      }
    } else {
      files.emplace_back(p);
    }
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  if (files.empty())
    throw Error(ErrorKind::usage, "fleet merge: no run files (*.json) under the paths given");
  return files;
}

namespace {

// "<path>: cannot open: <reason>" without the path, which the report prints beside it.
std::string without_path(const std::string& what, const std::filesystem::path& path) {
  const std::string prefix = path.string() + ": ";
  return what.rfind(prefix, 0) == 0 ? what.substr(prefix.size()) : what;
}

double median_of(std::vector<double>& v) {
  const std::size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double hi = v[mid];
  if (v.size() % 2 == 1) return hi;
  const double lo = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lo + hi) / 2;
}

std::string group_key(const ScannedRun& r) {
  // Memory to the GiB and power to the watt: what tells an H200 NVL from an SXM, or a card
  // capped to a lower power class, apart.
  std::string k = r.gpu_name;
  k += '\x1f';
  k += r.memory_gib ? std::to_string(std::lround(*r.memory_gib)) : "?";
  k += '\x1f';
  k += r.power_limit_w ? std::to_string(std::lround(*r.power_limit_w)) : "?";
  k += '\x1f' + r.driver + '\x1f' + r.cuda;
  return k;
}

std::string pct(double fraction) {
  return fixed(fraction * 100, 1) + " %";
}

std::string number(double v) {
  const double a = std::fabs(v);
  return fixed(v, a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : 3);
}

std::string link_text(std::optional<int> gen, std::optional<int> width) {
  return "Gen" + (gen ? std::to_string(*gen) : std::string("?")) + " x" +
         (width ? std::to_string(*width) : std::string("?"));
}

std::string advice_for_slow(const std::string& key) {
  if (key.starts_with("probe.gemm."))
    return "compute below its peers: compare SM clocks and power under load with a healthy "
           "GPU (nvidia-smi -q -d PERFORMANCE,CLOCK), check cooling and the power cap; a GPU "
           "that stays slower after that is a candidate for replacement";
  if (key.starts_with("probe.memory."))
    return "HBM bandwidth below its peers: check the memory clock, the HBM temperature and "
           "remapped rows (nvidia-smi -q -d ROW_REMAPPER,ECC); a GPU with pending remaps needs "
           "a reset";
  if (key.starts_with("probe.pcie.") || key.starts_with("probe.host."))
    return "host transfers below its peers: check the link under load, that the process runs "
           "on the CPUs near the GPU (numactl), and the PCIe switch the GPU shares";
  if (key.starts_with("train."))
    return "training throughput below its peers: rerun `gpubase probe` on this GPU to see "
           "whether compute, memory or the host falls short";
  return "below its peers: rerun on this GPU and compare with a healthy one of its group";
}

}  // namespace

MergeReport merge_files(const std::vector<std::filesystem::path>& files,
                        const MergeOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  int jobs =
      options.jobs > 0 ? options.jobs : static_cast<int>(std::thread::hardware_concurrency());
  jobs = std::clamp(jobs, 1, 64);
  jobs = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(jobs), files.size()));

  struct Slot {
    std::optional<ScannedRun> run;
    std::string error;
    bool fleet_report = false;
    int worker = 0;
  };
  std::vector<Slot> slots(files.size());
  std::vector<KeyTable> tables(static_cast<std::size_t>(jobs));
  std::atomic<std::size_t> next{0};
  auto work = [&](int w) {
    KeyTable& keys = tables[static_cast<std::size_t>(w)];
    for (std::size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < files.size();) {
      if (cancel_requested()) return;  // Ctrl-C: the calling thread throws once all stopped
      Slot& s = slots[i];
      s.worker = w;
      // Mapped from the page cache and read whole at once (no copy: at fleet scale the copy out
      // of the page cache was a third of the merge's CPU time).
      MappedFile file;
      try {
        file = MappedFile::open(files[i], MappedFile::Load::now);
      } catch (const Error& e) {
        s.error = without_path(e.what(), files[i]);
        continue;
      }
      if (file.size() == 0) {
        s.error = "cannot read: empty file";
        continue;
      }
      const std::string_view text(reinterpret_cast<const char*>(file.bytes().data()), file.size());
      // A merged report in the same folder (-o runs/fleet.json) is not a run nor unreadable.
      if (text.substr(0, 256).find("\"gpubase.fleet\"") != std::string_view::npos) {
        s.fleet_report = true;
        continue;
      }
      try {
        s.run = scan_run(text, keys);
      } catch (const ScanError& e) {
        s.error = e.what();
      }
    }
  };
  std::vector<std::thread> threads;
  for (int w = 1; w < jobs; ++w)
    threads.emplace_back([&work, w] {
      name_this_thread("gb-merge " + std::to_string(w));
      work(w);
    });
  work(0);
  for (auto& t : threads) t.join();
  throw_if_cancelled();
  const auto t1 = std::chrono::steady_clock::now();

  // One key table: each worker's ids mapped into it.
  KeyTable keys;
  std::vector<std::vector<std::uint32_t>> remap(tables.size());
  for (std::size_t w = 0; w < tables.size(); ++w)
    for (std::uint32_t id = 0; id < tables[w].size(); ++id)
      remap[w].push_back(keys.intern(tables[w].name(id)));
  std::vector<ScannedRun> runs;
  std::vector<std::string> names;
  std::vector<UnreadableFile> unreadable;
  std::vector<std::string> fleet_reports;
  runs.reserve(files.size());
  names.reserve(files.size());
  for (std::size_t i = 0; i < slots.size(); ++i) {
    Slot& s = slots[i];
    if (s.fleet_report) {
      fleet_reports.push_back(files[i].string());
      continue;
    }
    if (!s.run) {
      unreadable.push_back({files[i].string(), s.error});
      continue;
    }
    for (ScannedFigure& f : s.run->figures)
      f.key = remap[static_cast<std::size_t>(s.worker)][f.key];
    runs.push_back(std::move(*s.run));
    names.push_back(files[i].string());
  }
  MergeReport report = merge_runs(std::move(runs), std::move(names), std::move(keys), options);
  report.unreadable = std::move(unreadable);
  report.fleet_reports = std::move(fleet_reports);
  report.scan_seconds = std::chrono::duration<double>(t1 - t0).count();
  report.total_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

MergeReport merge_runs(std::vector<ScannedRun> runs, std::vector<std::string> files, KeyTable keys,
                       const MergeOptions& options) {
  if (!(options.threshold > 0 && options.threshold < 1))
    throw Error(ErrorKind::usage, "fleet merge: --threshold must be between 0 and 100 %");
  MergeReport report;
  report.threshold = options.threshold;
  report.min_peers = std::max(options.min_peers, 1);
  report.runs = std::move(runs);
  report.files = std::move(files);
  report.keys = std::move(keys);
  constexpr std::size_t kNoGroup = std::numeric_limits<std::size_t>::max();
  report.run_group.assign(report.runs.size(), kNoGroup);

  // Groups, largest first (ties by their key, so the order does not depend on the files').
  std::map<std::string, std::vector<std::size_t>> by_key;
  for (std::size_t i = 0; i < report.runs.size(); ++i)
    if (!report.runs[i].gpu_unavailable) by_key[group_key(report.runs[i])].push_back(i);
  std::vector<const std::pair<const std::string, std::vector<std::size_t>>*> order;
  for (const auto& entry : by_key) order.push_back(&entry);
  std::stable_sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
    return a->second.size() > b->second.size();
  });

  const std::size_t nkeys = report.keys.size();
  std::vector<std::vector<double>> values(nkeys);
  std::vector<char> hib(nkeys, 1);
  // Median per (group, key): [group][key], NaN when the key is not judged in the group.
  std::vector<std::vector<double>> medians;
  for (const auto* entry : order) {
    Group g;
    g.id = "G" + std::to_string(report.groups.size() + 1);
    const ScannedRun& first = report.runs[entry->second.front()];
    g.gpu_name = first.gpu_name;
    g.memory_gib = first.memory_gib;
    g.power_limit_w = first.power_limit_w;
    g.driver = first.driver;
    g.cuda = first.cuda;
    g.gpus = entry->second.size();
    for (auto& v : values) v.clear();
    for (const std::size_t i : entry->second) {
      report.run_group[i] = report.groups.size();
      for (const ScannedFigure& f : report.runs[i].figures) {
        if (!f.judged || !f.has_value || f.invalid || sys::is_slowdown(f.throttle_reasons))
          continue;
        values[f.key].push_back(f.value);
        hib[f.key] = f.higher_is_better;
      }
    }
    std::vector<double> med(nkeys, std::nan(""));
    std::vector<double> dev;
    for (std::uint32_t k = 0; k < nkeys; ++k) {
      if (values[k].empty()) continue;
      KeyStats s;
      s.key = k;
      s.n = values[k].size();
      s.higher_is_better = hib[k] != 0;
      s.median = median_of(values[k]);
      dev.clear();
      for (const double v : values[k]) dev.push_back(std::fabs(v - s.median));
      s.mad = median_of(dev);
      med[k] = s.median;
      g.keys.push_back(s);
    }
    std::sort(g.keys.begin(), g.keys.end(), [&](const KeyStats& a, const KeyStats& b) {
      return report.keys.name(a.key) < report.keys.name(b.key);
    });
    report.groups.push_back(std::move(g));
    medians.push_back(std::move(med));
  }

  // Problems per GPU.
  for (std::size_t i = 0; i < report.runs.size(); ++i) {
    const ScannedRun& r = report.runs[i];
    FlaggedGpu flagged;
    flagged.run = i;
    if (r.gpu_unavailable) {
      Problem p;
      p.kind = ProblemKind::no_gpu;
      p.loss = 1;
      p.evidence = "the run had no GPU: " + *r.gpu_unavailable;
      p.advice =
          "check the driver (nvidia-smi) and that the job was given a GPU (Slurm "
          "--gres=gpu, Kubernetes nvidia.com/gpu, CUDA_VISIBLE_DEVICES)";
      flagged.problems.push_back(std::move(p));
    } else {
      const std::size_t gi = report.run_group[i];
      const Group& g = report.groups[gi];
      const bool compared = g.gpus >= static_cast<std::size_t>(report.min_peers);
      for (const ScannedFigure& f : r.figures) {
        const std::string& key = report.keys.name(f.key);
        const double m = medians[gi][f.key];
        std::optional<double> loss;
        if (f.has_value && std::isfinite(m) && m > 0)
          loss = f.higher_is_better ? 1 - f.value / m : f.value / m - 1;
        const bool throttled = sys::is_slowdown(f.throttle_reasons);
        if (f.invalid || throttled) {
          Problem p;
          p.kind = throttled ? ProblemKind::throttled : ProblemKind::invalid;
          p.key = key;
          if (f.has_value) p.value = f.value;
          if (std::isfinite(m)) p.median = m;
          p.loss = std::max(0.0, loss.value_or(0));
          if (throttled) {
            std::string reasons;
            for (const std::string& n : sys::throttle_reason_names(f.throttle_reasons))
              reasons += (reasons.empty() ? "" : ", ") + n;
            p.evidence = key + " was measured while the GPU slowed itself down (" + reasons + ")";
            p.advice =
                "check cooling, airflow and power delivery of this GPU; rerun once it is "
                "cool: a figure measured throttled cannot be compared";
          } else {
            p.evidence = key + " is invalid: " + (f.reason.empty() ? "no reason given" : f.reason);
            p.advice = "rerun on this GPU; an invalid figure cannot be compared with its peers";
          }
          if (loss && *loss > 0)
            p.evidence += "; " + pct(*loss) + (f.higher_is_better ? " below" : " above") +
                          " the group's median " + number(m);
          flagged.problems.push_back(std::move(p));
          continue;
        }
        if (!f.judged || !compared || !loss || *loss < report.threshold) continue;
        Problem p;
        p.kind = ProblemKind::slow;
        p.key = key;
        p.value = f.value;
        p.median = m;
        p.loss = *loss;
        const KeyStats* ks = nullptr;
        for (const KeyStats& s : g.keys)
          if (s.key == f.key) ks = &s;
        p.evidence = key + " = " + number(f.value) + " is " + pct(*loss) +
                     (f.higher_is_better ? " below" : " above") + " the median " + number(m) +
                     " of " + std::to_string(ks ? ks->n : 0) + " GPUs in " + g.id +
                     (ks && m != 0 ? " (MAD " + pct(ks->mad / std::fabs(m)) + ")" : "");
        p.advice = advice_for_slow(key);
        flagged.problems.push_back(std::move(p));
      }
      // The link under load against what the GPU supports.
      const ScannedLink& max = r.link_max_gpu;
      const std::optional<int> gen =
          r.link_gen_under_load ? std::optional<int>(static_cast<int>(*r.link_gen_under_load))
                                : std::nullopt;
      const std::optional<int> width =
          r.link_width_under_load ? std::optional<int>(static_cast<int>(*r.link_width_under_load))
                                  : std::nullopt;
      const bool gen_low = gen && max.gen && *gen < *max.gen;
      const bool width_low = width && max.width && *width < *max.width;
      if (gen_low || width_low) {
        Problem p;
        p.kind = ProblemKind::link;
        const int g_now = gen.value_or(max.gen.value_or(0));
        const int w_now = width.value_or(max.width.value_or(0));
        const double full = pcie_lane_gbps(max.gen.value_or(g_now)) * max.width.value_or(w_now);
        const double now = pcie_lane_gbps(g_now) * w_now;
        p.loss = full > 0 ? 1 - now / full : 0;
        p.evidence = "PCIe link under load " + link_text(gen, width) + ", the GPU supports " +
                     link_text(max.gen, max.width) + " (slot and GPU together: " +
                     link_text(r.link_max_slot.gen, r.link_max_slot.width) + "): " + pct(p.loss) +
                     " of the host bandwidth lost";
        const bool slot_limited =
            (r.link_max_slot.gen && max.gen && *r.link_max_slot.gen < *max.gen) ||
            (r.link_max_slot.width && max.width && *r.link_max_slot.width < *max.width);
        p.advice = slot_limited
                       ? "the slot or platform allows less than the GPU: check the BIOS PCIe "
                         "speed setting, the riser, or move the GPU to a full-speed slot"
                       : "the link trained down: reseat the GPU, check the riser and cables "
                         "and the PCIe error counters (AER); then rerun";
        flagged.problems.push_back(std::move(p));
      }
    }
    if (flagged.problems.empty()) continue;
    std::stable_sort(flagged.problems.begin(), flagged.problems.end(),
                     [](const Problem& a, const Problem& b) { return a.loss > b.loss; });
    flagged.score = flagged.problems.front().loss;
    report.flagged.push_back(std::move(flagged));
  }
  std::stable_sort(report.flagged.begin(), report.flagged.end(),
                   [&](const FlaggedGpu& a, const FlaggedGpu& b) {
                     if (a.score != b.score) return a.score > b.score;
                     const ScannedRun& ra = report.runs[a.run];
                     const ScannedRun& rb = report.runs[b.run];
                     if (ra.host != rb.host) return ra.host < rb.host;
                     return ra.gpu_index < rb.gpu_index;
                   });
  return report;
}

}  // namespace gb::fleet
