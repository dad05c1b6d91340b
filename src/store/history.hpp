// store/history.hpp: the run history, an SQLite index over the saved run files
// (<data dir>/runs/*.json). The JSON files stay the source: the database only indexes them (time,
// host, GPU name and UUID, driver/CUDA/cuDNN, command, each result's key, value, unit, status,
// spread) so that `gpubase history` and `gpubase compare --last` answer without reading ten
// thousand files. A run file not in the index yet (saved before the index existed, or while it
// could not be written) is added the next time the history is opened, a changed one is read
// again and a removed one leaves the index; a database that is locked, damaged or from a newer
// gpubase is an error that names the file and loses no run.
//
// Opening is cheap when nothing changed: the runs folder is listed only when its modification
// time differs from the one stored at the last listing, and then only new or changed files
// (by size and modification time) are read.
//
//   store::History h = store::History::open(data_dir());  // creates, imports what is missing
//   for (const store::RunRow& r : h.runs({.gpu_uuid = "GPU-..."})) ...
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"

struct sqlite3;

namespace gb::store {

// The schema this build writes; a database with a higher user_version is refused.
inline constexpr int kHistorySchema = 2;

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
  // Opens (creating) <dir>/history.sqlite and brings it up to date with <dir>/runs: indexes every
  // run file not in it, reads changed ones again, forgets removed ones.
  // Throws gb::Error(runtime) for a locked, damaged or newer database, with what to do.
  // busy_timeout_ms: how long to wait for another writer before calling the database locked.
  static History open(const std::filesystem::path& dir, int busy_timeout_ms = 5000);
  ~History();
  History(History&&) noexcept;
  History& operator=(History&&) noexcept;

  // Adds (or replaces) one run saved as runs/<file>.
  void index(const Run& run, const std::string& file);
  // Newest first.
  std::vector<RunRow> runs(const RunFilter& filter) const;
  // A key's points, oldest first (with filter.limit: the newest N of them, oldest first).
  std::vector<KeyPoint> trend(const std::string& key, const RunFilter& filter) const;
  // The same, one row at a time, for callers that print ten thousand of them without keeping
  // them (the row passed is reused between calls).
  void for_each_run(const RunFilter& filter, const std::function<void(const RunRow&)>& fn) const;
  void for_each_point(const std::string& key, const RunFilter& filter,
                      const std::function<void(const KeyPoint&)>& fn) const;
  // The newest run matching the filter, and the one before it of the same command, GPU UUID
  // and host (compare --last); empty when there is none.
  std::optional<RunRow> newest(const RunFilter& filter) const;
  std::optional<RunRow> previous_of(const RunRow& run) const;
  // How many run files the last open() imported (first use: every saved run).
  std::size_t imported() const { return imported_; }
  // How many run files the last open() found gone (and removed from the index).
  std::size_t removed() const { return removed_; }
  // How many *.json names the last open() looked at: 0 when the folder had not changed.
  std::size_t listed() const { return listed_; }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path runs_dir() const { return path_.parent_path() / "runs"; }

 private:
  History() = default;
  void sync(const std::filesystem::path& runs);
  void sync_listing(const std::filesystem::path& runs, bool have_dir, std::int64_t dir_dev,
                    std::int64_t dir_ino, std::int64_t dir_mtime_ns, std::int64_t start_ns);
  sqlite3* db_ = nullptr;
  std::filesystem::path path_;
  std::size_t imported_ = 0;
  std::size_t removed_ = 0;
  std::size_t listed_ = 0;
};

}  // namespace gb::store
