// cuda_activity/reduce.hpp: the reduction that runs inside the job. CUPTI hands over activity
// records in buffers, roughly in completion order and up to a flush late; IntervalReducer
// turns them into one IntervalRecord per interval of a fixed grid (multiples of interval_ns
// on CLOCK_MONOTONIC, so the watcher's own clock lines up):
//
//  - busy time per device is the exact union of kernel, memcpy and memset spans (two streams
//    overlapping count once), cut at the interval's edges;
//  - an idle gap is the time between one busy span's end and the next one's start on that
//    device, counted in the interval where the GPU got busy again; the first span of a run
//    has no gap before it;
//  - the idle mask marks every millisecond the device spent mostly idle, the sync mask every
//    millisecond the host spent mostly inside a synchronization;
//  - kernel counts, durations and names go to the interval the kernel started in;
//  - an NVTX range (a start and an end marker with the same id) goes to the interval it ended
//    in, with its whole duration; ends without a start are ignored.
//
// Intervals close when the caller says time has moved past them (close_until, a little after
// a CUPTI flush). A record that arrives for an interval already closed is clipped into the
// oldest open one and counted as late. Memory is bounded: at most max_spans pending spans per
// device (sorted and merged when full; past that, counted as overflow), 4096 kernel names and
// 256 NVTX range names per interval, and 4096 NVTX ranges open at once (past that, counted as
// overflow).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cuda_activity/record.hpp"

namespace gb::cuda_activity {

struct Span {
  std::uint64_t start = 0, end = 0;
};

// Sorts spans by start and merges the overlapping or touching ones.
void merge_spans(std::vector<Span>& spans);

// A guess from the kernel's name: MMA / tensor-op kernels (cuBLAS, cuDNN, CUTLASS, Triton).
bool tensor_core_name(std::string_view name);

// Turns a mangled name into a readable one (abi::__cxa_demangle), or returns it unchanged.
std::string demangle(const char* name);

class IntervalReducer {
 public:
  static constexpr std::uint64_t kDefaultIntervalNs = 1'000'000'000;
  static constexpr std::size_t kDefaultMaxSpans = 1u << 18;
  static constexpr std::size_t kMaxNames = 4096;
  static constexpr std::size_t kMaxRangeNames = 256;
  static constexpr std::size_t kMaxOpenRanges = 4096;

  explicit IntervalReducer(std::uint32_t pid, std::uint64_t interval_ns = kDefaultIntervalNs,
                           std::size_t max_spans = kDefaultMaxSpans);

  // name must stay valid until the interval closes (CUPTI's names live as long as the module).
  void add_kernel(std::uint32_t device, std::uint64_t start_ns, std::uint64_t end_ns,
                  const char* name);
  void add_copy(std::uint32_t device, std::uint64_t start_ns, std::uint64_t end_ns,
                std::uint64_t bytes, CopyKind kind);
  void add_memset(std::uint32_t device, std::uint64_t start_ns, std::uint64_t end_ns,
                  std::uint64_t bytes);
  void add_sync(std::uint64_t start_ns, std::uint64_t end_ns);
  // NVTX: a range opened (name copied; domain may be empty) and closed, matched by id.
  void add_range_start(std::uint64_t id, std::uint64_t t_ns, std::string_view domain,
                       std::string_view name);
  void add_range_end(std::uint64_t id, std::uint64_t t_ns);
  void set_dropped(std::uint64_t dropped_records) { dropped_ = dropped_records; }

  // The records of every interval that ends at or before until_ns, oldest first. Nothing
  // before the first activity; after it, every interval (an idle GPU is a finding).
  std::vector<IntervalRecord> close_until(std::uint64_t until_ns);
  // At exit: closes everything up to end_ns, the last interval cut short at end_ns.
  std::vector<IntervalRecord> close_all(std::uint64_t end_ns);

  std::uint64_t interval_ns() const { return interval_ns_; }
  bool started() const { return next_t0_ != 0; }

 private:
  struct NameStats {
    std::uint64_t ns = 0;
    std::uint32_t count = 0;
  };
  struct Open {
    IntervalRecord record;
    std::unordered_map<const char*, NameStats> names;
    NameStats other_names;
    std::unordered_map<std::string, NameStats> ranges;
  };
  struct OpenRange {
    std::uint64_t start = 0;
    std::string name;
  };
  struct Timeline {
    std::vector<Span> pending;
    bool seen = false;
    bool has_end = false;
    std::uint64_t last_end = 0;  // end of the busy time already accounted
  };

  Open& open_for(std::uint64_t t_ns);
  DeviceInterval& device_in(IntervalRecord& r, std::uint32_t device);
  void add_span(Timeline& tl, std::uint64_t start, std::uint64_t end);
  // Accounts the timeline's spans inside [t0, t1): busy ns, gaps, the mask. Returns busy ns.
  std::uint64_t account(Timeline& tl, std::uint64_t t0, std::uint64_t t1, std::uint8_t* mask,
                        DeviceInterval* dev);
  IntervalRecord close_one(std::uint64_t t0, std::uint64_t t1);
  void fill_top(Open& open, IntervalRecord& r);
  static void fill_ranges(Open& open, IntervalRecord& r);

  std::uint32_t pid_;
  std::uint64_t interval_ns_;
  std::size_t max_spans_;
  std::uint64_t next_t0_ = 0;  // 0: nothing seen yet
  std::map<std::uint64_t, Open> open_;  // by t0
  Timeline devices_[kMaxDevices];
  Timeline sync_;
  std::uint64_t dropped_ = 0, late_ = 0, overflow_ = 0;
  std::unordered_map<const char*, std::string> demangled_;
  std::unordered_map<std::uint64_t, OpenRange> open_ranges_;
};

}  // namespace gb::cuda_activity
