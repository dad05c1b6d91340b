// watch/cuda_totals.cpp: CUDA interval records -> per-interval figures and watch.cuda.* results.
#include "watch/cuda_totals.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "core/format.hpp"

namespace gb::watch {

namespace ca = cuda_activity;

namespace {

double per_s(double count, std::uint64_t wall_ns) {
  return wall_ns ? count * 1e9 / static_cast<double>(wall_ns) : 0.0;
}

Result value(const std::string& key, const std::string& label, const std::string& unit,
             std::optional<double> v, bool higher_is_better, const std::string& missing) {
  if (!v || !std::isfinite(*v)) return Result::skipped(key, label, unit, missing);
  Result r;
  r.key = key;
  r.label = label;
  r.unit = unit;
  r.value = *v;
  r.higher_is_better = higher_is_better;
  r.status = Status::info;
  return r;
}

// The q-quantile of a duration histogram (bins' geometric middles), counting bins from min_ns.
std::optional<double> hist_quantile_ns(const std::array<std::uint64_t, ca::kDurationBins>& h,
                                       double q, double min_ns) {
  std::uint64_t total = 0;
  for (int b = 0; b < ca::kDurationBins; ++b)
    if (ca::bin_lower_ns(b) >= min_ns) total += h[static_cast<std::size_t>(b)];
  if (total == 0) return std::nullopt;
  const double target = q * static_cast<double>(total);
  std::uint64_t seen = 0;
  for (int b = 0; b < ca::kDurationBins; ++b) {
    if (ca::bin_lower_ns(b) < min_ns) continue;
    seen += h[static_cast<std::size_t>(b)];
    if (static_cast<double>(seen) >= target && h[static_cast<std::size_t>(b)] > 0)
      return ca::bin_mid_ns(b);
  }
  return std::nullopt;
}

}  // namespace

void CudaTotals::add(const ca::IntervalRecord& r) {
  if (r.kind != ca::RecordKind::interval || r.t1_ns <= r.t0_ns) return;
  ++records_;
  t_begin_ = t_begin_ ? std::min(t_begin_, r.t0_ns) : r.t0_ns;
  t_end_ = std::max(t_end_, r.t1_ns);
  const std::uint64_t len = r.t1_ns - r.t0_ns;
  for (std::uint32_t i = 0; i < r.devices && i < static_cast<std::uint32_t>(ca::kMaxDevices);
       ++i) {
    const ca::DeviceInterval& d = r.dev[i];
    if (!d.used) continue;
    DeviceSums& s = devices_[d.device];
    s.busy_ns += d.busy_ns;
    s.wall_ns += len;
    kernels_ += d.kernels;
    tiny_kernels_ += d.tiny_kernels;
    kernel_ns_ += d.kernel_ns;
    tiny_kernel_ns_ += d.tiny_kernel_ns;
    gaps_ += d.gaps;
    gap_ns_ += d.gap_ns;
    for (int b = 0; b < ca::kDurationBins; ++b) {
      kernel_hist_[static_cast<std::size_t>(b)] += d.kernel_hist[b];
      gap_hist_[static_cast<std::size_t>(b)] += d.gap_hist[b];
    }
    for (int k = 0; k < ca::kCopyKinds; ++k) {
      copies_[static_cast<std::size_t>(k)].bytes += d.copies[k].bytes;
      copies_[static_cast<std::size_t>(k)].ns += d.copies[k].ns;
      copies_[static_cast<std::size_t>(k)].count += d.copies[k].count;
    }
  }
  syncs_ += r.syncs;
  sync_ns_ += r.sync_ns;
  ProcessCounters& c = counters_[r.pid];
  c.dropped = std::max(c.dropped, r.dropped_records);
  c.late = std::max(c.late, r.late_records);
  c.overflow = std::max(c.overflow, r.overflow_spans);
  for (const ca::KernelTop& t : r.top) {
    if (!t.name[0]) break;
    add_kernel_name(std::string(t.name, strnlen(t.name, ca::kNameChars)),
                    KernelSums{t.ns, t.count, t.tensor_core_guess != 0});
  }
  nvtx_ranges_ += r.nvtx_ranges;
  for (const ca::RangeTop& t : r.nvtx) {
    if (!t.name[0]) break;
    add_range_name(std::string(t.name, strnlen(t.name, ca::kRangeChars)),
                   RangeSums{t.ns, t.count});
  }
}

void CudaTotals::merge(const CudaTotals& o) {
  if (o.records_ == 0) return;
  records_ += o.records_;
  t_begin_ = t_begin_ ? std::min(t_begin_, o.t_begin_) : o.t_begin_;
  t_end_ = std::max(t_end_, o.t_end_);
  for (const auto& [dev, d] : o.devices_) {
    DeviceSums& s = devices_[dev];
    s.busy_ns += d.busy_ns;
    s.wall_ns += d.wall_ns;
  }
  kernels_ += o.kernels_;
  tiny_kernels_ += o.tiny_kernels_;
  kernel_ns_ += o.kernel_ns_;
  tiny_kernel_ns_ += o.tiny_kernel_ns_;
  gaps_ += o.gaps_;
  gap_ns_ += o.gap_ns_;
  for (std::size_t b = 0; b < kernel_hist_.size(); ++b) {
    kernel_hist_[b] += o.kernel_hist_[b];
    gap_hist_[b] += o.gap_hist_[b];
  }
  for (std::size_t k = 0; k < copies_.size(); ++k) {
    copies_[k].bytes += o.copies_[k].bytes;
    copies_[k].ns += o.copies_[k].ns;
    copies_[k].count += o.copies_[k].count;
  }
  syncs_ += o.syncs_;
  sync_ns_ += o.sync_ns_;
  for (const auto& [pid, c] : o.counters_) {
    ProcessCounters& mine = counters_[pid];
    mine.dropped = std::max(mine.dropped, c.dropped);
    mine.late = std::max(mine.late, c.late);
    mine.overflow = std::max(mine.overflow, c.overflow);
  }
  named_other_ns_ += o.named_other_ns_;
  for (const auto& [name, k] : o.names_) add_kernel_name(name, k);
  nvtx_ranges_ += o.nvtx_ranges_;
  for (const auto& [name, g] : o.ranges_) add_range_name(name, g);
}

// Past the bound a new kernel name's time goes to the unnamed rest; a new range name is dropped.
void CudaTotals::add_kernel_name(const std::string& name, const KernelSums& k) {
  if (names_.size() >= kMaxKernelNames && !names_.count(name)) {
    named_other_ns_ += k.ns;
    return;
  }
  KernelSums& mine = names_[name];
  mine.ns += k.ns;
  mine.count += k.count;
  mine.tensor = k.tensor;
}

void CudaTotals::add_range_name(const std::string& name, const RangeSums& g) {
  if (ranges_.size() >= kMaxRangeNames && !ranges_.count(name)) return;
  RangeSums& mine = ranges_[name];
  mine.ns += g.ns;
  mine.count += g.count;
}

std::optional<double> CudaTotals::busy_pct() const {
  const std::uint64_t wall = wall_ns();
  if (!wall || devices_.empty()) return std::nullopt;
  double best = 0;
  for (const auto& [dev, s] : devices_) {
    (void)dev;
    best = std::max(best, 100.0 * static_cast<double>(s.busy_ns) / static_cast<double>(wall));
  }
  return std::min(best, 100.0);
}

int CudaTotals::busiest_device() const {
  int best = -1;
  std::uint64_t busy = 0;
  for (const auto& [dev, s] : devices_)
    if (best < 0 || s.busy_ns > busy) {
      best = static_cast<int>(dev);
      busy = s.busy_ns;
    }
  return best;
}

std::optional<double> CudaTotals::kernel_median_us() const {
  const auto ns = hist_quantile_ns(kernel_hist_, 0.5, 0);
  if (!ns) return std::nullopt;
  return *ns / 1000.0;
}

std::optional<double> CudaTotals::gap_quantile_us(double q, double min_us) const {
  const auto ns = hist_quantile_ns(gap_hist_, q, min_us * 1000.0);
  if (!ns) return std::nullopt;
  return *ns / 1000.0;
}

std::uint64_t CudaTotals::gaps(double min_us) const {
  std::uint64_t n = 0;
  for (int b = 0; b < ca::kDurationBins; ++b)
    if (ca::bin_lower_ns(b) >= min_us * 1000.0) n += gap_hist_[static_cast<std::size_t>(b)];
  return n;
}

CudaInterval CudaTotals::interval() const {
  CudaInterval c;
  const std::uint64_t wall = wall_ns();
  if (!wall) return c;
  c.busy_pct = busy_pct();
  c.kernels_per_s = per_s(static_cast<double>(kernels_), wall);
  if (kernels_) c.tiny_kernels_pct = 100.0 * static_cast<double>(tiny_kernels_) / static_cast<double>(kernels_);
  c.gaps_per_s = per_s(static_cast<double>(gaps_), wall);
  auto gbps = [&](ca::CopyKind k) {
    return per_s(static_cast<double>(copies(k).bytes), wall) / 1e9;
  };
  c.h2d_pageable_gbps = gbps(ca::CopyKind::h2d_pageable);
  c.h2d_pinned_gbps = gbps(ca::CopyKind::h2d_pinned);
  c.d2h_pageable_gbps = gbps(ca::CopyKind::d2h_pageable);
  c.d2h_pinned_gbps = gbps(ca::CopyKind::d2h_pinned);
  c.syncs_per_s = per_s(static_cast<double>(syncs_), wall);
  c.sync_blocked_pct = std::min(100.0, 100.0 * static_cast<double>(sync_ns_) / static_cast<double>(wall));
  return c;
}

std::vector<Result> CudaTotals::results(const Inputs& in) const {
  std::vector<Result> out;
  std::string missing = in.skipped_reason;
  if (missing.empty() && empty())
    missing = in.processes == 0 ? "no process of the job ran CUDA work while watched"
                                : "no CUDA activity records arrived";
  if (!missing.empty()) {
    out.push_back(Result::skipped("watch.cuda.busy.pct", "GPU busy (CUDA activity timeline)", "%",
                                  missing));
    out.push_back(Result::skipped("watch.cuda.data_wait.pct",
                                  "data wait: GPU idle waiting for the next batch, share of wall "
                                  "time",
                                  "%", missing));
    return out;
  }
  const std::uint64_t wall = wall_ns();
  const double wall_s = static_cast<double>(wall) / 1e9;

  Result busy = value("watch.cuda.busy.pct", "GPU busy (CUDA activity timeline)", "%", busy_pct(),
                      true, "");
  busy.param("source", "CUPTI: union of kernel, copy and memset spans");
  busy.param("device", "CUDA device " + std::to_string(busiest_device()));
  busy.param("covers", fixed(wall_s, 1) + " s, " +
                          (in.window_note.empty() ? "from the job's first CUDA work"
                                                  : in.window_note));
  busy.param("processes", std::to_string(in.processes));
  if (!in.status_note.empty()) busy.param("collection", in.status_note);
  std::uint64_t dropped = 0, late = 0, overflow = 0;
  for (const auto& [pid, c] : counters_) {
    (void)pid;
    dropped += c.dropped;
    late += c.late;
    overflow += c.overflow;
  }
  if (dropped || in.lost_records || overflow)
    busy.param("incomplete", std::to_string(dropped) + " CUPTI records dropped, " +
                                 std::to_string(in.lost_records) + " interval records lost, " +
                                 std::to_string(overflow) + " spans past the bound");
  if (late) busy.param("late records", std::to_string(late));
  if (in.nvml_util_pct && busy.value && *in.nvml_util_pct >= 20 &&
      *busy.value < *in.nvml_util_pct / 4)
    busy.param("warning",
               "NVML saw the GPU far busier: another CUPTI client (the job's own profiler?) "
               "may have taken the activity records");
  out.push_back(std::move(busy));

  out.push_back(value("watch.cuda.idle_gaps.per_s", "GPU idle gaps per second", "/s",
                      per_s(static_cast<double>(gaps_), wall), false, ""));
  out.push_back(value("watch.cuda.idle_gap.median.us", "idle gap, median", "µs",
                      gap_quantile_us(0.5), false, "no idle gaps"));
  out.push_back(value("watch.cuda.idle_gap.p90.us", "idle gap, 90th percentile", "µs",
                      gap_quantile_us(0.9), false, "no idle gaps"));
  std::optional<double> step_ms = gap_quantile_us(0.5, 1000.0);
  if (step_ms) *step_ms /= 1000.0;
  Result step = value("watch.cuda.idle_gap.step.ms", "typical long gap (>= 1 ms), median", "ms",
                      step_ms, false, "no idle gap of 1 ms or more");
  step.param("long gaps per second", fixed(per_s(static_cast<double>(gaps(1000.0)), wall), 1));
  out.push_back(std::move(step));
  {
    // A compact histogram: decades of gap length.
    const double edges_us[] = {0, 10, 100, 1000, 10000, 100000};
    const char* names[] = {"<10µs", "10-100µs", "0.1-1ms", "1-10ms", "10-100ms", ">100ms"};
    std::string text;
    for (int i = 0; i < 6; ++i) {
      const std::uint64_t n =
          gaps(edges_us[i]) - (i + 1 < 6 ? gaps(edges_us[i + 1]) : 0);
      text += std::string(text.empty() ? "" : ", ") + names[i] + " " + std::to_string(n);
    }
    Result count = value("watch.cuda.idle_gaps.count", "GPU idle gaps", "gaps",
                         static_cast<double>(gaps_), false, "");
    count.param("by length", text);
    out.push_back(std::move(count));
  }

  Result kernel_count = value("watch.cuda.kernels.count", "kernels run in the judged window",
                              "kernels", static_cast<double>(kernels_), true, "");
  kernel_count.param("whole run", std::to_string(std::max(in.run_kernels, kernels_)));
  out.push_back(std::move(kernel_count));
  out.push_back(value("watch.cuda.kernels.per_s", "kernels per second", "/s",
                      per_s(static_cast<double>(kernels_), wall), true, ""));
  out.push_back(value("watch.cuda.kernel.median.us", "kernel duration, median", "µs",
                      kernel_median_us(), true, "no kernels ran"));
  out.push_back(value("watch.cuda.tiny_kernels.pct", "kernels under 10 µs, share of kernels", "%",
                      kernels_ ? std::optional<double>(100.0 * static_cast<double>(tiny_kernels_) /
                                                       static_cast<double>(kernels_))
                               : std::nullopt,
                      false, "no kernels ran"));
  out.push_back(value("watch.cuda.tiny_kernel_time.pct",
                      "kernels under 10 µs, share of kernel time", "%",
                      kernel_ns_ ? std::optional<double>(100.0 * static_cast<double>(tiny_kernel_ns_) /
                                                         static_cast<double>(kernel_ns_))
                                 : std::nullopt,
                      false, "no kernels ran"));
  // Top kernels over the run, from each interval's top 8.
  std::vector<std::pair<std::string, KernelSums>> top(names_.begin(), names_.end());
  std::sort(top.begin(), top.end(),
            [](const auto& a, const auto& b) { return a.second.ns > b.second.ns; });
  std::uint64_t tensor_ns = 0;
  for (const auto& [name, k] : top)
    if (k.tensor) tensor_ns += k.ns;
  for (std::size_t i = 0; i < std::min<std::size_t>(top.size(), 5); ++i) {
    const auto& [name, k] = top[i];
    Result r = value("watch.cuda.top" + std::to_string(i + 1) + ".pct",
                     "kernel #" + std::to_string(i + 1) + " by GPU time, share of kernel time", "%",
                     kernel_ns_ ? std::optional<double>(100.0 * static_cast<double>(k.ns) /
                                                        static_cast<double>(kernel_ns_))
                                : std::nullopt,
                     false, "no kernels ran");
    r.param("name", name.size() > 90 ? name.substr(0, 87) + "..." : name);
    r.param("calls", std::to_string(k.count));
    r.param("tensor cores", k.tensor ? "likely (the name says MMA)" : "not by its name");
    out.push_back(std::move(r));
  }
  Result tc = value("watch.cuda.tensor_core_time.pct",
                    "kernel time in kernels whose names say tensor cores", "%",
                    kernel_ns_ ? std::optional<double>(std::min(
                                     100.0, 100.0 * static_cast<double>(tensor_ns) /
                                                static_cast<double>(kernel_ns_)))
                               : std::nullopt,
                    true, "no kernels ran");
  tc.param("method", "a guess from kernel names (hmma, gmma, tensorop, ...) over each interval's "
                     "8 longest kernels");
  out.push_back(std::move(tc));

  // Copies.
  struct CopyRow {
    ca::CopyKind kind;
    const char* key;
    const char* label;
  };
  const CopyRow rows[] = {
      {ca::CopyKind::h2d_pageable, "h2d.pageable", "host to GPU from pageable memory"},
      {ca::CopyKind::h2d_pinned, "h2d.pinned", "host to GPU from pinned memory"},
      {ca::CopyKind::d2h_pageable, "d2h.pageable", "GPU to host into pageable memory"},
      {ca::CopyKind::d2h_pinned, "d2h.pinned", "GPU to host into pinned memory"},
  };
  for (const CopyRow& row : rows) {
    const ca::CopyStats& c = copies(row.kind);
    Result gb = value(std::string("watch.cuda.") + row.key + ".gb",
                      std::string("copied ") + row.label, "GB",
                      static_cast<double>(c.bytes) / 1e9, false, "");
    gb.param("copies", std::to_string(c.count));
    out.push_back(std::move(gb));
    out.push_back(value(std::string("watch.cuda.") + row.key + ".gbps",
                        std::string("copy speed, ") + row.label, "GB/s",
                        c.ns ? std::optional<double>(static_cast<double>(c.bytes) /
                                                     static_cast<double>(c.ns))
                             : std::nullopt,
                        true, "no such copies"));
  }
  const double h2d_bytes = static_cast<double>(copies(ca::CopyKind::h2d_pageable).bytes +
                                               copies(ca::CopyKind::h2d_pinned).bytes);
  out.push_back(value("watch.cuda.h2d.pageable.share.pct",
                      "host-to-GPU bytes from pageable memory", "%",
                      h2d_bytes > 0 ? std::optional<double>(
                                          100.0 * static_cast<double>(
                                                      copies(ca::CopyKind::h2d_pageable).bytes) /
                                          h2d_bytes)
                                    : std::nullopt,
                      false, "no host-to-GPU copies"));
  const ca::CopyStats& d2h_pg = copies(ca::CopyKind::d2h_pageable);
  const ca::CopyStats& d2h_pn = copies(ca::CopyKind::d2h_pinned);
  const double d2h_count = static_cast<double>(d2h_pg.count + d2h_pn.count);
  Result d2h = value("watch.cuda.d2h.copies.per_s", "GPU-to-host copies per second", "/s",
                     per_s(d2h_count, wall), false, "");
  if (d2h_count > 0)
    d2h.param("mean size", fixed(static_cast<double>(d2h_pg.bytes + d2h_pn.bytes) / d2h_count, 0) +
                               " bytes");
  out.push_back(std::move(d2h));

  // Host synchronizations.
  out.push_back(value("watch.cuda.syncs.per_s", "host synchronizations per second", "/s",
                      per_s(static_cast<double>(syncs_), wall), false, ""));
  out.push_back(value("watch.cuda.sync.blocked.pct", "host time blocked in synchronizations",
                      "%", 100.0 * static_cast<double>(sync_ns_) / static_cast<double>(wall),
                      false, ""));
  out.push_back(value("watch.cuda.sync.mean.ms", "host time per synchronization, mean", "ms",
                      syncs_ ? std::optional<double>(static_cast<double>(sync_ns_) / 1e6 /
                                                     static_cast<double>(syncs_))
                             : std::nullopt,
                      false, "no synchronizations"));

  // NVTX ranges the job marked.
  if (nvtx_ranges_ == 0) {
    out.push_back(Result::skipped("watch.cuda.nvtx.ranges.per_s", "NVTX ranges per second", "/s",
                                  "the job marked no NVTX ranges (or another tool took its NVTX)"));
  } else {
    Result per_s_result = value("watch.cuda.nvtx.ranges.per_s", "NVTX ranges per second", "/s",
                                per_s(static_cast<double>(nvtx_ranges_), wall), false, "");
    per_s_result.param("names", std::to_string(ranges_.size()));
    out.push_back(std::move(per_s_result));
    std::vector<std::pair<std::string, RangeSums>> by_time(ranges_.begin(), ranges_.end());
    std::sort(by_time.begin(), by_time.end(),
              [](const auto& a, const auto& b) { return a.second.ns > b.second.ns; });
    for (std::size_t i = 0; i < std::min<std::size_t>(by_time.size(), ca::kTopRanges); ++i) {
      const auto& [name, g] = by_time[i];
      Result r = value("watch.cuda.nvtx.top" + std::to_string(i + 1) + ".pct",
                       "NVTX range #" + std::to_string(i + 1) + " by time, share of wall time", "%",
                       100.0 * static_cast<double>(g.ns) / static_cast<double>(wall), false, "");
      r.param("name", name);
      r.param("ranges", std::to_string(g.count));
      if (g.count)
        r.param("mean", fixed(static_cast<double>(g.ns) / 1e6 / static_cast<double>(g.count), 3) +
                            " ms");
      out.push_back(std::move(r));
    }
  }

  // Why the GPU was idle.
  const ca::AttributionTotals& a = in.attribution;
  const std::string no_ticks = "no thread-state samples inside the job's CUDA activity";
  Result idle = value("watch.cuda.idle.pct", "GPU idle, share of wall time (sampled)", "%",
                      a.idle_pct(), false, no_ticks);
  idle.param("samples", std::to_string(a.ticks));
  if (a.unresolved) idle.param("unmatched samples", std::to_string(a.unresolved));
  out.push_back(std::move(idle));
  Result data = value("watch.cuda.data_wait.pct",
                      "data wait: GPU idle waiting for the next batch, share of wall time", "%",
                      a.cause_pct(ca::IdleCause::data), false, no_ticks);
  data.param("method",
             "GPU idle while the CUDA-launching threads were blocked and loader workers busy "
             "(or the main thread in disk wait), from thread states sampled in /proc");
  out.push_back(std::move(data));
  out.push_back(value("watch.cuda.idle.host.pct",
                      "GPU idle while the launching thread ran on a CPU (host-bound)", "%",
                      a.cause_pct(ca::IdleCause::host), false, no_ticks));
  out.push_back(value("watch.cuda.idle.sync.pct", "GPU idle inside a host synchronization", "%",
                      a.cause_pct(ca::IdleCause::sync), false, no_ticks));
  out.push_back(value("watch.cuda.idle.other.pct",
                      "GPU idle, threads blocked with loader workers idle", "%",
                      a.cause_pct(ca::IdleCause::other), false, no_ticks));
  return out;
}

}  // namespace gb::watch
