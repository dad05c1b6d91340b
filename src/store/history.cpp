// store/history.cpp: see history.hpp. One table of runs, one of results (indexed by key), in
// WAL mode so a reader never waits for a writer; writes in one transaction per import.
#include "store/history.hpp"

#include <sqlite3.h>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <memory>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "core/cancel.hpp"
#include "core/error.hpp"
#include "core/json.hpp"

namespace gb::store {

namespace fs = std::filesystem;

namespace {

constexpr const char* kSchemaSql = R"sql(
CREATE TABLE IF NOT EXISTS runs(
  id INTEGER PRIMARY KEY,
  file TEXT UNIQUE NOT NULL,
  command TEXT NOT NULL,
  started_at TEXT NOT NULL,
  host TEXT NOT NULL,
  gpu_name TEXT NOT NULL,
  gpu_uuid TEXT NOT NULL,
  driver TEXT NOT NULL,
  cuda TEXT NOT NULL,
  cudnn TEXT NOT NULL,
  tool_version TEXT NOT NULL,
  results INTEGER NOT NULL,
  worst TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS runs_by_gpu ON runs(gpu_uuid, command, started_at);
CREATE INDEX IF NOT EXISTS runs_by_time ON runs(started_at);
CREATE TABLE IF NOT EXISTS results(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  key TEXT NOT NULL,
  value REAL,
  unit TEXT NOT NULL,
  status TEXT NOT NULL,
  cv REAL,
  n INTEGER NOT NULL,
  min REAL,
  max REAL);
CREATE INDEX IF NOT EXISTS results_by_key ON results(key, run_id);
)sql";

// Schema 2: what the index saw of the runs folder, so that a query lists the folder only when it
// changed, and reads only the files that are new or changed. files: every *.json name seen, with
// the size and modification time it had when read (mtime_ns -1: it was read while it could
// still be changing, so it is read again; -2: indexed by schema 1, its stamp is taken without
// reading it), a hash of its bytes (a file read again whose bytes are the same is not parsed
// again) and whether it is a run in `runs`. folder: the folder's identity and modification
// time at the last listing (mtime_ns -1: listed while it could still be changing).
// results_by_run: a run that is re-read or removed deletes its results through that index, not
// by scanning every result. results_by_key_covering: a key's trend reads the index alone (the
// table's rows are spread over the whole file: 10,000 runs of 61 results, 60 MB).
constexpr const char* kSchema2Sql = R"sql(
CREATE TABLE IF NOT EXISTS files(
  name TEXT PRIMARY KEY,
  size INTEGER NOT NULL,
  mtime_ns INTEGER NOT NULL,
  hash INTEGER,
  is_run INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS folder(
  id INTEGER PRIMARY KEY CHECK (id = 1),
  dev INTEGER NOT NULL,
  ino INTEGER NOT NULL,
  mtime_ns INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS results_by_run ON results(run_id);
DROP INDEX IF EXISTS results_by_key;
CREATE INDEX IF NOT EXISTS results_by_key_covering ON results(key, run_id, value, unit, status, cv);
INSERT OR IGNORE INTO files(name, size, mtime_ns, is_run) SELECT file, -2, -2, 1 FROM runs;
)sql";

// A file or folder modified this recently (relative to the start of the listing) may still be
// changing within one tick of the file system's clock: its stamp is not trusted.
constexpr std::int64_t kRacyNs = 2'000'000'000;

// The stamp of a folder or file: identity, size and modification time.
struct Stamp {
  std::int64_t dev = 0, ino = 0, size = 0, mtime_ns = 0;
};

Stamp stamp_of(const struct stat& st) {
  return {static_cast<std::int64_t>(st.st_dev), static_cast<std::int64_t>(st.st_ino),
          static_cast<std::int64_t>(st.st_size),
          static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
}

std::int64_t now_ns() {
  timespec t{};
  clock_gettime(CLOCK_REALTIME, &t);
  return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

// A file of the runs folder read as a user's file is: regular files only, opened without
// blocking; nullopt when it cannot be read (gone since the listing, no permission).
std::optional<std::string> read_file(int dir_fd, const std::string& name) {
  const int fd = openat(dir_fd, name.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return std::nullopt;
  std::optional<std::string> text;
  struct stat st {};
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    text.emplace(static_cast<std::size_t>(st.st_size), '\0');
    std::size_t got = 0;
    while (got < text->size()) {
      const ssize_t n = read(fd, text->data() + got, text->size() - got);
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
    text->resize(got);
  }
  close(fd);
  return text;
}

// FNV-1a over the bytes: tells a file read again whose bytes did not change (0.1 ms for a
// 300 KB run) from one that must be parsed again (a few ms).
std::int64_t content_hash(std::string_view bytes) {
  std::uint64_t h = 1469598103934665603ull;
  for (const char c : bytes) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return static_cast<std::int64_t>(h);
}

// nullopt when the text is not a run this gpubase reads (left out of the index, the file stays).
std::optional<Run> parse_run(const std::string& text) {
  const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || j.value("schema", "") != "gpubase.run") return std::nullopt;
  try {
    return run_from_json(j);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

[[noreturn]] void fail(sqlite3* db, const fs::path& path, int rc, const std::string& doing) {
  const std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  const int primary = rc & 0xff;
  std::string what;
  if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED)
    what = "the history database " + path.string() +
           " is locked by another gpubase (or another program); try again when it has "
           "finished";
  else if (primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB)
    what = "the history database " + path.string() + " is damaged (" + msg +
           "); move it away and the next command rebuilds it from the run files";
  else
    what = "the history database " + path.string() + ": " + doing + " failed (" + msg + ")";
  throw Error(ErrorKind::runtime, what + "; the saved runs in " +
                                      (path.parent_path() / "runs").string() + " are untouched");
}

class Statement {
 public:
  Statement(sqlite3* db, const fs::path& path, const std::string& sql) : db_(db), path_(path) {
    const int rc = sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt_, nullptr);
    if (rc != SQLITE_OK) fail(db, path, rc, "preparing a query");
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int i, const std::string& s) {
    sqlite3_bind_text(stmt_, i, s.c_str(), -1, SQLITE_TRANSIENT);
    return *this;
  }
  Statement& bind(int i, std::int64_t v) {
    sqlite3_bind_int64(stmt_, i, v);
    return *this;
  }
  Statement& bind(int i, std::optional<double> v) {
    if (v) sqlite3_bind_double(stmt_, i, *v);
    else sqlite3_bind_null(stmt_, i);
    return *this;
  }
  // True while there is a row.
  bool step() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    fail(db_, path_, rc, "a query");
  }
  void run() {
    step();
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  std::string text(int i) const {
    const unsigned char* t = sqlite3_column_text(stmt_, i);
    return t ? reinterpret_cast<const char*>(t) : "";
  }
  std::int64_t integer(int i) const { return sqlite3_column_int64(stmt_, i); }
  bool is_null(int i) const { return sqlite3_column_type(stmt_, i) == SQLITE_NULL; }
  std::optional<double> real(int i) const {
    if (sqlite3_column_type(stmt_, i) == SQLITE_NULL) return std::nullopt;
    return sqlite3_column_double(stmt_, i);
  }

 private:
  sqlite3* db_;
  const fs::path& path_;
  sqlite3_stmt* stmt_ = nullptr;
};

void exec(sqlite3* db, const fs::path& path, const char* sql, const std::string& doing) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql, nullptr, nullptr, &err);
  sqlite3_free(err);
  if (rc != SQLITE_OK) fail(db, path, rc, doing);
}

constexpr const char* kRunColumns =
    "id, file, command, started_at, host, gpu_name, gpu_uuid, driver, cuda, cudnn, results, worst";

RunRow read_row(const Statement& s, int first = 0) {
  RunRow r;
  r.id = s.integer(first);
  r.file = s.text(first + 1);
  r.command = s.text(first + 2);
  r.started_at = s.text(first + 3);
  r.host = s.text(first + 4);
  r.gpu_name = s.text(first + 5);
  r.gpu_uuid = s.text(first + 6);
  r.driver = s.text(first + 7);
  r.cuda = s.text(first + 8);
  r.cudnn = s.text(first + 9);
  r.results = static_cast<int>(s.integer(first + 10));
  r.worst = s.text(first + 11);
  return r;
}

// " WHERE ..." for the filter, binding from index 1; the values in bind order.
std::string where(const RunFilter& f, std::vector<std::string>& values, const char* prefix) {
  std::string w;
  auto add = [&](const std::string& value, const std::string& cond) {
    if (value.empty()) return;
    w += (w.empty() ? " WHERE " : " AND ") + std::string(prefix) + cond;
    values.push_back(value);
  };
  add(f.gpu_uuid, "gpu_uuid = ?");
  add(f.host, "host = ?");
  add(f.command, "command = ?");
  add(f.since, "started_at >= ?");
  return w;
}

}  // namespace

RunRow row_of(const Run& run, const std::string& file) {
  RunRow r;
  r.file = file;
  r.command = run.command;
  r.started_at = run.started_at;
  r.host = run.fact("run.host").value_or("");
  r.gpu_name = run.fact("gpu.name").value_or("");
  r.gpu_uuid = run.fact("gpu.uuid").value_or("");
  r.driver = run.fact("driver.version").value_or("");
  r.cuda = run.fact("cuda.runtime").value_or(run.fact("cuda.driver").value_or(""));
  r.cudnn = run.fact("cudnn.version").value_or("");
  r.results = static_cast<int>(run.results.size());
  Status worst = Status::skipped;
  for (const Result& res : run.results)
    if (severity(res.status) > severity(worst)) worst = res.status;
  r.worst = run.results.empty() ? "" : std::string(to_string(worst));
  return r;
}

History History::open(const fs::path& dir, int busy_timeout_ms) {
  History h;
  h.path_ = dir / "history.sqlite";
  std::error_code ec;
  fs::create_directories(dir, ec);
  int rc = sqlite3_open_v2(h.path_.c_str(), &h.db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                           nullptr);
  if (rc != SQLITE_OK) fail(h.db_, h.path_, rc, "opening");
  sqlite3_busy_timeout(h.db_, busy_timeout_ms);
  // The schema version first: a damaged file fails here, a newer one is refused before any write.
  int version = 0;
  {
    Statement s(h.db_, h.path_, "PRAGMA user_version");
    if (s.step()) version = static_cast<int>(s.integer(0));
  }
  if (version > kHistorySchema)
    throw Error(ErrorKind::runtime,
                "the history database " + h.path_.string() + " was written by a newer gpubase " +
                    "(schema " + std::to_string(version) + "; this one reads up to " +
                    std::to_string(kHistorySchema) + "); use that gpubase, or move the file " +
                    "away to rebuild it from the run files (they are untouched)");
  // WAL is a property of the file: set once, when the schema is made (or brought up to date).
  if (version < kHistorySchema) {
    exec(h.db_, h.path_, "PRAGMA journal_mode=WAL", "setting up");
    exec(h.db_, h.path_, "BEGIN IMMEDIATE", "creating the tables");
    try {
      exec(h.db_, h.path_, kSchemaSql, "creating the tables");
      exec(h.db_, h.path_, kSchema2Sql, "creating the tables");
      exec(h.db_, h.path_, ("PRAGMA user_version = " + std::to_string(kHistorySchema)).c_str(),
           "stamping the schema");
      exec(h.db_, h.path_, "COMMIT", "creating the tables");
    } catch (...) {
      sqlite3_exec(h.db_, "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
  }
  exec(h.db_, h.path_, "PRAGMA foreign_keys=ON", "setting up");
  h.sync(dir / "runs");
  return h;
}

// Brings the index up to date with the runs folder. The folder is listed only when its stamp
// differs from the one stored at the last listing (a name added, removed or renamed changes the
// folder's modification time); then every *.json name is stat'ed (no file is opened) and only
// new or changed files are read; names gone from the folder leave the index. A file rewritten
// in place under the same name does not touch the folder: it is read again the next time the
// folder changes.
void History::sync(const fs::path& runs) {
  const std::int64_t start_ns = now_ns();
  struct stat dir_st {};
  const bool have_dir = ::stat(runs.c_str(), &dir_st) == 0 && S_ISDIR(dir_st.st_mode);
  const Stamp dir = have_dir ? stamp_of(dir_st) : Stamp{};
  auto stored_matches = [&] {
    Statement s(db_, path_, "SELECT dev, ino, mtime_ns FROM folder WHERE id = 1");
    if (!s.step()) return !have_dir;  // never listed: only a missing folder needs nothing
    return have_dir && s.integer(0) == dir.dev && s.integer(1) == dir.ino &&
           s.integer(2) == dir.mtime_ns && dir.mtime_ns >= 0;
  };
  if (stored_matches()) return;

  // The folder changed: list it under the write lock, so two gpubase processes do not both read
  // the same new files (the second finds the first's stamp and stops here).
  exec(db_, path_, "BEGIN IMMEDIATE", "starting the import");
  try {
    if (!stored_matches()) sync_listing(runs, have_dir, dir.dev, dir.ino, dir.mtime_ns, start_ns);
    exec(db_, path_, "COMMIT", "finishing the import");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

void History::sync_listing(const fs::path& runs, bool have_dir, std::int64_t dir_dev,
                           std::int64_t dir_ino, std::int64_t dir_mtime_ns, std::int64_t start_ns) {
  struct Known {
    std::int64_t size, mtime_ns;
    std::optional<std::int64_t> hash;
    bool is_run;
    bool seen = false;
  };
  std::unordered_map<std::string, Known> known;
  {
    Statement s(db_, path_, "SELECT name, size, mtime_ns, hash, is_run FROM files");
    while (s.step()) {
      known.emplace(s.text(0), Known{s.integer(1), s.integer(2),
                                     s.is_null(3) ? std::nullopt
                                                  : std::optional<std::int64_t>(s.integer(3)),
                                     s.integer(4) != 0});
    }
  }
  Statement forget_run(db_, path_, "DELETE FROM runs WHERE file = ?");
  Statement forget_file(db_, path_, "DELETE FROM files WHERE name = ?");
  Statement remember(db_, path_,
                     "INSERT OR REPLACE INTO files(name, size, mtime_ns, hash, is_run) "
                     "VALUES(?,?,?,?,?)");
  bool any_racy = false;  // a file that may still be changing: the next open lists again
  auto record = [&](const std::string& name, const Stamp& st, std::optional<std::int64_t> hash,
                    bool is_run) {
    const bool racy = st.mtime_ns >= start_ns - kRacyNs;
    any_racy = any_racy || racy;
    remember.bind(1, name).bind(2, st.size).bind(3, racy ? std::int64_t{-1} : st.mtime_ns);
    if (hash) remember.bind(4, *hash);
    remember.bind(5, std::int64_t{is_run}).run();
  };

  DIR* d = have_dir ? opendir(runs.c_str()) : nullptr;
  if (d) {
    const std::unique_ptr<DIR, int (*)(DIR*)> closer(d, closedir);
    const int dir_fd = dirfd(d);
    while (const dirent* e = readdir(d)) {
      throw_if_cancelled();  // the first use indexes every saved run: Ctrl-C rolls it back
      const std::string_view name_view(e->d_name);
      if (name_view.size() <= 5 || !name_view.ends_with(".json")) continue;
      if (e->d_type != DT_REG && e->d_type != DT_UNKNOWN) continue;  // DT_UNKNOWN: stat says
      ++listed_;
      const std::string name(name_view);
      struct stat st {};
      if (fstatat(dir_fd, name.c_str(), &st, 0) != 0 || !S_ISREG(st.st_mode)) continue;
      const Stamp fs_stamp = stamp_of(st);
      const auto it = known.find(name);
      if (it != known.end()) {
        it->second.seen = true;
        if (it->second.mtime_ns == -2) {  // indexed by schema 1: take its stamp as it is
          record(name, fs_stamp, std::nullopt, it->second.is_run);
          continue;
        }
        if (it->second.size == fs_stamp.size && it->second.mtime_ns == fs_stamp.mtime_ns) continue;
      }
      const std::optional<std::string> text = read_file(dir_fd, name);
      if (!text) continue;  // gone or unreadable since the listing: looked at again next time
      const std::int64_t hash = content_hash(*text);
      if (it != known.end() && it->second.hash == hash) {  // touched, or read while racy: same bytes
        record(name, fs_stamp, hash, it->second.is_run);
        continue;
      }
      const std::optional<Run> run = parse_run(*text);
      if (run) {
        index(*run, name);
        ++imported_;
      } else if (it != known.end() && it->second.is_run) {
        forget_run.bind(1, name).run();  // was a run, is no longer one
      }
      record(name, fs_stamp, hash, run.has_value());
    }
  }
  for (const auto& [name, k] : known) {
    if (k.seen) continue;
    if (k.is_run) forget_run.bind(1, name).run();
    forget_file.bind(1, name).run();
    ++removed_;
  }
  // The folder's stamp; a folder modified during or just before the listing, or one holding a
  // file that was, is listed again at the next open.
  exec(db_, path_, "DELETE FROM folder", "recording the folder");
  if (have_dir) {
    Statement s(db_, path_, "INSERT INTO folder(id, dev, ino, mtime_ns) VALUES(1, ?, ?, ?)");
    const bool racy = any_racy || dir_mtime_ns >= start_ns - kRacyNs;
    s.bind(1, dir_dev).bind(2, dir_ino).bind(3, racy ? std::int64_t{-1} : dir_mtime_ns).run();
  }
}

History::~History() {
  if (db_) sqlite3_close(db_);
}

History::History(History&& o) noexcept
    : db_(std::exchange(o.db_, nullptr)),
      path_(std::move(o.path_)),
      imported_(o.imported_),
      removed_(o.removed_),
      listed_(o.listed_) {}

History& History::operator=(History&& o) noexcept {
  if (this != &o) {
    if (db_) sqlite3_close(db_);
    db_ = std::exchange(o.db_, nullptr);
    path_ = std::move(o.path_);
    imported_ = o.imported_;
    removed_ = o.removed_;
    listed_ = o.listed_;
  }
  return *this;
}

void History::index(const Run& run, const std::string& file) {
  const RunRow r = row_of(run, file);
  Statement(db_, path_, "DELETE FROM runs WHERE file = ?").bind(1, file).run();
  Statement ins(db_, path_,
                "INSERT INTO runs(file, command, started_at, host, gpu_name, gpu_uuid, driver, "
                "cuda, cudnn, tool_version, results, worst) VALUES(?,?,?,?,?,?,?,?,?,?,?,?)");
  ins.bind(1, r.file).bind(2, r.command).bind(3, r.started_at).bind(4, r.host);
  ins.bind(5, r.gpu_name).bind(6, r.gpu_uuid).bind(7, r.driver).bind(8, r.cuda).bind(9, r.cudnn);
  ins.bind(10, run.tool_version).bind(11, static_cast<std::int64_t>(r.results)).bind(12, r.worst);
  ins.run();
  const std::int64_t id = sqlite3_last_insert_rowid(db_);
  Statement res(db_, path_,
                "INSERT INTO results(run_id, key, value, unit, status, cv, n, min, max) "
                "VALUES(?,?,?,?,?,?,?,?,?)");
  for (const Result& x : run.results) {
    const bool stats = x.stats.n >= 2;
    res.bind(1, id).bind(2, x.key).bind(3, x.value).bind(4, x.unit);
    res.bind(5, std::string(to_string(x.status)));
    res.bind(6, stats ? std::optional<double>(x.stats.cv) : std::nullopt);
    res.bind(7, static_cast<std::int64_t>(x.stats.n));
    res.bind(8, x.stats.n ? std::optional<double>(x.stats.min) : std::nullopt);
    res.bind(9, x.stats.n ? std::optional<double>(x.stats.max) : std::nullopt);
    res.run();
  }
}

void History::for_each_run(const RunFilter& filter,
                           const std::function<void(const RunRow&)>& fn) const {
  std::vector<std::string> values;
  std::string sql = std::string("SELECT ") + kRunColumns + " FROM runs" +
                    where(filter, values, "") + " ORDER BY started_at DESC, id DESC";
  if (filter.limit) sql += " LIMIT " + std::to_string(filter.limit);
  Statement s(db_, path_, sql);
  for (std::size_t i = 0; i < values.size(); ++i) s.bind(static_cast<int>(i + 1), values[i]);
  while (s.step()) fn(read_row(s));
}

std::vector<RunRow> History::runs(const RunFilter& filter) const {
  std::vector<RunRow> out;
  for_each_run(filter, [&](const RunRow& r) { out.push_back(r); });
  return out;
}

void History::for_each_point(const std::string& key, const RunFilter& filter,
                             const std::function<void(const KeyPoint&)>& fn) const {
  std::vector<std::string> values;
  std::string cols;
  for (const char* c : {"id", "file", "command", "started_at", "host", "gpu_name", "gpu_uuid",
                        "driver", "cuda", "cudnn", "results", "worst"})
    cols += std::string(cols.empty() ? "" : ", ") + "r." + c;
  std::string w = where(filter, values, "r.");
  w += (w.empty() ? " WHERE " : " AND ") + std::string("x.key = ?");
  values.push_back(key);
  // Runs first (CROSS JOIN keeps that order): in time order through runs_by_time, or one GPU's
  // through runs_by_gpu, each run's figure found in results_by_key_covering without touching
  // the results table. The newest N, oldest first: the N newest, then turned round.
  std::string sql = "SELECT " + cols +
                    ", x.value, x.unit, x.status, x.cv FROM runs r CROSS JOIN results x ON "
                    "x.run_id = r.id" +
                    w;
  if (filter.limit)
    sql = "SELECT * FROM (" + sql + " ORDER BY r.started_at DESC, r.id DESC LIMIT " +
          std::to_string(filter.limit) + ") ORDER BY started_at, id";
  else
    sql += " ORDER BY r.started_at, r.id";
  Statement s(db_, path_, sql);
  for (std::size_t i = 0; i < values.size(); ++i) s.bind(static_cast<int>(i + 1), values[i]);
  KeyPoint p;
  while (s.step()) {
    p.run = read_row(s);
    p.value = s.real(12);
    p.unit = s.text(13);
    p.status = s.text(14);
    p.cv = s.real(15);
    fn(p);
  }
}

std::vector<KeyPoint> History::trend(const std::string& key, const RunFilter& filter) const {
  std::vector<KeyPoint> out;
  for_each_point(key, filter, [&](const KeyPoint& p) { out.push_back(p); });
  return out;
}

std::optional<RunRow> History::newest(const RunFilter& filter) const {
  RunFilter f = filter;
  f.limit = 1;
  auto rows = runs(f);
  if (rows.empty()) return std::nullopt;
  return rows.front();
}

std::optional<RunRow> History::previous_of(const RunRow& run) const {
  Statement s(db_, path_,
              std::string("SELECT ") + kRunColumns +
                  " FROM runs WHERE command = ? AND gpu_uuid = ? AND host = ? AND "
                  "(started_at < ? OR (started_at = ? AND id < ?)) "
                  "ORDER BY started_at DESC, id DESC LIMIT 1");
  s.bind(1, run.command).bind(2, run.gpu_uuid).bind(3, run.host).bind(4, run.started_at);
  s.bind(5, run.started_at).bind(6, run.id);
  if (!s.step()) return std::nullopt;
  return read_row(s);
}

}  // namespace gb::store
