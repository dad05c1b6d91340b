// bench/collectives.cpp: see collectives.hpp.
#include "bench/collectives.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/format.hpp"

namespace gb::bench {

namespace {

constexpr std::uint64_t kElementBytes = 4;  // float32, nccl-tests' default type

}  // namespace

std::string collective_key(Collective c) {
  switch (c) {
    case Collective::all_reduce: return "allreduce";
    case Collective::all_gather: return "allgather";
    case Collective::reduce_scatter: return "reducescatter";
  }
  return "?";
}

std::string collective_title(Collective c) {
  switch (c) {
    case Collective::all_reduce: return "All-reduce";
    case Collective::all_gather: return "All-gather";
    case Collective::reduce_scatter: return "Reduce-scatter";
  }
  return "?";
}

double bus_factor(Collective c, int ranks) {
  if (ranks < 1) throw Error(ErrorKind::usage, "a collective needs at least one rank");
  const double n = ranks;
  return c == Collective::all_reduce ? 2 * (n - 1) / n : (n - 1) / n;
}

CollectiveSize collective_size(Collective c, int ranks, std::uint64_t wanted_bytes) {
  if (ranks < 1) throw Error(ErrorKind::usage, "a collective needs at least one rank");
  const std::uint64_t n = static_cast<std::uint64_t>(ranks);
  const std::uint64_t elements = wanted_bytes / kElementBytes;
  CollectiveSize s;
  if (c == Collective::all_reduce) {
    s.count = std::max<std::uint64_t>(1, elements);
    s.bytes = s.count * kElementBytes;
  } else {  // S holds n equal parts of `count` elements
    s.count = std::max<std::uint64_t>(1, elements / n);
    s.bytes = s.count * n * kElementBytes;
  }
  return s;
}

std::vector<std::uint64_t> nccl_sweep_bytes(bool quick) {
  std::vector<std::uint64_t> sizes;
  const std::uint64_t step = quick ? 64 : 8;
  const std::uint64_t last = quick ? (std::uint64_t{128} << 20) : (std::uint64_t{1} << 30);
  for (std::uint64_t b = 8; b <= last; b *= step) sizes.push_back(b);
  return sizes;
}

std::string size_name(std::uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (u < 4 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++u;
  }
  return std::to_string(bytes) + units[u];
}

CollectiveBandwidth collective_bandwidth(Collective c, int ranks, std::uint64_t bytes,
                                         double seconds) {
  CollectiveBandwidth bw;
  if (seconds <= 0) return bw;
  bw.algbw_gbps = static_cast<double>(bytes) / seconds / 1e9;
  bw.busbw_gbps = bw.algbw_gbps * bus_factor(c, ranks);
  return bw;
}

namespace {

std::string point_label(const CollectiveMeasurement& m) {
  return collective_title(m.collective) + " bus bandwidth, " + std::to_string(m.ranks) +
         (m.ranks == 1 ? " rank, " : " ranks, ") + size_name(m.size.bytes);
}

void add_common_params(Result& r, const CollectiveMeasurement& m) {
  r.param("bytes", static_cast<double>(m.size.bytes), "B", 0)
      .param("count_per_rank", static_cast<double>(m.size.count), "", 0)
      .param("ranks", m.ranks, "", 0)
      .param("datatype", "float32, sum")
      .param("bus_factor", bus_factor(m.collective, m.ranks), "", 3)
      .param("timing", "host clock around back-to-back operations of every rank, streams "
                       "synchronized (as nccl-tests)");
}

}  // namespace

Result collective_result(const CollectiveMeasurement& m, bool headline) {
  const std::string base = "probe.nccl." + collective_key(m.collective) + ".";
  const std::string key =
      headline ? base + "busbw_gbps" : base + size_name(m.size.bytes) + ".busbw_gbps";
  if (!m.check_error.empty()) {
    Result r = Result::skipped(key, point_label(m), "GB/s", "");
    r.status = Status::fail;
    r.reason = "wrong result: " + m.check_error;
    r.advice = "a collective that returns wrong data is a broken link, GPU or NCCL install; "
               "rerun, then test the GPUs one by one";
    add_common_params(r, m);
    r.param("check", "failed");
    return r;
  }
  std::vector<double> busbw, algbw;
  for (const double s : m.seconds) {
    const CollectiveBandwidth bw = collective_bandwidth(m.collective, m.ranks, m.size.bytes, s);
    busbw.push_back(bw.busbw_gbps);
    algbw.push_back(bw.algbw_gbps);
  }
  Result r = Result::measured(key, point_label(m), "GB/s", busbw);
  add_common_params(r, m);
  const Result alg = Result::measured("", "", "GB/s", algbw);
  if (alg.value) r.param("algbw_gbps", *alg.value, "GB/s");
  std::vector<double> us;
  for (const double s : m.seconds) us.push_back(s * 1e6);
  const Result time = Result::measured("", "", "us", us);
  if (time.value) r.param("time_us", *time.value, "us");
  r.param("check", "every element of every rank's output exact");
  if (m.ranks == 1) {
    r.reason = "busbw is 0 by definition for one rank (factor 2(n-1)/n or (n-1)/n); algbw " +
               (alg.value ? fixed(*alg.value, 1) : std::string("N/A")) +
               " GB/s is the GPU's own copy speed";
  } else if (m.link_gbps) {
    r.param("link", m.link_name);
    r.reference("datasheet", *m.link_gbps, m.link_name + " per direction (slowest link of the ring)");
  }
  return r;
}

Result collective_algbw_result(const CollectiveMeasurement& m) {
  std::vector<double> algbw;
  for (const double s : m.seconds)
    algbw.push_back(collective_bandwidth(m.collective, m.ranks, m.size.bytes, s).algbw_gbps);
  Result r = Result::measured("probe.nccl." + collective_key(m.collective) + ".algbw_gbps",
                              collective_title(m.collective) + " algorithm bandwidth, " +
                                  std::to_string(m.ranks) + (m.ranks == 1 ? " rank, " : " ranks, ") +
                                  size_name(m.size.bytes),
                              "GB/s", algbw);
  add_common_params(r, m);
  return r;
}

std::vector<Result> skipped_collective_results(const std::string& reason) {
  std::vector<Result> out;
  for (const Collective c : kCollectives)
    out.push_back(Result::skipped("probe.nccl." + collective_key(c) + ".busbw_gbps",
                                  collective_title(c) + " bus bandwidth (NCCL)", "GB/s", reason));
  return out;
}

std::span<const SectionRule> nccl_section_rules() {
  static constexpr SectionRule kRules[] = {
      {"probe.nccl", "probe.nccl", "NCCL collectives over the selected GPUs", Layout::benchmark},
  };
  return kRules;
}

}  // namespace gb::bench
