// fleet/run_scan.hpp: what `fleet merge` needs from one run file, read fast. A fleet is tens of
// thousands of run files; building the whole result model (core/json) for each would spend most
// of the merge on raw samples, references and params nobody reads here. This scanner walks the
// JSON once, keeps the GPU's identity and grouping facts and each result's key, value, status and
// throttle bits, and skips everything else (a `samples` array or a `stats` object with one memchr).
// It accepts exactly the run documents core/json writes (schema "gpubase.run", v1 and v2).
#pragma once
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace gb::fleet {

// A result as the merge judges it. key is an index into the caller's KeyTable.
struct ScannedFigure {
  std::uint32_t key = 0;
  double value = 0;
  bool has_value = false;
  bool higher_is_better = true;
  bool judged = false;     // diagnose gave it a verdict (pass, warn or fail)
  bool invalid = false;    // status "invalid"
  std::uint64_t throttle_reasons = 0;  // telemetry.throttle_reasons (0 when absent)
  std::string reason;      // kept for invalid figures only
};

// Result keys interned to small integers (one table per scanning thread, merged after).
class KeyTable {
 public:
  std::uint32_t intern(std::string_view key);
  const std::string& name(std::uint32_t id) const { return names_[id]; }
  std::size_t size() const { return names_.size(); }

 private:
  std::vector<std::string> names_;
  std::vector<std::uint32_t> slots_;  // open addressing over names_, 0 = empty, else id + 1
};

struct ScannedLink {
  std::optional<int> gen;
  std::optional<int> width;
};

// One GPU's run.
struct ScannedRun {
  std::string command;
  std::string host;  // run.host
  std::optional<int> rank;
  std::string job_id;
  std::string gpu_index;  // gpu.index
  std::string uuid;       // gpu.uuid
  std::string gpu_name;   // gpu.name
  std::optional<double> memory_gib;
  std::optional<double> power_limit_w;
  std::string driver;  // driver.version
  std::string cuda;    // cuda.driver
  std::optional<std::string> gpu_unavailable;  // the run had no GPU: why
  ScannedLink link_max_slot, link_max_gpu;
  std::optional<double> link_gen_under_load, link_width_under_load;
  std::vector<ScannedFigure> figures;
};

struct ScanError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Scans one run document. Throws ScanError (with the byte offset) for text that is not JSON or
// not a gpubase run.
ScannedRun scan_run(std::string_view text, KeyTable& keys);

}  // namespace gb::fleet
