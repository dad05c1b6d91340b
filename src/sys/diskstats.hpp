// sys/diskstats.hpp: block-device I/O rates for `gpubase watch`, like `iostat -x`: parse
// /proc/diskstats (a pure parser over its text, tested on captured files) and turn two samples
// into r/s, w/s, kB/s, await, queue size and %util per whole disk.
//
// Fields (kernel Documentation/admin-guide/iostats.rst), after "major minor name":
//   1 reads completed   2 reads merged   3 sectors read     4 ms reading
//   5 writes completed  6 writes merged  7 sectors written  8 ms writing
//   9 I/Os in flight    10 ms doing I/O (io_ticks)          11 weighted ms doing I/O
//   12-15 discards (4.18+), 16-17 flushes (5.5+): not used here.
// Sectors are always 512 bytes in this file, whatever the device's sector size.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gb::sys {

struct DiskCounters {
  int major = 0;
  int minor = 0;
  std::string name;
  std::uint64_t reads_completed = 0;
  std::uint64_t reads_merged = 0;
  std::uint64_t sectors_read = 0;
  std::uint64_t read_ms = 0;
  std::uint64_t writes_completed = 0;
  std::uint64_t writes_merged = 0;
  std::uint64_t sectors_written = 0;
  std::uint64_t write_ms = 0;
  std::uint64_t in_flight = 0;
  std::uint64_t io_ticks_ms = 0;         // wall time with at least one I/O in flight
  std::uint64_t weighted_io_ms = 0;      // sum over I/Os of their time in flight
};

// By device name.
using DiskStats = std::map<std::string, DiskCounters>;

struct DiskFilter {
  bool include_partitions = false;  // sda1, nvme0n1p2, vda3, mmcblk0p1
  bool include_virtual = false;     // loop*, ram*, zram* (memory- or file-backed)
};

// True for a partition name (sdXN, vdXN, xvdXN, hdXN, nvmeXnYpZ, mmcblkXpY); md* and dm-* are
// whole devices.
bool is_partition_name(std::string_view name);
bool is_virtual_disk_name(std::string_view name);

DiskStats parse_diskstats(std::string_view diskstats_text, const DiskFilter& filter = {});
std::optional<DiskStats> read_diskstats(const std::string& proc_root = "/proc",
                                        const DiskFilter& filter = {});

// iostat -x over one interval (sysstat's iostat.c, compute_ext_disk_stats / write_ext_stat):
//   r/s   = Δreads_completed / interval          rkB/s = Δsectors_read / 2 / interval
//   w/s   = Δwrites_completed / interval         wkB/s = Δsectors_written / 2 / interval
//   r_await_ms = Δread_ms / Δreads_completed     w_await_ms = Δwrite_ms / Δwrites_completed
//                (0 when there were no I/Os, as iostat prints)
//   aqu_sz     = Δweighted_io_ms / (interval * 1000)
//   util_pct   = Δio_ticks_ms / (interval * 1000) * 100, capped at 100
// With several queues (NVMe) %util only says the device was never idle, not that it is full.
struct DiskUsage {
  std::string name;
  bool appeared = false;  // only in the later sample: no rates
  bool reset = false;     // a counter went backwards (wrap or re-created device): no rates
  std::optional<double> reads_per_s;
  std::optional<double> writes_per_s;
  std::optional<double> read_kb_per_s;
  std::optional<double> write_kb_per_s;
  std::optional<double> r_await_ms;
  std::optional<double> w_await_ms;
  std::optional<double> aqu_sz;
  std::optional<double> util_pct;
};

// interval_s <= 0 gives no rates (never a division by zero).
DiskUsage disk_usage_between(const DiskCounters& earlier, const DiskCounters& later,
                             double interval_s);
// Every device of the later sample, in name order; those absent earlier are `appeared`.
std::vector<DiskUsage> disks_usage_between(const DiskStats& earlier, const DiskStats& later,
                                           double interval_s);

}  // namespace gb::sys
