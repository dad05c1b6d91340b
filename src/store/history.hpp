// store/history.hpp: the run history, an SQLite index over the saved run files
// (<data dir>/runs/*.json). The JSON files stay the source: the database only indexes them (time,
// host, GPU name and UUID, driver/CUDA/cuDNN, command, each result's key, value, unit, status,
// spread) so that `gpubase history` and `gpubase compare --last` answer without reading ten
// thousand files. A run file not in the index yet (saved before the index existed, or while it
// could not be written) is added the next time the history is opened; a database that is
// locked, damaged or from a newer gpubase is an error that names the file and loses no run.
//
//   store::History h = store::History::open(data_dir());  // creates, imports what is missing
//   for (const store::RunRow& r : h.runs({.gpu_uuid = "GPU-..."})) ...
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"

struct sqlite3;

namespace gb::store {

// The schema this build writes; a database with a higher user_version is refused.
inline constexpr int kHistorySchema = 1;

struct RunRow {
  std::int64_t id = 0;
  std::string file;  // name under runs/
  std::string command;
  std::string started_at;
  std::string host;  // the run.host fact; empty when the run does not say
  std::string gpu_name;
  std::string gpu_uuid;
  std::string driver;
  std::string cuda;
  std::string cudnn;
  int results = 0;
  std::string worst;  // worst status over the results ("fail", "pass", ...)
};

struct RunFilter {
  std::string gpu_uuid;
  std::string host;
  std::string command;
  std::string since;     // ISO 8601 date or time; runs started at or after it
  std::size_t limit = 0; // newest first; 0: all
};

// One run's figure for a key (a trend point).
struct KeyPoint {
  RunRow run;
  std::optional<double> value;
  std::string unit;
  std::string status;
  std::optional<double> cv;
};

// What the index keeps of a run: the row fields, from the run's facts.
RunRow row_of(const Run& run, const std::string& file);

class History {
 public:
  // Opens (creating) <dir>/history.sqlite and indexes every run file of <dir>/runs not in it.
  // Throws gb::Error(runtime) for a locked, damaged or newer database, with what to do.
  // busy_timeout_ms: how long to wait for another writer before calling the database locked.
  static History open(const std::filesystem::path& dir, int busy_timeout_ms = 5000);
  ~History();
  History(History&&) noexcept;
  History& operator=(History&&) noexcept;

  // Adds (or replaces) one run saved as runs/<file>.
  void index(const Run& run, const std::string& file);
  std::vector<RunRow> runs(const RunFilter& filter) const;
  std::vector<KeyPoint> trend(const std::string& key, const RunFilter& filter) const;
  // The newest run matching the filter, and the one before it of the same command, GPU UUID
  // and host (compare --last); empty when there is none.
  std::optional<RunRow> newest(const RunFilter& filter) const;
  std::optional<RunRow> previous_of(const RunRow& run) const;
  // How many run files the last open() imported (first use: every saved run).
  std::size_t imported() const { return imported_; }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path runs_dir() const { return path_.parent_path() / "runs"; }

 private:
  History() = default;
  sqlite3* db_ = nullptr;
  std::filesystem::path path_;
  std::size_t imported_ = 0;
};

}  // namespace gb::store
