// watch/summary.cpp: running aggregates over the samples and the watch.* results.
#include "watch/summary.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <initializer_list>

#include "watch/host.hpp"
#include "watch/steady_window.hpp"

namespace gb::watch {

// ---- Aggregate, PercentHistogram, DownsampledSeries -------------------------------------

void Aggregate::add(std::optional<double> v, double weight_s) {
  if (!v || !std::isfinite(*v)) return;
  if (n == 0) {
    min = max = *v;
  } else {
    min = std::min(min, *v);
    max = std::max(max, *v);
  }
  ++n;
  const double w = weight_s > 0 ? weight_s : 1.0;
  weight += w;
  weighted_sum += *v * w;
}

std::optional<double> Aggregate::mean() const {
  if (n == 0 || weight <= 0) return std::nullopt;
  return weighted_sum / weight;
}

void PercentHistogram::add(double pct, double weight_s) {
  if (!std::isfinite(pct)) return;
  const double w = weight_s > 0 ? weight_s : 1.0;
  const auto bin = static_cast<std::size_t>(std::lround(std::clamp(pct, 0.0, 100.0) * 10.0));
  bins_[bin] += w;
  total_ += w;
}

std::optional<double> PercentHistogram::quantile(double q) const {
  if (total_ <= 0) return std::nullopt;
  const double target = std::clamp(q, 0.0, 1.0) * total_;
  double seen = 0;
  for (std::size_t i = 0; i < bins_.size(); ++i) {
    seen += bins_[i];
    if (bins_[i] > 0 && seen >= target) return static_cast<double>(i) / 10.0;
  }
  return 100.0;
}

std::optional<double> PercentHistogram::share_below(double pct) const {
  if (total_ <= 0) return std::nullopt;
  double below = 0;
  for (std::size_t i = 0; i < bins_.size(); ++i)
    if (static_cast<double>(i) / 10.0 < pct) below += bins_[i];
  return 100.0 * below / total_;
}

DownsampledSeries::DownsampledSeries(std::size_t max_points)
    : max_points_(std::max<std::size_t>(max_points, 4)) {
  points_.reserve(max_points_);
}

void DownsampledSeries::add(double t_s, double dt_s, std::optional<double> value) {
  if (!value || !std::isfinite(*value)) return;
  if (points_.size() >= max_points_) compact();
  points_.push_back(Point{t_s, dt_s > 0 ? dt_s : 1.0, *value});
}

void DownsampledSeries::compact() {
  // Merge pairs in the older half: a point then stands for the time of both.
  const std::size_t older = (points_.size() / 2) & ~std::size_t{1};
  std::vector<Point> out;
  out.reserve(max_points_);
  std::size_t i = 0;
  for (; i < older; i += 2) {
    const Point& a = points_[i];
    const Point& b = points_[i + 1];
    const double dt = a.dt + b.dt;
    out.push_back(Point{b.t, dt, (a.value * a.dt + b.value * b.dt) / dt});
  }
  for (; i < points_.size(); ++i) out.push_back(points_[i]);
  points_ = std::move(out);
}

std::vector<double> DownsampledSeries::values() const {
  std::vector<double> v;
  v.reserve(points_.size());
  for (const Point& p : points_) v.push_back(p.value);
  return v;
}

std::vector<double> DownsampledSeries::times() const {
  std::vector<double> v;
  v.reserve(points_.size());
  for (const Point& p : points_) v.push_back(p.t);
  return v;
}

// ---- WatchSummary -------------------------------------------------------------------------

namespace {

constexpr std::size_t kMaxProcesses = 4096;
constexpr std::size_t kMaxThreads = 4096;

template <typename T>
std::optional<double> as_double(const std::optional<T>& v) {
  if (!v) return std::nullopt;
  return static_cast<double>(*v);
}

// Keys of the figures that are plain time-weighted means (or maxima) of one sample field.
enum class Pick { mean, max, min };

struct Plain {
  const char* key;
  const char* label;
  const char* unit;
  Pick pick;
  bool higher_is_better;
};

// Order here is the order of the results in the run.
constexpr Plain kPlain[] = {
    {"watch.gpu.mem_util.pct", "GPU memory-controller utilization, mean", "%", Pick::mean, true},
    {"watch.gpu.sm_active.pct", "SM active (GPM), mean", "%", Pick::mean, true},
    {"watch.gpu.sm_occupancy.pct", "SM occupancy (GPM), mean", "%", Pick::mean, true},
    {"watch.gpu.tensor_active.pct", "tensor-core activity (GPM), mean", "%", Pick::mean, true},
    {"watch.gpu.dram_bw.pct", "DRAM bandwidth utilization (GPM), mean", "%", Pick::mean, true},
    {"watch.gpu.power.w", "GPU power, mean", "W", Pick::mean, false},
    {"watch.gpu.memory_used.gib", "GPU memory used, max", "GiB", Pick::max, false},
    {"watch.gpu.temp.c", "GPU temperature, max", "°C", Pick::max, false},
    {"watch.gpu.sm_clock.mhz", "SM clock, mean", "MHz", Pick::mean, true},
    {"watch.gpu.pcie.rx.gbps", "PCIe host to GPU, mean", "GB/s", Pick::mean, true},
    {"watch.gpu.pcie.tx.gbps", "PCIe GPU to host, mean", "GB/s", Pick::mean, true},
    {"watch.gpu.job.sm.pct", "the job's share of the GPU (per-process), mean", "%", Pick::mean,
     true},
    {"watch.cpu.mean_core.pct", "CPU busy, machine average", "%", Pick::mean, false},
    {"watch.cpu.saturated_cores", "cores >= 90 % busy, mean", "cores", Pick::mean, false},
    {"watch.cpu.iowait.pct", "CPU I/O wait, mean", "%", Pick::mean, false},
    {"watch.cpu.steal.pct", "CPU steal (hypervisor), mean", "%", Pick::mean, false},
    {"watch.cpu.system.pct", "CPU system time, mean", "%", Pick::mean, false},
    {"watch.cpu.ctx_switches.per_s", "context switches, machine", "/s", Pick::mean, false},
    {"watch.cpu.run_queue", "runnable tasks, mean", "tasks", Pick::mean, false},
    {"watch.cpu.blocked", "tasks blocked on I/O, mean", "tasks", Pick::mean, false},
    {"watch.job.cpu.pct", "job CPU (100 % = one core), mean", "%", Pick::mean, false},
    {"watch.job.processes", "job processes, max", "processes", Pick::max, false},
    {"watch.job.active_processes", "job processes using >= 10 % of a core, mean", "processes",
     Pick::mean, false},
    {"watch.job.saturated_processes", "job processes using >= 90 % of a core, mean",
     "processes", Pick::mean, false},
    {"watch.job.threads", "job threads, max", "threads", Pick::max, false},
    {"watch.job.voluntary_cs.per_s", "job voluntary context switches", "/s", Pick::mean, false},
    {"watch.job.involuntary_cs.per_s", "job involuntary context switches", "/s", Pick::mean,
     false},
    {"watch.job.involuntary_cs_per_process.per_s",
     "involuntary context switches per active process", "/s", Pick::mean, false},
    {"watch.job.rss.gib", "job resident memory, max", "GiB", Pick::max, false},
    {"watch.mem.available.gib", "memory available, min", "GiB", Pick::min, true},
    {"watch.mem.available.pct", "memory available, min (share of total)", "%", Pick::min, true},
    {"watch.mem.page_cache.gib", "page cache, mean", "GiB", Pick::mean, true},
    {"watch.disk.read.mbps", "disk reads, all disks", "MB/s", Pick::mean, true},
    {"watch.disk.write.mbps", "disk writes, all disks", "MB/s", Pick::mean, true},
    {"watch.perf.ipc", "instructions per cycle (perf)", "IPC", Pick::mean, true},
    {"watch.perf.task_clock.cores", "CPUs utilized by the job (perf task-clock)", "CPUs",
     Pick::mean, false},
    {"watch.perf.context_switches.per_s", "job context switches (perf)", "/s", Pick::mean, false},
    {"watch.perf.migrations.per_s", "job CPU migrations (perf)", "/s", Pick::mean, false},
    {"watch.perf.page_faults.per_s", "job page faults (perf)", "/s", Pick::mean, false},
    {"watch.perf.cache_misses.per_s", "job cache misses (perf)", "/s", Pick::mean, false},
    {"watch.sampler.cpu.pct", "gpubase's own CPU (100 % = one core)", "%", Pick::mean, false},
};

std::optional<double> pick(const Aggregate& a, Pick p) {
  switch (p) {
    case Pick::mean:
      return a.mean();
    case Pick::max:
      return a.maximum();
    case Pick::min:
      return a.minimum();
  }
  return std::nullopt;
}

bool starts_with(const std::string& s, const char* prefix) {
  return s.rfind(prefix, 0) == 0;
}

Result value_result(const std::string& key, const std::string& label, const std::string& unit,
                    std::optional<double> value, bool higher_is_better,
                    const std::string& missing_reason, std::vector<double> samples = {}) {
  if (!value) return Result::skipped(key, label, unit, missing_reason);
  Result r;
  r.key = key;
  r.label = label;
  r.unit = unit;
  r.higher_is_better = higher_is_better;
  r.stats = compute_stats(samples);
  r.samples = std::move(samples);
  r.value = *value;
  r.status = Status::info;
  return r;
}

// Why a figure has no value, by its key's family.
std::string missing_reason(const SummaryContext& ctx, const std::string& key) {
  if (starts_with(key, "watch.gpu.")) {
    if (!ctx.gpu_unavailable_reason.empty()) return ctx.gpu_unavailable_reason;
    if (key == "watch.gpu.job.sm.pct" && !ctx.attribution_unavailable_reason.empty())
      return ctx.attribution_unavailable_reason;
    if ((key.find("sm_active") != std::string::npos ||
         key.find("occupancy") != std::string::npos ||
         key.find("tensor") != std::string::npos || key.find("dram_bw") != std::string::npos) &&
        !ctx.gpm_unavailable_reason.empty())
      return "GPM: " + ctx.gpm_unavailable_reason;
    return "not reported by this GPU or driver";
  }
  if (starts_with(key, "watch.perf.")) {
    if (const auto it = ctx.perf_counter_reasons.find(key); it != ctx.perf_counter_reasons.end())
      return it->second;
    if (!ctx.perf_unavailable_reason.empty()) return ctx.perf_unavailable_reason;
    return "perf counters not available";
  }
  if (starts_with(key, "watch.job.")) return "the job's processes could not be read";
  if (starts_with(key, "watch.disk.")) return "no disk with I/O statistics";
  return "not reported by this machine";
}

// One plain figure from its aggregate; GPU figures name the GPU.
Result plain_result(const SummaryContext& ctx, const Aggregate& a, const Plain& p) {
  Result r = value_result(p.key, p.label, p.unit, pick(a, p.pick), p.higher_is_better,
                          missing_reason(ctx, p.key));
  if (!ctx.device_label.empty() && starts_with(p.key, "watch.gpu."))
    r.param("gpu", ctx.device_label);
  return r;
}

// The kPlain figures whose keys start with one of the prefixes, in kPlain's order.
void append_plain(std::vector<Result>& out, const SummaryContext& ctx,
                  const std::map<std::string, Aggregate>& aggs,
                  std::initializer_list<const char*> prefixes) {
  static const Aggregate empty;
  for (const Plain& p : kPlain) {
    if (std::none_of(prefixes.begin(), prefixes.end(),
                     [&](const char* prefix) { return starts_with(p.key, prefix); }))
      continue;
    const auto it = aggs.find(p.key);
    out.push_back(plain_result(ctx, it == aggs.end() ? empty : it->second, p));
  }
}

}  // namespace

SampleAccumulator::SampleAccumulator(std::size_t max_series_points)
    : gpu_util_series_(max_series_points),
      job_cpu_series_(max_series_points),
      busiest_core_series_(max_series_points) {}

void SampleAccumulator::add(const WatchSample& s) {
  ++samples_;
  duration_s_ += s.interval_s;
  add_gpu(s);
  add_cpu(s);
  add_job(s);
  add_memory_and_disk(s);
  add_perf(s);
}

// GPU figures, the utilization histogram and series, and the telemetry extremes.
void SampleAccumulator::add_gpu(const WatchSample& s) {
  const double w = s.interval_s;
  auto add = [&](const char* key, std::optional<double> v) { agg_[key].add(v, w); };
  const GpuInterval& g = s.gpu;
  add("watch.gpu.util.pct", g.util_pct);
  if (g.util_pct) gpu_util_hist_.add(*g.util_pct, w);
  gpu_util_series_.add(s.t_s, w, g.util_pct);
  add("watch.gpu.mem_util.pct", g.mem_util_pct);
  add("watch.gpu.sm_active.pct", g.sm_active_pct);
  add("watch.gpu.sm_occupancy.pct", g.sm_occupancy_pct);
  add("watch.gpu.tensor_active.pct", g.tensor_active_pct);
  add("watch.gpu.dram_bw.pct", g.dram_bw_pct);
  add("watch.gpu.power.w", g.power_w);
  add("watch.gpu.memory_used.gib", g.memory_used_gib);
  add("watch.gpu.temp.c", g.temp_c);
  add("watch.gpu.memory_temp.c", g.memory_temp_c);
  add("watch.gpu.sm_clock.mhz", g.sm_clock_mhz);
  add("watch.gpu.mem_clock.mhz", g.mem_clock_mhz);
  add("watch.gpu.pcie.rx.gbps", g.pcie_rx_gbps);
  add("watch.gpu.pcie.tx.gbps", g.pcie_tx_gbps);
  add("watch.gpu.job.sm.pct", g.job_sm_pct);
  add("watch.gpu.other_processes", as_double(g.other_processes));
  for (const auto pid : g.other_pids) other_pids_.insert(pid);
  if (g.throttle_reasons) throttle_reasons_ = throttle_reasons_.value_or(0) | *g.throttle_reasons;
  auto minmax = [](std::optional<int>& lo, std::optional<int>& hi, std::optional<int> v) {
    if (!v) return;
    lo = lo ? std::min(*lo, *v) : *v;
    hi = hi ? std::max(*hi, *v) : *v;
  };
  minmax(pcie_gen_min_, pcie_gen_max_, g.pcie_gen);
  minmax(pcie_width_min_, pcie_width_max_, g.pcie_width);
}

// Machine CPU figures, per core.
void SampleAccumulator::add_cpu(const WatchSample& s) {
  const double w = s.interval_s;
  auto add = [&](const char* key, std::optional<double> v) { agg_[key].add(v, w); };
  const CpuInterval& c = s.cpu;
  add("watch.cpu.mean_core.pct", c.mean_core_pct);
  add("watch.cpu.busiest_core.pct", c.busiest_core_pct);
  busiest_core_series_.add(s.t_s, w, c.busiest_core_pct);
  if (c.busiest_core) ++busiest_core_count_[*c.busiest_core];
  add("watch.cpu.saturated_cores", as_double(c.saturated_cores));
  add("watch.cpu.iowait.pct", c.iowait_pct);
  add("watch.cpu.steal.pct", c.steal_pct);
  add("watch.cpu.system.pct", c.system_pct);
  add("watch.cpu.ctx_switches.per_s", c.ctx_switches_per_s);
  add("watch.cpu.run_queue", as_double(c.run_queue));
  add("watch.cpu.blocked", as_double(c.blocked));
  for (const auto& [core, busy] : c.core_busy_pct) core_busy_[core].add(busy, w);
}

// The job's figures and its processes, while it is alive.
void SampleAccumulator::add_job(const WatchSample& s) {
  const JobInterval& j = s.job;
  if (!j.alive) return;
  const double w = s.interval_s;
  auto add = [&](const char* key, std::optional<double> v) { agg_[key].add(v, w); };
  add("watch.job.cpu.pct", j.cpu_pct);
  job_cpu_series_.add(s.t_s, w, j.cpu_pct);
  add("watch.job.processes", static_cast<double>(j.processes));
  add("watch.job.active_processes", static_cast<double>(j.active_processes));
  add("watch.job.saturated_processes", static_cast<double>(j.saturated_processes));
  add("watch.job.threads", static_cast<double>(j.threads));
  add("watch.job.voluntary_cs.per_s", j.voluntary_cs_per_s);
  add("watch.job.involuntary_cs.per_s", j.involuntary_cs_per_s);
  if (j.involuntary_cs_per_s && j.active_processes > 0)
    add("watch.job.involuntary_cs_per_process.per_s",
        *j.involuntary_cs_per_s / j.active_processes);
  add("watch.job.rss.gib", j.rss_gib);
  for (const ProcessInterval& p : j.processes_detail) {
    ProcessAcc& acc = processes_[p.pid];
    acc.comm = p.comm;
    // Weighted by the whole interval, so a process that lived briefly is not "busiest".
    acc.cpu.add(p.cpu_pct, w);
  }
  cap_processes();
  if (const auto& t = j.busiest_thread) {
    add("watch.job.busiest_thread.cpu.pct", t->cpu_pct);
    // An interval in which no thread ran names no thread: else the lowest tid of an idle job
    // would be "busiest" in every idle interval.
    if (t->cpu_pct > 0) {
      ThreadAcc& acc = busiest_threads_[{t->pid, t->tid}];
      acc.comm = t->comm;  // a thread may rename itself: keep the latest name
      acc.process_comm = t->process_comm;
      ++acc.busiest;
      cap_threads();
    }
  }
}

// A job that spawns many short-lived processes must not grow the process map without bound:
// past kMaxProcesses, keep the half that used the most CPU.
void SampleAccumulator::cap_processes() {
  if (processes_.size() <= kMaxProcesses) return;
  std::vector<std::pair<double, int>> by_cpu;
  for (const auto& [pid, acc] : processes_) by_cpu.emplace_back(acc.cpu.weighted_sum, pid);
  const auto keep = by_cpu.begin() + static_cast<std::ptrdiff_t>(kMaxProcesses / 2);
  std::nth_element(by_cpu.begin(), keep, by_cpu.end(), std::greater<>());
  for (auto it = keep; it != by_cpu.end(); ++it) processes_.erase(it->second);
}

// A job whose busiest thread changes every interval (short-lived threads) must not grow the map
// without bound either: past kMaxThreads, keep the half that was busiest most often.
void SampleAccumulator::cap_threads() {
  if (busiest_threads_.size() <= kMaxThreads) return;
  std::vector<std::pair<std::size_t, std::pair<int, int>>> by_count;
  for (const auto& [id, acc] : busiest_threads_) by_count.emplace_back(acc.busiest, id);
  const auto keep = by_count.begin() + static_cast<std::ptrdiff_t>(kMaxThreads / 2);
  std::nth_element(by_count.begin(), keep, by_count.end(), std::greater<>());
  for (auto it = keep; it != by_count.end(); ++it) busiest_threads_.erase(it->second);
}

// Memory, and the disks (all together and per device).
void SampleAccumulator::add_memory_and_disk(const WatchSample& s) {
  const double w = s.interval_s;
  auto add = [&](const char* key, std::optional<double> v) { agg_[key].add(v, w); };
  const MemoryInterval& m = s.mem;
  add("watch.mem.available.gib", m.available_gib);
  if (m.available_gib && m.total_gib && *m.total_gib > 0)
    add("watch.mem.available.pct", 100.0 * *m.available_gib / *m.total_gib);
  add("watch.mem.page_cache.gib", m.page_cache_gib);

  const DiskInterval& d = s.disk;
  add("watch.disk.read.mbps", d.read_mbps);
  add("watch.disk.write.mbps", d.write_mbps);
  for (const DeviceIo& io : d.devices) {
    disk_util_[io.name].add(io.util_pct, w);
    agg_["disk.r_await." + io.name].add(io.r_await_ms, w);
    agg_["disk.w_await." + io.name].add(io.w_await_ms, w);
    agg_["disk.reads." + io.name].add(io.reads_per_s, w);
    agg_["disk.writes." + io.name].add(io.writes_per_s, w);
    agg_["disk.queue." + io.name].add(io.queue, w);
  }
}

// perf_event counters and the sampler's own cost.
void SampleAccumulator::add_perf(const WatchSample& s) {
  const double w = s.interval_s;
  auto add = [&](const char* key, std::optional<double> v) { agg_[key].add(v, w); };
  const PerfInterval& p = s.perf;
  add("watch.perf.ipc", p.ipc);
  add("watch.perf.task_clock.cores", p.task_clock_cores);
  add("watch.perf.context_switches.per_s", p.context_switches_per_s);
  add("watch.perf.migrations.per_s", p.migrations_per_s);
  add("watch.perf.page_faults.per_s", p.page_faults_per_s);
  add("watch.perf.cache_misses.per_s", p.cache_misses_per_s);
  add("watch.sampler.cpu.pct", s.sampler_cpu_pct);
  add("sampler.host.ms", s.sampler_host_ms);
  add("sampler.gpu.ms", s.sampler_gpu_ms);
  add("sampler.perf.ms", s.sampler_perf_ms);
}

const Aggregate& SampleAccumulator::agg(const std::string& key) const {
  static const Aggregate empty;
  const auto it = agg_.find(key);
  return it == agg_.end() ? empty : it->second;
}

std::vector<Result> SampleAccumulator::results(const SummaryContext& ctx) const {
  std::vector<Result> out;
  gpu_results(ctx, out);
  cpu_results(ctx, out);
  job_results(ctx, out);
  memory_and_disk_results(ctx, out);
  perf_results(ctx, out);
  out.push_back(value_result("watch.samples", "samples taken", "samples",
                             static_cast<double>(samples_), true, ""));
  return out;
}

// GPU utilization (mean with the series and the telemetry, p10, share below 95 %), the plain
// GPU figures, and the other processes on the GPU.
void SampleAccumulator::gpu_results(const SummaryContext& ctx, std::vector<Result>& out) const {
  const Aggregate& a = agg("watch.gpu.util.pct");
  Result util = value_result("watch.gpu.util.pct", "GPU utilization, mean", "%", a.mean(), true,
                             missing_reason(ctx, "watch.gpu.util.pct"), gpu_util_series_.values());
  if (util.value) {
    util.param("source", "the driver's utilization samples inside each interval");
    if (!ctx.device_label.empty()) util.param("gpu", ctx.device_label);
    if (gpu_util_series_.size() >= gpu_util_series_.max_points() / 2)
      util.param("series", "older points averaged in pairs to keep at most " +
                               std::to_string(gpu_util_series_.max_points()) + " points");
    Telemetry t;
    t.samples = a.n;
    const Aggregate& clk = agg("watch.gpu.sm_clock.mhz");
    t.sm_clock_mhz_min = clk.minimum();
    t.sm_clock_mhz_max = clk.maximum();
    t.sm_clock_mhz_mean = clk.mean();
    t.mem_clock_mhz_mean = agg("watch.gpu.mem_clock.mhz").mean();
    t.power_w_mean = agg("watch.gpu.power.w").mean();
    t.power_w_max = agg("watch.gpu.power.w").maximum();
    t.temp_c_max = agg("watch.gpu.temp.c").maximum();
    t.throttle_reasons = throttle_reasons_;
    t.pcie_gen_min = pcie_gen_min_;
    t.pcie_gen_max = pcie_gen_max_;
    t.pcie_width_min = pcie_width_min_;
    t.pcie_width_max = pcie_width_max_;
    util.telemetry = t;
  }
  out.push_back(std::move(util));
  out.push_back(value_result("watch.gpu.util.p10.pct", "GPU utilization, 10th percentile", "%",
                             gpu_util_hist_.quantile(0.10), true,
                             missing_reason(ctx, "watch.gpu.util.pct")));
  out.push_back(value_result("watch.gpu.util.below95.share.pct",
                             "share of time GPU utilization < 95 %", "%",
                             gpu_util_hist_.share_below(95.0), false,
                             missing_reason(ctx, "watch.gpu.util.pct")));
  append_plain(out, ctx, agg_, {"watch.gpu."});

  const Plain others_fig{"watch.gpu.other_processes", "other processes using the GPU, max",
                         "processes", Pick::max, false};
  Result others = plain_result(ctx, agg("watch.gpu.other_processes"), others_fig);
  if (!other_pids_.empty()) {
    std::string pids;
    for (const auto pid : other_pids_) pids += (pids.empty() ? "" : ",") + std::to_string(pid);
    others.param("pids", pids);
  }
  out.push_back(std::move(others));
}

// Host CPU: cores, the busiest core per interval, the hottest core over the run, plain figures.
void SampleAccumulator::cpu_results(const SummaryContext& ctx, std::vector<Result>& out) const {
  out.push_back(value_result("watch.host.cores", "online CPU cores", "cores",
                             ctx.online_cores > 0 ? std::optional<double>(ctx.online_cores)
                                                  : std::nullopt,
                             true, "could not count the online CPUs"));
  Result busiest = value_result("watch.cpu.busiest_core.pct",
                                "busiest core's busy share, mean over intervals", "%",
                                agg("watch.cpu.busiest_core.pct").mean(), false,
                                "no per-core CPU figures in /proc/stat",
                                busiest_core_series_.values());
  if (!busiest_core_count_.empty()) {
    const auto most = std::max_element(
        busiest_core_count_.begin(), busiest_core_count_.end(),
        [](const auto& a, const auto& b) { return a.second < b.second; });
    busiest.param("core", "cpu" + std::to_string(most->first) + " (busiest in " +
                              std::to_string(most->second) + " of " +
                              std::to_string(samples_) + " intervals)");
  }
  out.push_back(std::move(busiest));

  std::optional<double> hottest;
  int hottest_core = -1;
  for (const auto& [core, a] : core_busy_)
    if (const auto m = a.mean(); m && (!hottest || *m > *hottest)) {
      hottest = m;
      hottest_core = core;
    }
  Result r = value_result("watch.cpu.hottest_core.pct", "hottest core's mean busy share", "%",
                          hottest, false, "no per-core CPU figures in /proc/stat");
  if (hottest) r.param("core", "cpu" + std::to_string(hottest_core));
  out.push_back(std::move(r));
  append_plain(out, ctx, agg_, {"watch.cpu."});
}

// The job: plain figures, then its busiest process.
void SampleAccumulator::job_results(const SummaryContext& ctx, std::vector<Result>& out) const {
  append_plain(out, ctx, agg_, {"watch.job."});
  const ProcessAcc* top = nullptr;
  int top_pid = 0;
  for (const auto& [pid, acc] : processes_)
    if (!top || acc.cpu.weighted_sum > top->cpu.weighted_sum) {
      top = &acc;
      top_pid = pid;
    }
  // Mean over the whole run (time without the process counts as 0).
  std::optional<double> v;
  if (top && duration_s_ > 0) v = top->cpu.weighted_sum / duration_s_;
  Result r = value_result("watch.job.busiest_process.cpu.pct",
                          "busiest job process (100 % = one core), mean", "%", v, false,
                          missing_reason(ctx, "watch.job."));
  if (top) {
    r.param("pid", std::to_string(top_pid));
    r.param("comm", top->comm);
  }
  out.push_back(std::move(r));
  out.push_back(busiest_thread_result());
}

// The mean over intervals of each interval's busiest thread, named after the thread that was
// busiest most often (as watch.cpu.busiest_core.pct names its core).
Result SampleAccumulator::busiest_thread_result() const {
  const Aggregate& a = agg("watch.job.busiest_thread.cpu.pct");
  Result r = value_result("watch.job.busiest_thread.cpu.pct",
                          "the job's busiest thread, % of one core, mean over intervals", "%",
                          a.mean(), false,
                          "the job's threads could not be read (/proc/<pid>/task)");
  const auto most = std::max_element(
      busiest_threads_.begin(), busiest_threads_.end(),
      [](const auto& x, const auto& y) { return x.second.busiest < y.second.busiest; });
  if (r.value && most != busiest_threads_.end()) {
    const auto& [pid, tid] = most->first;
    r.param("thread", most->second.comm + " (tid " + std::to_string(tid) + " of pid " +
                          std::to_string(pid) + ", busiest in " +
                          std::to_string(most->second.busiest) + " of " + std::to_string(a.n) +
                          " intervals)");
    r.param("process", most->second.process_comm);
    r.param("tid", static_cast<double>(tid), "", 0);
    r.param("pid", static_cast<double>(pid), "", 0);
  }
  return r;
}

// Memory, then the busiest disk (its %util, await and queue) and the all-disk figures.
void SampleAccumulator::memory_and_disk_results(const SummaryContext& ctx,
                                                std::vector<Result>& out) const {
  append_plain(out, ctx, agg_, {"watch.mem."});
  std::string name;
  std::optional<double> util;
  for (const auto& [dev, a] : disk_util_)
    if (const auto m = a.mean(); m && (!util || *m > *util)) {
      util = m;
      name = dev;
    }
  Result u = value_result("watch.disk.util.pct", "busiest disk's %util, mean", "%", util, false,
                          missing_reason(ctx, "watch.disk."));
  // The await of the direction the disk mostly served (iostat's r_await or w_await).
  const bool writes = util && agg("disk.writes." + name).mean().value_or(0) >
                                  agg("disk.reads." + name).mean().value_or(0);
  const char* dir = writes ? "write" : "read";
  Result aw = value_result(
      "watch.disk.await.ms", std::string("busiest disk's ") + dir + " await, mean", "ms",
      util ? agg(std::string(writes ? "disk.w_await." : "disk.r_await.") + name).mean()
           : std::nullopt,
      false, util ? std::string("no ") + dir + "s completed on " + name
                  : missing_reason(ctx, "watch.disk."));
  if (util) aw.param("direction", dir);
  Result q = value_result("watch.disk.queue", "busiest disk's queue size (aqu-sz), mean",
                          "requests", util ? agg("disk.queue." + name).mean() : std::nullopt,
                          false, missing_reason(ctx, "watch.disk."));
  for (Result* r : {&u, &aw, &q})
    if (util) r->param("device", name);
  out.push_back(std::move(u));
  out.push_back(std::move(aw));
  out.push_back(std::move(q));
  append_plain(out, ctx, agg_, {"watch.disk."});
}

// perf_event figures and the sampler's own CPU, with what each sample cost per source.
void SampleAccumulator::perf_results(const SummaryContext& ctx, std::vector<Result>& out) const {
  append_plain(out, ctx, agg_, {"watch.perf.", "watch.sampler."});
  std::string cost;
  for (const auto& [part, key] : {std::pair<const char*, const char*>{"/proc", "sampler.host.ms"},
                                  {"NVML", "sampler.gpu.ms"},
                                  {"perf", "sampler.perf.ms"}})
    if (const auto m = agg(key).mean()) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%s %.2f ms", part, *m);
      cost += (cost.empty() ? "" : ", ") + std::string(buf);
    }
  if (!cost.empty())
    for (Result& r : out)
      if (r.key == "watch.sampler.cpu.pct") r.param("cpu per sample", cost);
}

std::optional<double> SampleAccumulator::gpu_util_mean() const {
  const auto it = agg_.find("watch.gpu.util.pct");
  return it == agg_.end() ? std::nullopt : it->second.mean();
}

WatchSummary::WatchSummary(std::size_t max_series_points)
    : all_(max_series_points),
      window_(max_series_points),
      steady_(max_series_points),
      marked_(max_series_points) {}

void WatchSummary::Window::flush_tail() {
  for (const WatchSample& t : tail) {
    acc.add(t);
    end_s = t.t_s;
  }
  tail.clear();
}

void WatchSummary::Window::add(const WatchSample& s, bool active) {
  if (!begin_s) begin_s = s.t_s - s.interval_s;
  if (active) {
    flush_tail();
    tail_s = 0;
    acc.add(s);
    end_s = s.t_s;
    return;
  }
  tail.push_back(s);
  tail_s += s.interval_s;
  // An idle stretch past the limit counts from then on, to its end.
  if (tail_s > kMaxIdleTailS) flush_tail();
}

std::optional<double> WatchSummary::gpu_start_s() const {
  return cuda_start_s_ ? cuda_start_s_ : nvml_start_s_;
}

void WatchSummary::judge_from(double t_s) {
  if (!marked_start_s_) marked_start_s_ = t_s;
}

void WatchSummary::add(const WatchSample& s) {
  all_.add(s);
  if (marked_start_s_) {
    // An idle end (the work done, the stage closing) is left out as in the steady window;
    // without GPU figures every sample is the work's.
    const bool active = !s.gpu.util_pct || *s.gpu.util_pct >= kActiveUtilPct ||
                        s.cuda.kernels_per_s.value_or(0.0) > 0;
    if (s.t_s - s.interval_s >= *marked_start_s_ - 1e-6) marked_.add(s, active);
    return;
  }
  if (s.cuda.since_first_kernel_s) {
    const double t = std::max(0.0, s.t_s - *s.cuda.since_first_kernel_s);
    if (!cuda_start_s_ || t < *cuda_start_s_) cuda_start_s_ = t;
  }
  const double util = s.gpu.util_pct.value_or(0.0);
  if (!nvml_start_s_ && util >= kBusyUtilPct) nvml_start_s_ = s.t_s - s.interval_s;
  const std::optional<double> start = gpu_start_s();
  if (!start) return;
  const bool active = util >= kActiveUtilPct || s.cuda.kernels_per_s.value_or(0.0) > 0;
  window_.add(s, active);
  // The first kernel is known about a second after it ran, well inside the warm-up, so no
  // sample of the steady window is missed.
  if (s.t_s - s.interval_s >= *start + kWarmupS - 1e-6) steady_.add(s, active);
}

std::vector<Result> WatchSummary::results(const SummaryContext& ctx) const {
  if (marked_start_s_ && marked_.acc.samples() > 0) return marked_results(ctx);
  const std::optional<double> start = gpu_start_s();
  const bool steady = start && steady_.acc.samples() > 0 && steady_.acc.duration_s() >= kMinSteadyS;
  const bool windowed = !steady && start && window_.acc.samples() > 0;
  const Window* w = steady ? &steady_ : windowed ? &window_ : nullptr;
  std::vector<Result> figures = w ? w->acc.results(ctx) : all_.results(ctx);
  const double run_s = all_.duration_s();
  const double window_s = w ? w->acc.duration_s() : run_s;
  const double startup_s = w ? *start : 0.0;
  const std::string first_work =
      cuda_start_s_ ? "the job's first kernel" : "the first interval with the GPU >= 5 % busy";
  const std::string share = std::to_string(static_cast<long>(window_s + 0.5)) + " of " +
                            std::to_string(static_cast<long>(run_s + 0.5)) + " s";
  std::string scope = "the whole run (the GPU never got busy)";
  if (w) {
    const double begin = w->begin_s.value_or(*start);
    scope = "judged over " + clock_text(begin) + "-" + clock_text(w->end_s) + ", " + share +
            (steady ? ": the steady state; start-up before " + first_work + " (" +
                          clock_text(*start) + ") and a " +
                          std::to_string(static_cast<int>(kWarmupS)) + "-s warm-up excluded"
                    : ": the working window from " + first_work + " (" + clock_text(*start) +
                          "); too short to leave a warm-up out");
  }
  if (!ctx.gpu_unavailable_reason.empty() && !w) scope = "the whole run";
  return window_results(std::move(figures), scope, window_s, startup_s, steady ? kWarmupS : 0.0,
                        ctx);
}

// The measured work was marked (judge_from): its samples, nothing else.
std::vector<Result> WatchSummary::marked_results(const SummaryContext& ctx) const {
  const double run_s = all_.duration_s();
  const double window_s = marked_.acc.duration_s();
  const double begin = marked_.begin_s.value_or(*marked_start_s_);
  const std::string scope =
      "judged over " + clock_text(begin) + "-" + clock_text(marked_.end_s) + ", " +
      std::to_string(static_cast<long>(window_s + 0.5)) + " of " +
      std::to_string(static_cast<long>(run_s + 0.5)) +
      " s: the measured work alone; what ran before it (" + clock_text(*marked_start_s_) +
      ": building, autotuning, warm-up steps) excluded";
  return window_results(marked_.acc.results(ctx), scope, window_s, *marked_start_s_, 0.0, ctx);
}

// The figures after the results that say what they cover.
std::vector<Result> WatchSummary::window_results(std::vector<Result> figures,
                                                 const std::string& scope, double window_s,
                                                 double startup_s, double warmup_s,
                                                 const SummaryContext& ctx) const {
  const double run_s = all_.duration_s();
  for (Result& r : figures)
    if (r.key == "watch.gpu.util.pct" && r.value) r.param("over", scope);

  // What the figures cover comes first.
  std::vector<Result> out;
  out.push_back(value_result("watch.window.s", "the figures below cover", "s", window_s, true,
                             ""));
  out.back().param("over", scope);
  out.push_back(value_result("watch.startup.s", "start-up before the job's first GPU work", "s",
                             startup_s, false, ""));
  out.push_back(value_result("watch.warmup.s", "warm-up after the first GPU work, left out", "s",
                             warmup_s, false, ""));
  out.push_back(value_result("watch.duration.s", "watched in all", "s", run_s, true, ""));
  out.push_back(value_result("watch.gpu.util.run.pct", "GPU utilization over the whole run", "%",
                             all_.gpu_util_mean(), true,
                             ctx.gpu_unavailable_reason.empty() ? "no GPU utilization samples"
                                                                : ctx.gpu_unavailable_reason));
  out.back().key = "watch.window.gpu_util_run.pct";
  for (Result& r : figures) out.push_back(std::move(r));
  return out;
}

}  // namespace gb::watch
