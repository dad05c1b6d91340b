// bench/collectives.hpp: the CPU half of the probe's "nccl" section -- what the GPU half
// (bench/gpu/probe_nccl.cpp) measures and how a timing becomes a Result. CUDA-free, so the
// arithmetic is tested without a GPU.
//
// Bandwidth as nccl-tests defines it (its doc/PERFORMANCE.md), for n ranks and S the size of
// the larger buffer of one rank (the all-reduce buffer, the all-gather output, the
// reduce-scatter input), t the time of one operation:
//   algbw = S / t                         (GB/s, 1e9 bytes)
//   busbw = algbw x factor                all-reduce 2(n-1)/n, all-gather and reduce-scatter
//                                         (n-1)/n
// busbw is what each link carried, comparable with the link's rate whatever n is. With one rank
// the factor is 0: busbw is 0 by definition (nothing crossed a link) and algbw is the GPU's
// own copy/reduce speed.
//
// Keys (per collective c in allreduce, allgather, reducescatter):
//   probe.nccl.<c>.<size>.busbw_gbps   one point of the size sweep (params: bytes, algbw_gbps,
//                                      time_us, ranks, check)
//   probe.nccl.<c>.busbw_gbps          the largest size: the headline, judged against the link
//   probe.nccl.<c>.algbw_gbps          the largest size's algbw
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace gb::bench {

enum class Collective { all_reduce = 0, all_gather = 1, reduce_scatter = 2 };
inline constexpr Collective kCollectives[] = {Collective::all_reduce, Collective::all_gather,
                                              Collective::reduce_scatter};

std::string collective_key(Collective c);    // "allreduce"
std::string collective_title(Collective c);  // "All-reduce"

// nccl-tests' busbw factor: 2(n-1)/n for all-reduce, (n-1)/n for the others; 0 for n = 1.
double bus_factor(Collective c, int ranks);

// One point of the sweep: the per-rank element count NCCL is given (float32 elements) and the
// size S of the larger buffer, rounded down so every rank gets the same whole count (at least
// one element per rank).
struct CollectiveSize {
  std::uint64_t count = 0;  // NCCL's count / sendcount / recvcount
  std::uint64_t bytes = 0;  // S
};
CollectiveSize collective_size(Collective c, int ranks, std::uint64_t wanted_bytes);

// The sizes swept, S in bytes: 8 B to 1 GiB in steps of x8 (10 points); quick: 8 B to 128 MiB in
// steps of x64 (5 points).
std::vector<std::uint64_t> nccl_sweep_bytes(bool quick);

// "8B", "512B", "32KiB", "2MiB", "1GiB": the key part of a size.
std::string size_name(std::uint64_t bytes);

// algbw and busbw in GB/s for one operation of `bytes` taking `seconds`.
struct CollectiveBandwidth {
  double algbw_gbps = 0;
  double busbw_gbps = 0;
};
CollectiveBandwidth collective_bandwidth(Collective c, int ranks, std::uint64_t bytes,
                                         double seconds);

// A measured point: the seconds per operation of each sample, the check's outcome ("" = every
// element of every rank's output was right), the theoretical per-direction link rate the busbw
// is judged against (empty: none known, or one rank) and what that link is.
struct CollectiveMeasurement {
  Collective collective = Collective::all_reduce;
  int ranks = 1;
  CollectiveSize size;
  std::vector<double> seconds;
  std::string check_error;
  std::optional<double> link_gbps;
  std::string link_name;
};

// The busbw Result of a point (its key: the sweep's when headline is false, else the
// headline's). A failed check makes a fail result with no value: a wrong fast answer is not a
// figure. With one rank the busbw is 0 and the reason says why (diagnose judges it skipped).
Result collective_result(const CollectiveMeasurement& m, bool headline);
// The headline's algbw Result (info).
Result collective_algbw_result(const CollectiveMeasurement& m);

// Skipped results for every collective (the headlines), when NCCL or a GPU is missing.
std::vector<Result> skipped_collective_results(const std::string& reason);

// Where the section prints.
std::span<const SectionRule> nccl_section_rules();

}  // namespace gb::bench
