// cuda_activity/reduce.cpp: activity records -> per-interval aggregates (see reduce.hpp).
#include "cuda_activity/reduce.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <cstring>

namespace gb::cuda_activity {

void merge_spans(std::vector<Span>& spans) {
  if (spans.empty()) return;
  std::sort(spans.begin(), spans.end(),
            [](const Span& a, const Span& b) { return a.start < b.start; });
  std::size_t w = 0;
  for (std::size_t i = 1; i < spans.size(); ++i) {
    if (spans[i].start <= spans[w].end)
      spans[w].end = std::max(spans[w].end, spans[i].end);
    else
      spans[++w] = spans[i];
  }
  spans.resize(w + 1);
}

bool tensor_core_name(std::string_view name) {
  std::string lower(name.substr(0, 512));
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  // hmma/imma/gmma: the MMA instructions' names in cuBLAS/cuDNN kernel names (sm80_xmma_...,
  // sm90_xmma_gemm_..._gmma); tensorop: CUTLASS; 16816/1688/884: the MMA tile shapes;
  // wgmma / mma: Triton and hand-written kernels; nvjet: cuBLAS's GEMM kernels on Hopper and
  // later (a BF16 4096^2 GEMM ran as nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT);
  // flash_fwd/flash_bwd: FlashAttention, MMA throughout.
  static constexpr const char* kMarks[] = {"hmma",  "imma",  "gmma",      "xmma",     "tensorop",
                                           "16816", "1688",  "wgmma",     "_mma",     "mma_",
                                           "nvjet", "flash_fwd", "flash_bwd"};
  return std::any_of(std::begin(kMarks), std::end(kMarks),
                     [&](const char* m) { return lower.find(m) != std::string::npos; });
}

std::string demangle(const char* name) {
  if (!name) return "(unnamed kernel)";
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || !d) return name;
  std::string s(d);
  std::free(d);
  return s;
}

IntervalReducer::IntervalReducer(std::uint32_t pid, std::uint64_t interval_ns,
                                 std::size_t max_spans)
    : pid_(pid),
      interval_ns_(std::clamp<std::uint64_t>(interval_ns, 10'000'000, 1'000'000'000)),
      max_spans_(std::max<std::size_t>(max_spans, 16)) {}

IntervalReducer::Open& IntervalReducer::open_for(std::uint64_t t_ns) {
  std::uint64_t t0 = t_ns - t_ns % interval_ns_;
  if (next_t0_ == 0) next_t0_ = t0;
  if (t0 < next_t0_) {  // its interval is written already
    ++late_;
    t0 = next_t0_;
  }
  auto it = open_.find(t0);
  if (it == open_.end()) {
    it = open_.emplace(t0, Open{}).first;
    it->second.record.pid = pid_;
    it->second.record.t0_ns = t0;
    it->second.record.t1_ns = t0 + interval_ns_;
  }
  return it->second;
}

DeviceInterval& IntervalReducer::device_in(IntervalRecord& r, std::uint32_t device) {
  for (std::uint32_t i = 0; i < r.devices; ++i)
    if (r.dev[i].device == device) return r.dev[i];
  DeviceInterval& d = r.dev[r.devices++];
  d.device = device;
  d.used = 1;
  return d;
}

void IntervalReducer::add_span(Timeline& tl, std::uint64_t start, std::uint64_t end) {
  if (end <= start) end = start + 1;  // a zero-length record still marks the device used
  tl.seen = true;
  if (tl.pending.size() >= max_spans_) {
    merge_spans(tl.pending);
    if (tl.pending.size() >= max_spans_ / 2) {
      ++overflow_;
      return;
    }
  }
  tl.pending.push_back(Span{start, end});
}

void IntervalReducer::add_kernel(std::uint32_t device, std::uint64_t start_ns,
                                 std::uint64_t end_ns, const char* name) {
  if (device >= kMaxDevices) {
    ++overflow_;
    return;
  }
  Open& o = open_for(start_ns);
  DeviceInterval& d = device_in(o.record, device);
  const std::uint64_t ns = end_ns > start_ns ? end_ns - start_ns : 0;
  ++d.kernels;
  d.kernel_ns += ns;
  ++d.kernel_hist[duration_bin(ns)];
  if (ns < kTinyKernelNs) {
    ++d.tiny_kernels;
    d.tiny_kernel_ns += ns;
  }
  NameStats* n = &o.other_names;
  if (o.names.size() < kMaxNames || o.names.count(name)) n = &o.names[name];
  n->ns += ns;
  ++n->count;
  add_span(devices_[device], start_ns, end_ns);
}

void IntervalReducer::add_copy(std::uint32_t device, std::uint64_t start_ns,
                               std::uint64_t end_ns, std::uint64_t bytes, CopyKind kind) {
  if (device >= kMaxDevices) {
    ++overflow_;
    return;
  }
  Open& o = open_for(start_ns);
  CopyStats& c = device_in(o.record, device).copies[static_cast<int>(kind)];
  c.bytes += bytes;
  c.ns += end_ns > start_ns ? end_ns - start_ns : 0;
  ++c.count;
  add_span(devices_[device], start_ns, end_ns);
}

void IntervalReducer::add_memset(std::uint32_t device, std::uint64_t start_ns,
                                 std::uint64_t end_ns, std::uint64_t bytes) {
  if (device >= kMaxDevices) {
    ++overflow_;
    return;
  }
  Open& o = open_for(start_ns);
  CopyStats& c = device_in(o.record, device).memsets;
  c.bytes += bytes;
  c.ns += end_ns > start_ns ? end_ns - start_ns : 0;
  ++c.count;
  add_span(devices_[device], start_ns, end_ns);
}

void IntervalReducer::add_sync(std::uint64_t start_ns, std::uint64_t end_ns) {
  ++open_for(end_ns > start_ns ? end_ns - 1 : start_ns).record.syncs;
  add_span(sync_, start_ns, end_ns);
}

void IntervalReducer::add_range_start(std::uint64_t id, std::uint64_t t_ns,
                                      std::string_view domain, std::string_view name) {
  if (open_ranges_.size() >= kMaxOpenRanges && !open_ranges_.count(id)) {
    ++overflow_;
    return;
  }
  std::string full = domain.empty() ? std::string(name) : std::string(domain) + "/" + std::string(name);
  if (full.empty()) full = "(unnamed range)";
  open_ranges_[id] = OpenRange{t_ns, std::move(full)};
}

void IntervalReducer::add_range_end(std::uint64_t id, std::uint64_t t_ns) {
  const auto it = open_ranges_.find(id);
  if (it == open_ranges_.end()) return;
  const std::uint64_t ns = t_ns > it->second.start ? t_ns - it->second.start : 0;
  Open& o = open_for(t_ns);
  ++o.record.nvtx_ranges;
  if (o.ranges.size() < kMaxRangeNames || o.ranges.count(it->second.name)) {
    NameStats& n = o.ranges[it->second.name];
    n.ns += ns;
    ++n.count;
  }
  open_ranges_.erase(it);
}

std::uint64_t IntervalReducer::account(Timeline& tl, std::uint64_t t0, std::uint64_t t1,
                                       std::uint8_t* mask, DeviceInterval* dev) {
  merge_spans(tl.pending);
  std::array<std::uint32_t, kMaskMs> busy_per_ms{};
  const std::uint64_t ms_count = std::min<std::uint64_t>((t1 - t0 + 999'999) / 1'000'000, kMaskMs);
  std::uint64_t busy = 0;
  std::vector<Span> keep;
  for (Span s : tl.pending) {
    if (s.start >= t1) {
      keep.push_back(s);
      continue;
    }
    if (s.end <= t0) {  // wholly inside an interval already written: too late to count
      ++late_;
      continue;
    }
    if (s.start < t0) {  // began in an interval already written: the rest counts here
      ++late_;
      s.start = t0;
    }
    // Busy time already accounted (a late span overlapping the timeline's past) counts once.
    if (tl.has_end && s.start < tl.last_end) s.start = std::min(tl.last_end, s.end);
    if (tl.has_end && s.start > tl.last_end && dev) {
      const std::uint64_t gap = s.start - tl.last_end;
      ++dev->gaps;
      dev->gap_ns += gap;
      ++dev->gap_hist[duration_bin(gap)];
    }
    const std::uint64_t end_here = std::min(s.end, t1);
    if (end_here > s.start) {
      busy += end_here - s.start;
      // Spread over the millisecond buckets it covers.
      for (std::uint64_t a = s.start; a < end_here;) {
        const std::uint64_t ms = (a - t0) / 1'000'000;
        const std::uint64_t bucket_end = std::min(t0 + (ms + 1) * 1'000'000, end_here);
        if (ms < kMaskMs) busy_per_ms[ms] += static_cast<std::uint32_t>(bucket_end - a);
        a = bucket_end;
      }
    }
    if (!tl.has_end || s.end > tl.last_end) tl.last_end = std::max(s.end, s.start);
    tl.has_end = true;
    if (s.end > t1) keep.push_back(Span{t1, s.end});  // the rest belongs to the next interval
  }
  tl.pending = std::move(keep);
  // A span running on past t1 ends "at t1" for this interval's gap bookkeeping.
  if (tl.has_end && tl.last_end > t1 && !tl.pending.empty()) tl.last_end = t1;
  for (std::uint64_t ms = 0; ms < ms_count; ++ms) {
    const std::uint64_t len = std::min<std::uint64_t>(1'000'000, t1 - (t0 + ms * 1'000'000));
    const bool mostly_busy = 2ull * busy_per_ms[ms] >= len;
    if (dev ? !mostly_busy : mostly_busy) set_mask_bit(mask, static_cast<int>(ms));
  }
  return busy;
}

void IntervalReducer::fill_top(Open& open, IntervalRecord& r) {
  std::vector<std::pair<const char*, NameStats>> v(open.names.begin(), open.names.end());
  const std::size_t n = std::min<std::size_t>(v.size(), kTopKernels);
  std::partial_sort(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n), v.end(),
                    [](const auto& a, const auto& b) { return a.second.ns > b.second.ns; });
  for (std::size_t i = 0; i < n; ++i) {
    auto it = demangled_.find(v[i].first);
    if (it == demangled_.end()) {
      if (demangled_.size() >= kMaxNames) demangled_.clear();
      it = demangled_.emplace(v[i].first, demangle(v[i].first)).first;
    }
    KernelTop& t = r.top[i];
    std::strncpy(t.name, it->second.c_str(), kNameChars - 1);
    t.ns = v[i].second.ns;
    t.count = v[i].second.count;
    t.tensor_core_guess = tensor_core_name(it->second) ? 1 : 0;
  }
}

void IntervalReducer::fill_ranges(Open& open, IntervalRecord& r) {
  std::vector<std::pair<std::string, NameStats>> v(open.ranges.begin(), open.ranges.end());
  const std::size_t n = std::min<std::size_t>(v.size(), kTopRanges);
  std::partial_sort(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n), v.end(),
                    [](const auto& a, const auto& b) {
                      return a.second.ns != b.second.ns ? a.second.ns > b.second.ns
                                                        : a.first < b.first;
                    });
  for (std::size_t i = 0; i < n; ++i) {
    RangeTop& t = r.nvtx[i];
    std::strncpy(t.name, v[i].first.c_str(), kRangeChars - 1);
    t.ns = v[i].second.ns;
    t.count = v[i].second.count;
  }
}

IntervalRecord IntervalReducer::close_one(std::uint64_t t0, std::uint64_t t1) {
  IntervalRecord r;
  auto it = open_.find(t0);
  if (it != open_.end()) {
    r = it->second.record;
    fill_top(it->second, r);
    fill_ranges(it->second, r);
    open_.erase(it);
  }
  r.pid = pid_;
  r.t0_ns = t0;
  r.t1_ns = t1;
  for (std::uint32_t d = 0; d < static_cast<std::uint32_t>(kMaxDevices); ++d) {
    Timeline& tl = devices_[d];
    if (!tl.seen) continue;
    DeviceInterval& dev = device_in(r, d);
    dev.busy_ns = account(tl, t0, t1, dev.idle_mask, &dev);
  }
  if (sync_.seen) r.sync_ns = account(sync_, t0, t1, r.sync_mask, nullptr);
  r.dropped_records = dropped_;
  r.late_records = late_;
  r.overflow_spans = overflow_;
  return r;
}

std::vector<IntervalRecord> IntervalReducer::close_until(std::uint64_t until_ns) {
  std::vector<IntervalRecord> out;
  while (next_t0_ != 0 && next_t0_ + interval_ns_ <= until_ns) {
    out.push_back(close_one(next_t0_, next_t0_ + interval_ns_));
    next_t0_ += interval_ns_;
  }
  return out;
}

std::vector<IntervalRecord> IntervalReducer::close_all(std::uint64_t end_ns) {
  std::vector<IntervalRecord> out = close_until(end_ns);
  if (next_t0_ != 0 && end_ns > next_t0_) {
    // The interval in progress ends here, shorter than the others.
    const std::uint64_t t1 = std::max(end_ns, next_t0_ + 1);
    IntervalRecord last = close_one(next_t0_, t1);
    open_.clear();  // activity stamped after end_ns: none once CUPTI was flushed first
    out.push_back(last);
    next_t0_ += interval_ns_;
  }
  return out;
}

}  // namespace gb::cuda_activity
