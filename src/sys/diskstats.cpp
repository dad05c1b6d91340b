// sys/diskstats.cpp: /proc/diskstats parser and iostat -x rates; see diskstats.hpp.
#include "sys/text_parse.hpp"
#include "sys/diskstats.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <iterator>
#include <utility>

namespace gb::sys {

namespace {

using namespace text;  // is_space, trim, for_each_line, split_fields, parse_number

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

bool all_digits(std::string_view s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

bool all_lower(std::string_view s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= 'a' && c <= 'z'; });
}

// "...<digit>p<digits>": nvme0n1p2, mmcblk0p1 (the caller checks the nvme/mmcblk prefix).
bool ends_with_p_number(std::string_view s) {
  const std::size_t p = s.rfind('p');
  return p != std::string_view::npos && p > 0 && all_digits(s.substr(p + 1)) &&
         std::isdigit(static_cast<unsigned char>(s[p - 1]));
}

}  // namespace

bool is_partition_name(std::string_view name) {
  if (starts_with(name, "nvme") || starts_with(name, "mmcblk")) return ends_with_p_number(name);
  for (const std::string_view prefix : {"sd", "vd", "xvd", "hd"}) {
    if (!starts_with(name, prefix)) continue;
    // <prefix><letters><digits>: sda1, vdb12, xvdf1 (the whole disk has no digits).
    const std::string_view rest = name.substr(prefix.size());
    const std::size_t digits = rest.find_first_of("0123456789");
    return digits != std::string_view::npos && digits > 0 && all_lower(rest.substr(0, digits)) &&
           all_digits(rest.substr(digits));
  }
  return false;
}

bool is_virtual_disk_name(std::string_view name) {
  return starts_with(name, "loop") || starts_with(name, "ram") || starts_with(name, "zram");
}

DiskStats parse_diskstats(std::string_view diskstats_text, const DiskFilter& filter) {
  DiskStats disks;
  while (!diskstats_text.empty()) {
    const std::size_t end = diskstats_text.find('\n');
    const std::string_view line = diskstats_text.substr(0, end);
    diskstats_text.remove_prefix(end == std::string_view::npos ? diskstats_text.size() : end + 1);

    const std::vector<std::string_view> f = split_fields(line);
    if (f.size() < 14) continue;  // pre-2.6.25 partition lines had 4 counters: not supported
    const std::string_view name = f[2];
    if (!filter.include_partitions && is_partition_name(name)) continue;
    if (!filter.include_virtual && is_virtual_disk_name(name)) continue;
    std::uint64_t v[11] = {};
    bool ok = true;
    for (std::size_t i = 0; i < 11 && ok; ++i) {
      const auto n = parse_number<std::uint64_t>(f[i + 3]);
      ok = n.has_value();
      if (ok) v[i] = *n;
    }
    const auto major = parse_number<int>(f[0]);
    const auto minor = parse_number<int>(f[1]);
    if (!ok || !major || !minor) continue;
    DiskCounters d;
    d.major = *major;
    d.minor = *minor;
    d.name = std::string(name);
    d.reads_completed = v[0];
    d.reads_merged = v[1];
    d.sectors_read = v[2];
    d.read_ms = v[3];
    d.writes_completed = v[4];
    d.writes_merged = v[5];
    d.sectors_written = v[6];
    d.write_ms = v[7];
    d.in_flight = v[8];
    d.io_ticks_ms = v[9];
    d.weighted_io_ms = v[10];
    disks[d.name] = std::move(d);
  }
  return disks;
}

std::optional<DiskStats> read_diskstats(const std::string& proc_root, const DiskFilter& filter) {
  std::ifstream in(proc_root + "/diskstats", std::ios::binary);
  if (!in) return std::nullopt;
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return std::nullopt;
  return parse_diskstats(text, filter);
}

DiskUsage disk_usage_between(const DiskCounters& earlier, const DiskCounters& later,
                             double interval_s) {
  DiskUsage u;
  u.name = later.name;
  const DiskCounters& a = earlier;
  const DiskCounters& b = later;
  // in_flight is a gauge, not a counter: it may go down.
  if (b.reads_completed < a.reads_completed || b.sectors_read < a.sectors_read ||
      b.read_ms < a.read_ms || b.writes_completed < a.writes_completed ||
      b.sectors_written < a.sectors_written || b.write_ms < a.write_ms ||
      b.io_ticks_ms < a.io_ticks_ms || b.weighted_io_ms < a.weighted_io_ms) {
    u.reset = true;
    return u;
  }
  if (interval_s <= 0) return u;
  const double reads = static_cast<double>(b.reads_completed - a.reads_completed);
  const double writes = static_cast<double>(b.writes_completed - a.writes_completed);
  const double interval_ms = interval_s * 1000.0;
  u.reads_per_s = reads / interval_s;
  u.writes_per_s = writes / interval_s;
  u.read_kb_per_s = static_cast<double>(b.sectors_read - a.sectors_read) / 2.0 / interval_s;
  u.write_kb_per_s =
      static_cast<double>(b.sectors_written - a.sectors_written) / 2.0 / interval_s;
  u.r_await_ms = reads > 0 ? static_cast<double>(b.read_ms - a.read_ms) / reads : 0.0;
  u.w_await_ms = writes > 0 ? static_cast<double>(b.write_ms - a.write_ms) / writes : 0.0;
  u.aqu_sz = static_cast<double>(b.weighted_io_ms - a.weighted_io_ms) / interval_ms;
  u.util_pct =
      std::min(100.0, static_cast<double>(b.io_ticks_ms - a.io_ticks_ms) / interval_ms * 100.0);
  return u;
}

std::vector<DiskUsage> disks_usage_between(const DiskStats& earlier, const DiskStats& later,
                                           double interval_s) {
  std::vector<DiskUsage> out;
  for (const auto& [name, b] : later) {
    const auto a = earlier.find(name);
    if (a == earlier.end()) {
      DiskUsage u;
      u.name = name;
      u.appeared = true;
      out.push_back(std::move(u));
    } else {
      out.push_back(disk_usage_between(a->second, b, interval_s));
    }
  }
  return out;
}

}  // namespace gb::sys
