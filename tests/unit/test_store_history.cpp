// tests/unit/test_store_history.cpp: the run history (store/history) and compare
// (diagnose/compare, `gpubase compare`): runs saved before the index existed are imported on
// first use; filters and a key's trend; the previous run of the same GPU and command; a locked,
// damaged or newer database is a clear error and every run file stays; a change is a regression
// only beyond both runs' spread and the key's threshold, and `compare` exits 1 on one. The
// index follows the folder incrementally: an unchanged folder is not listed, a new file is
// read, a removed one leaves the index, a changed one is read again, a file still being written
// is read again later, and a schema 1 index is brought up to date without reading any file.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "cli/output.hpp"
#include "core/error.hpp"
#include "core/json.hpp"
#include "diagnose/compare.hpp"
#include "store/history.hpp"
#include "test_cli_util.hpp"

namespace fs = std::filesystem;

namespace {

gb::Run probe_run(const std::string& started_at, const std::string& uuid, double tflops,
                  double spread = 2) {
  gb::Run run;
  run.tool_version = "0.1.0";
  run.command = "probe";
  run.started_at = started_at;
  run.environment = {{"gpu.name", "GPU", "NVIDIA H200"},
                     {"gpu.uuid", "UUID", uuid},
                     {"driver.version", "driver", "580.95.05"},
                     {"run.host", "host", "node07"}};
  run.results.push_back(gb::Result::measured("probe.gemm.bf16.tflops", "BF16 GEMM", "TFLOP/s",
                                             {tflops - spread / 2, tflops, tflops + spread / 2}));
  run.results.push_back(
      gb::Result::measured("probe.latency.launch_e2e.us", "launch", "µs", {8.5, 8.6, 8.7}, false));
  return run;
}

class History : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gb_history_" + std::string(testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "runs");
    ::setenv("GPUBASE_HOME", dir_.c_str(), 1);
  }
  void TearDown() override {
    ::unsetenv("GPUBASE_HOME");
    fs::remove_all(dir_);
  }
  void write(const gb::Run& run, const std::string& name) {
    std::ofstream(dir_ / "runs" / name) << gb::to_json(run).dump();
  }
  // Replaced as editors and careful writers do: a new file renamed over the old name.
  void replace(const gb::Run& run, const std::string& name) {
    std::ofstream(dir_ / "runs" / (name + ".tmp")) << gb::to_json(run).dump();
    fs::rename(dir_ / "runs" / (name + ".tmp"), dir_ / "runs" / name);
  }
  // Dates the folder and its files an hour back: stamps older than the file system's clock tick,
  // so the index trusts them (a stamp from the last seconds is checked again at the next open).
  void age() {
    const auto old = fs::file_time_type::clock::now() - std::chrono::hours(1);
    for (const auto& e : fs::directory_iterator(dir_ / "runs")) fs::last_write_time(e.path(), old);
    fs::last_write_time(dir_ / "runs", old);
  }
  double bf16(const gb::store::History& h, const std::string& file) {
    for (const auto& p : h.trend("probe.gemm.bf16.tflops", {}))
      if (p.run.file == file) return p.value.value_or(-1);
    return -1;
  }
  fs::path dir_;
};

}  // namespace

TEST_F(History, RunsSavedBeforeTheIndexExistedAreImportedOnFirstUse) {
  write(probe_run("2026-12-01T10:00:00Z", "GPU-a", 790), "probe-1.json");
  write(probe_run("2026-12-02T10:00:00Z", "GPU-a", 792), "probe-2.json");
  std::ofstream(dir_ / "runs" / "notes.json") << "{\"not\": \"a run\"}";
  {
    const auto h = gb::store::History::open(dir_);
    EXPECT_EQ(h.imported(), 2u);
    const auto rows = h.runs({});
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0].file, "probe-2.json") << "newest first";
    EXPECT_EQ(rows[0].gpu_uuid, "GPU-a");
    EXPECT_EQ(rows[0].host, "node07");
    EXPECT_EQ(rows[0].driver, "580.95.05");
    EXPECT_EQ(rows[0].results, 2);
  }
  write(probe_run("2026-12-03T10:00:00Z", "GPU-b", 700), "probe-3.json");
  const auto again = gb::store::History::open(dir_);
  EXPECT_EQ(again.imported(), 1u) << "only the new file";
  EXPECT_EQ(again.runs({}).size(), 3u);
}

TEST_F(History, FiltersAndAKeysTrendOldestFirst) {
  write(probe_run("2026-12-01T10:00:00Z", "GPU-a", 790), "probe-1.json");
  write(probe_run("2026-12-02T10:00:00Z", "GPU-b", 650), "probe-2.json");
  write(probe_run("2026-12-03T10:00:00Z", "GPU-a", 795), "probe-3.json");
  const auto h = gb::store::History::open(dir_);
  gb::store::RunFilter f;
  f.gpu_uuid = "GPU-a";
  const auto trend = h.trend("probe.gemm.bf16.tflops", f);
  ASSERT_EQ(trend.size(), 2u);
  EXPECT_EQ(*trend[0].value, 790);
  EXPECT_EQ(*trend[1].value, 795);
  EXPECT_EQ(trend[1].unit, "TFLOP/s");
  ASSERT_TRUE(trend[1].cv.has_value());
  f = {};
  f.since = "2026-12-02";
  EXPECT_EQ(h.runs(f).size(), 2u);
  f = {};
  f.host = "node99";
  EXPECT_TRUE(h.runs(f).empty());
}

TEST_F(History, ThePreviousRunIsOfTheSameGpuAndCommand) {
  write(probe_run("2026-12-01T10:00:00Z", "GPU-a", 790), "probe-1.json");
  write(probe_run("2026-12-02T10:00:00Z", "GPU-b", 650), "probe-2.json");
  write(probe_run("2026-12-03T10:00:00Z", "GPU-a", 795), "probe-3.json");
  const auto h = gb::store::History::open(dir_);
  const auto newest = h.newest({});
  ASSERT_TRUE(newest);
  EXPECT_EQ(newest->file, "probe-3.json");
  const auto prev = h.previous_of(*newest);
  ASSERT_TRUE(prev);
  EXPECT_EQ(prev->file, "probe-1.json");
  EXPECT_FALSE(h.previous_of(*prev));
}

TEST_F(History, ANewerSchemaIsRefusedAndNoRunIsLost) {
  write(probe_run("2026-12-01T10:00:00Z", "GPU-a", 790), "probe-1.json");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ / "history.sqlite").c_str(), &db), SQLITE_OK);
  sqlite3_exec(db, "PRAGMA user_version = 99", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  try {
    gb::store::History::open(dir_);
    FAIL() << "a newer database was opened";
  } catch (const gb::Error& e) {
    EXPECT_NE(std::string(e.what()).find("newer gpubase (schema 99"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::exists(dir_ / "runs" / "probe-1.json"));
}

TEST_F(History, ADamagedDatabaseSaysSoAndNoRunIsLost) {
  write(probe_run("2026-12-01T10:00:00Z", "GPU-a", 790), "probe-1.json");
  std::ofstream(dir_ / "history.sqlite") << std::string(8192, 'x');
  try {
    gb::store::History::open(dir_);
    FAIL() << "a damaged database was opened";
  } catch (const gb::Error& e) {
    EXPECT_NE(std::string(e.what()).find("is damaged"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("untouched"), std::string::npos);
  }
  EXPECT_TRUE(fs::exists(dir_ / "runs" / "probe-1.json"));
  // Moved away, it is rebuilt from the run files.
  fs::rename(dir_ / "history.sqlite", dir_ / "history.damaged");
  EXPECT_EQ(gb::store::History::open(dir_).imported(), 1u);
}

TEST_F(History, ALockedDatabaseIsAnErrorNotAWait) {
  gb::store::History::open(dir_);
  write(probe_run("2026-12-01T10:00:00Z", "GPU-a", 790), "probe-1.json");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ / "history.sqlite").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  try {
    gb::store::History::open(dir_, /*busy_timeout_ms=*/100);
    ADD_FAILURE() << "a locked database was written";
  } catch (const gb::Error& e) {
    EXPECT_NE(std::string(e.what()).find("is locked"), std::string::npos) << e.what();
  }
  sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  EXPECT_TRUE(fs::exists(dir_ / "runs" / "probe-1.json"));
  EXPECT_EQ(gb::store::History::open(dir_).imported(), 1u) << "indexed once the lock is gone";
}

TEST_F(History, ASavedRunIsIndexed) {
  const fs::path saved = gb::cli::save_run(probe_run("2026-12-01T10:00:00Z", "GPU-a", 790));
  const auto h = gb::store::History::open(dir_);
  EXPECT_EQ(h.imported(), 0u);
  const auto rows = h.runs({});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].file, saved.filename().string());
}

TEST(Compare, ARegressionMustExceedBothSpreadsAndTheThreshold) {
  const gb::Run before = probe_run("2026-12-01T10:00:00Z", "GPU-a", 800, 4);
  auto verdict = [&](double after, double spread) {
    const auto c = gb::diagnose::compare_runs(before, probe_run("2026-12-02T10:00:00Z", "GPU-a", after, spread));
    return c.keys.front().verdict;
  };
  EXPECT_EQ(verdict(700, 4), gb::Change::regression);      // -12.5 %
  EXPECT_EQ(verdict(797, 4), gb::Change::within_noise);    // inside 4
  EXPECT_EQ(verdict(780, 4), gb::Change::small);           // -2.5 %: under probe.gemm's 3 %
  EXPECT_EQ(verdict(700, 120), gb::Change::within_noise);  // the newer run is that noisy
  EXPECT_EQ(verdict(900, 4), gb::Change::improvement);
}

TEST(Compare, LowerIsBetterForLatencies) {
  gb::Run before = probe_run("2026-12-01T10:00:00Z", "GPU-a", 800);
  gb::Run after = before;
  after.results[1] = gb::Result::measured("probe.latency.launch_e2e.us", "launch", "µs",
                                          {11.0, 11.1, 11.2}, false);
  const auto c = gb::diagnose::compare_runs(before, after);
  EXPECT_EQ(c.keys[1].verdict, gb::Change::regression);
  EXPECT_EQ(c.regressions, 1);
}

TEST_F(History, CompareExitsOneOnARegressionAndLastFindsThePreviousRun) {
  write(probe_run("2026-12-01T10:00:00Z", "GPU-a", 800), "probe-1.json");
  write(probe_run("2026-12-02T10:00:00Z", "GPU-a", 801), "probe-2.json");
  testing::internal::CaptureStdout();
  EXPECT_EQ(gb::test::run_gpubase({"compare", "probe-1.json", "probe-2.json"}).code, 0);
  EXPECT_NE(testing::internal::GetCapturedStdout().find("within noise"), std::string::npos);
  write(probe_run("2026-12-03T10:00:00Z", "GPU-a", 650), "probe-3.json");
  testing::internal::CaptureStdout();
  const auto o = gb::test::run_gpubase({"compare", "--last"});
  const std::string out = testing::internal::GetCapturedStdout();
  EXPECT_EQ(o.code, 1) << o.err;
  EXPECT_NE(out.find("probe-2.json"), std::string::npos) << out;
  EXPECT_NE(out.find("REGRESSION"), std::string::npos) << out;
}

TEST_F(History, AnUnchangedFolderIsNotListedAgain) {
  write(probe_run("2026-12-01T10:00:00Z", "GPU-a", 790), "probe-1.json");
  write(probe_run("2026-12-02T10:00:00Z", "GPU-a", 792), "probe-2.json");
  age();
  const auto first = gb::store::History::open(dir_);
  EXPECT_EQ(first.imported(), 2u);
  EXPECT_EQ(first.listed(), 2u);
  const auto again = gb::store::History::open(dir_);
  EXPECT_EQ(again.listed(), 0u) << "the folder's stamp is the one stored";
  EXPECT_EQ(again.imported(), 0u);
  EXPECT_EQ(again.runs({}).size(), 2u);
}

TEST_F(History, ANewFileIsReadAndOnlyIt) {
  write(probe_run("2026-12-01T10:00:00Z", "GPU-a", 790), "probe-1.json");
  age();
  gb::store::History::open(dir_);
  write(probe_run("2026-12-02T10:00:00Z", "GPU-a", 792), "probe-2.json");
  const auto h = gb::store::History::open(dir_);
  EXPECT_EQ(h.listed(), 2u);
  EXPECT_EQ(h.imported(), 1u) << "probe-1.json is unchanged and not read again";
  EXPECT_EQ(h.runs({}).size(), 2u);
}

TEST_F(History, ARemovedFileLeavesTheIndex) {
  write(probe_run("2026-12-01T10:00:00Z", "GPU-a", 790), "probe-1.json");
  write(probe_run("2026-12-02T10:00:00Z", "GPU-a", 792), "probe-2.json");
  age();
  gb::store::History::open(dir_);
  fs::remove(dir_ / "runs" / "probe-2.json");
  const auto h = gb::store::History::open(dir_);
  EXPECT_EQ(h.removed(), 1u);
  EXPECT_EQ(h.imported(), 0u);
  const auto rows = h.runs({});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].file, "probe-1.json");
  EXPECT_EQ(h.trend("probe.gemm.bf16.tflops", {}).size(), 1u) << "its results went with it";
  ASSERT_TRUE(h.newest({}));
  EXPECT_FALSE(h.previous_of(*h.newest({})));
}

TEST_F(History, AChangedFileIsReadAgain) {
  write(probe_run("2026-12-01T10:00:00Z", "GPU-a", 790), "probe-1.json");
  write(probe_run("2026-12-02T10:00:00Z", "GPU-a", 792), "probe-2.json");
  age();
  EXPECT_EQ(bf16(gb::store::History::open(dir_), "probe-2.json"), 792);
  replace(probe_run("2026-12-02T10:00:00Z", "GPU-b", 650), "probe-2.json");
  const auto h = gb::store::History::open(dir_);
  EXPECT_EQ(h.imported(), 1u);
  EXPECT_EQ(bf16(h, "probe-2.json"), 650);
  EXPECT_EQ(h.runs({}).size(), 2u) << "replaced, not added";
  EXPECT_EQ(h.trend("probe.gemm.bf16.tflops", {}).size(), 2u);
  gb::store::RunFilter f;
  f.gpu_uuid = "GPU-b";
  EXPECT_EQ(h.runs(f).size(), 1u);
}

TEST_F(History, AFileStillBeingWrittenIsReadAgainLater) {
  // Seen between its creation and the end of its write: not a run yet. Its stamp is seconds
  // old, so the next open lists the folder and reads it again, though no name was added.
  const std::string text = gb::to_json(probe_run("2026-12-01T10:00:00Z", "GPU-a", 790)).dump();
  std::ofstream(dir_ / "runs" / "probe-1.json") << text.substr(0, text.size() / 2);
  EXPECT_EQ(gb::store::History::open(dir_).imported(), 0u);
  std::ofstream(dir_ / "runs" / "probe-1.json") << text;
  const auto h = gb::store::History::open(dir_);
  EXPECT_EQ(h.imported(), 1u);
  EXPECT_EQ(h.runs({}).size(), 1u);
}

TEST_F(History, ASchemaOneIndexIsBroughtUpToDateWithoutReadingAFile) {
  write(probe_run("2026-12-01T10:00:00Z", "GPU-a", 790), "probe-1.json");
  write(probe_run("2026-12-02T10:00:00Z", "GPU-a", 792), "probe-2.json");
  age();
  gb::store::History::open(dir_);
  // What schema 1 had: runs and results, no record of the folder.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ / "history.sqlite").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "DROP TABLE files; DROP TABLE folder; DROP INDEX results_by_run; "
                         "PRAGMA user_version = 1",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  const auto h = gb::store::History::open(dir_);
  EXPECT_EQ(h.listed(), 2u);
  EXPECT_EQ(h.imported(), 0u) << "the indexed runs are taken as they are";
  EXPECT_EQ(h.runs({}).size(), 2u);
  EXPECT_EQ(gb::store::History::open(dir_).listed(), 0u);
}
