// fleet/merge.hpp: `gpubase fleet merge`: many runs of many GPUs (one run file per GPU, written
// by `gpubase probe` or `baseline` under Slurm, MPI or a Kubernetes Job) merged into one report
// that finds the GPUs that do not run right:
//   - runs are grouped by what should make GPUs equal: GPU model, memory, power limit (the power
//     class), driver and CUDA versions;
//   - per group and judged key (a figure diagnose gave a verdict), the robust median and the
//     spread (MAD) over the GPUs whose figure is valid and unthrottled;
//   - a GPU is flagged when any judged figure is `threshold` or more below its group's median
//     (above it for figures where lower is better), when its PCIe link under load is below
//     what the GPU supports, when a figure was measured throttled or is invalid, or when the run
//     had no GPU at all;
//   - flagged GPUs are listed worst first (the largest loss any problem implies), each problem
//     with its evidence and advice.
// Pure over ScannedRuns: reading the files is merge_files (threads over files).
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "fleet/run_scan.hpp"

namespace gb::fleet {

struct MergeOptions {
  double threshold = 0.03;  // fraction below the group's median that flags a figure
  int min_peers = 3;        // a group smaller than this is not compared (its median says little)
  int jobs = 0;             // scanning threads; 0: one per hardware thread
};

// Statistics of one judged key within one group.
struct KeyStats {
  std::uint32_t key = 0;
  std::size_t n = 0;  // valid, unthrottled figures
  double median = 0;
  double mad = 0;  // median absolute deviation from the median (unscaled)
  bool higher_is_better = true;
};

struct Group {
  std::string id;  // "G1", in order of size
  std::string gpu_name;
  std::optional<double> memory_gib;
  std::optional<double> power_limit_w;
  std::string driver;
  std::string cuda;
  std::size_t gpus = 0;
  std::vector<KeyStats> keys;  // sorted by key name
};

enum class ProblemKind { no_gpu, throttled, invalid, slow, link };
std::string_view to_string(ProblemKind k);

struct Problem {
  ProblemKind kind = ProblemKind::slow;
  std::string key;  // the figure's key; empty for no_gpu and link
  std::optional<double> value;
  std::optional<double> median;  // the group's
  double loss = 0;  // fraction lost against the median (or the link's rate); 1 for no GPU
  std::string evidence;
  std::string advice;
};

struct FlaggedGpu {
  std::size_t run = 0;  // index into MergeReport::runs
  double score = 0;     // the largest loss of its problems
  std::vector<Problem> problems;  // worst first
};

struct UnreadableFile {
  std::string file;
  std::string reason;
};

struct MergeReport {
  double threshold = 0;
  int min_peers = 0;
  std::vector<ScannedRun> runs;
  std::vector<std::string> files;        // files[i] is where runs[i] came from
  std::vector<std::size_t> run_group;    // group index of each run (SIZE_MAX: no GPU)
  KeyTable keys;
  std::vector<Group> groups;             // largest first
  std::vector<FlaggedGpu> flagged;       // worst first
  std::vector<UnreadableFile> unreadable;
  // Files that are fleet merge's own reports (schema "gpubase.fleet"), e.g. -o written into the
  // runs' folder: left out, neither runs nor unreadable.
  std::vector<std::string> fleet_reports;
  double scan_seconds = 0;
  double total_seconds = 0;
};

// The run files under the given paths: a file as named; a folder, every *.json below it
// (recursively), in name order. Throws gb::Error (usage) for a path that does not exist or
// when no run file is found.
std::vector<std::filesystem::path> collect_run_files(const std::vector<std::string>& paths);

// Reads and scans the files on `options.jobs` threads, then merges. A file that cannot be read
// or is not a run is listed in `unreadable`, not fatal.
MergeReport merge_files(const std::vector<std::filesystem::path>& files,
                        const MergeOptions& options);

// The merge itself over scanned runs (files[i] names runs[i]); `keys` is the table their
// figures' key ids index.
MergeReport merge_runs(std::vector<ScannedRun> runs, std::vector<std::string> files,
                       KeyTable keys, const MergeOptions& options);

// Per-lane PCIe bandwidth after encoding, GB/s, for generation 1..6; 0 when unknown.
double pcie_lane_gbps(int gen);

}  // namespace gb::fleet
