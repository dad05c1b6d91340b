// store/history.cpp: see history.hpp. One table of runs, one of results (indexed by key), in
// WAL mode so a reader never waits for a writer; writes in one transaction per import.
#include "store/history.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <fstream>
#include <set>

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
  exec(h.db_, h.path_, "PRAGMA journal_mode=WAL; PRAGMA foreign_keys=ON;", "setting up");
  if (version < kHistorySchema) {
    exec(h.db_, h.path_, kSchemaSql, "creating the tables");
    exec(h.db_, h.path_, ("PRAGMA user_version = " + std::to_string(kHistorySchema)).c_str(),
         "stamping the schema");
  }
  // Run files not indexed yet: every one on first use.
  const fs::path runs = dir / "runs";
  std::vector<fs::path> missing;
  if (fs::is_directory(runs, ec)) {
    std::set<std::string> known;
    Statement s(h.db_, h.path_, "SELECT file FROM runs");
    while (s.step()) known.insert(s.text(0));
    for (const auto& entry : fs::directory_iterator(runs, ec)) {
      const fs::path& p = entry.path();
      if (p.extension() != ".json" || known.count(p.filename().string())) continue;
      missing.push_back(p);
    }
  }
  if (!missing.empty()) {
    exec(h.db_, h.path_, "BEGIN IMMEDIATE", "starting the import");
    try {
      for (const fs::path& p : missing) {
        throw_if_cancelled();  // the first use indexes every saved run: Ctrl-C rolls it back
        std::ifstream in(p);
        const Json j = Json::parse(in, nullptr, /*allow_exceptions=*/false);
        if (!j.is_object() || j.value("schema", "") != "gpubase.run") continue;
        Run run;
        try {
          run = run_from_json(j);
        } catch (const std::exception&) {
          continue;  // not a run this gpubase reads: left out of the index, the file stays
        }
        h.index(run, p.filename().string());
        ++h.imported_;
      }
      exec(h.db_, h.path_, "COMMIT", "finishing the import");
    } catch (...) {
      sqlite3_exec(h.db_, "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
  }
  return h;
}

History::~History() {
  if (db_) sqlite3_close(db_);
}

History::History(History&& o) noexcept
    : db_(std::exchange(o.db_, nullptr)), path_(std::move(o.path_)), imported_(o.imported_) {}

History& History::operator=(History&& o) noexcept {
  if (this != &o) {
    if (db_) sqlite3_close(db_);
    db_ = std::exchange(o.db_, nullptr);
    path_ = std::move(o.path_);
    imported_ = o.imported_;
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

std::vector<RunRow> History::runs(const RunFilter& filter) const {
  std::vector<std::string> values;
  std::string sql = std::string("SELECT ") + kRunColumns + " FROM runs" +
                    where(filter, values, "") + " ORDER BY started_at DESC, id DESC";
  if (filter.limit) sql += " LIMIT " + std::to_string(filter.limit);
  Statement s(db_, path_, sql);
  for (std::size_t i = 0; i < values.size(); ++i) s.bind(static_cast<int>(i + 1), values[i]);
  std::vector<RunRow> out;
  while (s.step()) out.push_back(read_row(s));
  return out;
}

std::vector<KeyPoint> History::trend(const std::string& key, const RunFilter& filter) const {
  std::vector<std::string> values;
  std::string cols;
  for (const char* c : {"id", "file", "command", "started_at", "host", "gpu_name", "gpu_uuid",
                        "driver", "cuda", "cudnn", "results", "worst"})
    cols += std::string(cols.empty() ? "" : ", ") + "r." + c;
  std::string w = where(filter, values, "r.");
  w += (w.empty() ? " WHERE " : " AND ") + std::string("x.key = ?");
  values.push_back(key);
  std::string sql = "SELECT " + cols +
                    ", x.value, x.unit, x.status, x.cv FROM results x JOIN runs r ON r.id = "
                    "x.run_id" +
                    w + " ORDER BY r.started_at DESC, r.id DESC";
  if (filter.limit) sql += " LIMIT " + std::to_string(filter.limit);
  Statement s(db_, path_, sql);
  for (std::size_t i = 0; i < values.size(); ++i) s.bind(static_cast<int>(i + 1), values[i]);
  std::vector<KeyPoint> out;
  while (s.step()) {
    KeyPoint p;
    p.run = read_row(s);
    p.value = s.real(12);
    p.unit = s.text(13);
    p.status = s.text(14);
    p.cv = s.real(15);
    out.push_back(std::move(p));
  }
  std::reverse(out.begin(), out.end());  // oldest first: a trend reads left to right
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
