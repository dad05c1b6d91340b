// watch/cuda_totals.hpp: sums of the job's CUDA interval records (any number of processes and
// devices), for one sampling interval (CudaInterval) or the whole run (the watch.cuda.*
// results, docs/watch.md). Memory is bounded: fixed histograms, at most kMaxKernelNames names.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "cuda_activity/attribution.hpp"
#include "cuda_activity/record.hpp"
#include "watch/cuda_sample.hpp"

namespace gb::watch {

class CudaTotals {
 public:
  static constexpr std::size_t kMaxKernelNames = 1024;
  static constexpr std::size_t kMaxRangeNames = 256;

  void add(const cuda_activity::IntervalRecord& r);
  // Adds other's sums, as if its records had been added here (names past the bound go to the
  // unnamed rest, as in add()).
  void merge(const CudaTotals& other);
  // The covered span ends at t_ns (the last GPU work), not at the end of the interval it fell
  // in; records added later extend it again.
  void end_at(std::uint64_t t_ns) { t_end_ = std::max(t_begin_, std::min(t_end_, t_ns)); }
  bool empty() const { return records_ == 0; }
  std::uint64_t wall_ns() const { return t_end_ > t_begin_ ? t_end_ - t_begin_ : 0; }
  std::uint64_t begin_ns() const { return t_begin_; }  // CLOCK_MONOTONIC; 0 while empty
  std::uint64_t end_ns() const { return t_end_; }

  // The figures of one sampling interval.
  CudaInterval interval() const;

  // Figures over the run; used by results().
  std::optional<double> busy_pct() const;  // busiest device
  int busiest_device() const;
  std::uint64_t kernels() const { return kernels_; }
  std::optional<double> kernel_median_us() const;
  std::optional<double> gap_quantile_us(double q, double min_us = 0) const;
  std::uint64_t gaps(double min_us = 0) const;
  const cuda_activity::CopyStats& copies(cuda_activity::CopyKind k) const {
    return copies_[static_cast<int>(k)];
  }

  struct Inputs {
    std::string skipped_reason;  // non-empty: every watch.cuda.* result is skipped with it
    std::string status_note;     // how collection went ("CUPTI 130001, ...; pid 12: stopped: ...")
    int processes = 0;           // job processes that wrote records
    std::uint64_t lost_records = 0;  // ring records the watcher missed
    cuda_activity::AttributionTotals attribution;
    std::optional<double> nvml_util_pct;  // for the cross-check
    // What these totals cover (watch/steady_window.hpp), in words; empty: from the job's first
    // CUDA work. run_kernels: kernels over the whole run, warm-up included.
    std::string window_note;
    std::uint64_t run_kernels = 0;
  };
  std::vector<Result> results(const Inputs& in) const;

 private:
  struct DeviceSums {
    std::uint64_t busy_ns = 0;
    std::uint64_t wall_ns = 0;  // summed record lengths of processes using the device
  };
  struct KernelSums {
    std::uint64_t ns = 0;
    std::uint64_t count = 0;
    bool tensor = false;
  };
  std::uint64_t records_ = 0;
  std::uint64_t t_begin_ = 0, t_end_ = 0;
  std::map<std::uint32_t, DeviceSums> devices_;
  std::uint64_t kernels_ = 0, tiny_kernels_ = 0, kernel_ns_ = 0, tiny_kernel_ns_ = 0;
  std::array<std::uint64_t, cuda_activity::kDurationBins> kernel_hist_{}, gap_hist_{};
  std::uint64_t gaps_ = 0, gap_ns_ = 0;
  std::array<cuda_activity::CopyStats, cuda_activity::kCopyKinds> copies_{};
  std::uint64_t syncs_ = 0, sync_ns_ = 0;
  struct ProcessCounters {
    std::uint64_t dropped = 0, late = 0, overflow = 0;  // cumulative in each record: the max
  };
  std::map<std::uint32_t, ProcessCounters> counters_;
  std::map<std::string, KernelSums> names_;
  std::uint64_t named_other_ns_ = 0;
  struct RangeSums {
    std::uint64_t ns = 0;
    std::uint64_t count = 0;
  };
  std::map<std::string, RangeSums> ranges_;  // NVTX, by name (each interval's longest 8)
  std::uint64_t nvtx_ranges_ = 0;            // every range that ended, all names
  void add_kernel_name(const std::string& name, const KernelSums& k);
  void add_range_name(const std::string& name, const RangeSums& g);
};

}  // namespace gb::watch
