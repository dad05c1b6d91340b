// cuda_activity/record.hpp: what the CUDA-activity injection library (libgpubase_cuda_inject.so,
// loaded into a watched job through CUDA_INJECTION64_PATH) hands to `gpubase watch`: one
// fixed-size IntervalRecord per process and interval, the job's CUPTI activity already reduced
// (an aggregate, not a trace), and status records that say why the library stopped or never
// started. Plain data of fixed size: it travels through a shared-memory ring (ring.hpp) between
// two processes built from the same tree, so no pointers and no std:: types.
//
// Times are CLOCK_MONOTONIC nanoseconds, the clock the watcher's thread samples use, so an
// interval's idle mask lines up with what the job's threads were doing at that moment.
//
// NVTX ranges the job marks (push/pop or start/end; CUPTI's marker records when the job's NVTX
// is routed to CUPTI) are summed per name: count and time, the 8 longest per interval.
//
// Napkin math: one record is ~12 KB (8 devices x ~1.2 KB of histograms, copies and mask,
// 8 top kernels x 112 B, 8 NVTX ranges x 80 B, the sync mask); a 64-slot ring is ~770 KB per
// CUDA process, whatever the run length.
#pragma once
#include <cstdint>

namespace gb::cuda_activity {

inline constexpr std::uint32_t kRecordMagic = 0x41434247;  // "GBCA"
inline constexpr std::uint32_t kRecordVersion = 2;
inline constexpr int kMaxDevices = 8;      // CUDA ordinals 0..7 as the job sees them
inline constexpr int kTopKernels = 8;      // per interval, by GPU time
inline constexpr int kNameChars = 96;      // demangled kernel name, cut
inline constexpr int kDurationBins = 112;  // quarter-octave bins from 0.25 µs (durations, gaps)
inline constexpr int kMaskMs = 1000;       // 1 bit per ms: an interval is at most 1 s
inline constexpr int kMaskBytes = kMaskMs / 8;
inline constexpr std::uint64_t kTinyKernelNs = 10'000;  // "under 10 µs": launch-bound signature
inline constexpr int kStatusChars = 240;
inline constexpr int kTopRanges = 8;      // NVTX ranges per interval, by time
inline constexpr int kRangeChars = 64;    // NVTX range name ("domain/name"), cut

enum class RecordKind : std::uint32_t { interval = 1, status = 2 };

// Why a status record was written.
enum class StatusCode : std::uint32_t {
  started = 1,     // CUPTI subscribed, activity enabled (text: CUPTI version)
  skipped = 2,     // never started (text: reason, e.g. "another CUPTI subscriber")
  failed = 3,      // stopped after a CUPTI error (text: which call, the error)
  finished = 4,    // the process ended normally and the last interval was written
};

// Copies by direction and host memory kind: pageable copies are staged by the driver through a
// pinned bounce buffer (and a D2H copy to pageable memory blocks the host).
enum class CopyKind : std::uint32_t {
  h2d_pageable = 0,
  h2d_pinned,
  d2h_pageable,
  d2h_pinned,
  d2d,
  other,  // peer, array, managed, host-to-host
  count
};
inline constexpr int kCopyKinds = static_cast<int>(CopyKind::count);

struct CopyStats {
  std::uint64_t bytes = 0;
  std::uint64_t ns = 0;  // summed durations on the GPU
  std::uint32_t count = 0;
  std::uint32_t pad = 0;
};

struct KernelTop {
  char name[kNameChars] = {};  // demangled, NUL-terminated, cut to fit
  std::uint64_t ns = 0;        // GPU time in this interval
  std::uint32_t count = 0;
  std::uint32_t tensor_core_guess = 0;  // 1: the name says MMA/tensor-op (a guess, see reduce)
};

// One NVTX range name over one interval: the ranges that ended in it.
struct RangeTop {
  char name[kRangeChars] = {};  // NUL-terminated, cut to fit
  std::uint64_t ns = 0;         // summed durations (nested ranges each count their own)
  std::uint32_t count = 0;
  std::uint32_t pad = 0;
};

// One device (CUDA ordinal) over one interval.
struct DeviceInterval {
  std::uint32_t device = 0;
  std::uint32_t used = 0;       // 1: the process had any activity on it
  std::uint64_t busy_ns = 0;    // union of kernel, memcpy and memset spans within the interval
  std::uint64_t kernel_ns = 0;  // summed kernel durations (overlap counted twice)
  std::uint64_t tiny_kernel_ns = 0;
  std::uint32_t kernels = 0;
  std::uint32_t tiny_kernels = 0;
  std::uint32_t gaps = 0;  // idle gaps that ended in this interval
  std::uint32_t pad = 0;
  std::uint64_t gap_ns = 0;
  std::uint32_t kernel_hist[kDurationBins] = {};  // kernels by duration bin
  std::uint32_t gap_hist[kDurationBins] = {};     // idle gaps by length bin
  CopyStats copies[kCopyKinds] = {};
  CopyStats memsets = {};
  std::uint8_t idle_mask[kMaskBytes] = {};  // bit i: the device idle for most of ms i
};

struct IntervalRecord {
  std::uint32_t magic = kRecordMagic;
  std::uint32_t version = kRecordVersion;
  RecordKind kind = RecordKind::interval;
  std::uint32_t pid = 0;
  std::uint64_t t0_ns = 0, t1_ns = 0;  // [t0, t1), CLOCK_MONOTONIC
  // Host synchronizations (stream/event/context synchronize: CUPTI's synchronization records;
  // .item() and a D2H copy to pageable memory end in one), counted where they end.
  std::uint32_t syncs = 0;
  std::uint32_t devices = 0;  // entries used in dev[]
  std::uint64_t sync_ns = 0;  // host time blocked in them, within the interval
  std::uint8_t sync_mask[kMaskBytes] = {};  // bit i: the host in a sync for most of ms i
  std::uint64_t dropped_records = 0;        // CUPTI records lost (buffers full), since start
  std::uint64_t late_records = 0;  // records that came after their interval was written
  std::uint64_t overflow_spans = 0;  // spans past the reducer's bound (busy time approximate)
  DeviceInterval dev[kMaxDevices] = {};
  KernelTop top[kTopKernels] = {};  // by ns, descending; empty names end the list
  std::uint32_t nvtx_ranges = 0;    // NVTX ranges that ended in the interval, all names
  std::uint32_t pad = 0;
  RangeTop nvtx[kTopRanges] = {};   // by ns, descending; empty names end the list
  StatusCode status = StatusCode::started;  // kind == status only
  char status_text[kStatusChars] = {};
};

// Quarter-octave bins: bin 0 holds < 0.25 µs, bin b holds [0.25 µs * 2^((b-1)/4), ...); the
// last bin everything above (~0.25 µs * 2^27.75 = 57 s).
int duration_bin(std::uint64_t ns);
// The bin's lower edge and geometric middle, ns.
double bin_lower_ns(int bin);
double bin_mid_ns(int bin);

inline bool mask_bit(const std::uint8_t* mask, int i) {
  return i >= 0 && i < kMaskMs && (mask[i / 8] >> (i % 8)) & 1;
}

inline void set_mask_bit(std::uint8_t* mask, int i) {
  if (i >= 0 && i < kMaskMs) mask[i / 8] = static_cast<std::uint8_t>(mask[i / 8] | (1u << (i % 8)));
}

// Whether a device was busy (a kernel, copy or memset span) in the record's interval.
bool gpu_busy(const IntervalRecord& r);
// The end of the last millisecond in which a device was mostly busy, by the idle masks (the
// record's end when its GPU work never filled half a millisecond); 0 without GPU work.
std::uint64_t last_busy_ns(const IntervalRecord& r);

}  // namespace gb::cuda_activity
