// tests/unit/test_cancel_loops.cpp: every long loop over a user's files ends on Ctrl-C
// (core/cancel) with gb::Cancelled, which the CLI turns into exit 130: the header walk of a tar
// shard, the shards of a WebDataset, a gzip stream being inflated, fleet merge's folder walk and
// its reading threads, and the history's first import of the saved runs (rolled back whole, so
// the next use imports them all). Fleet merge's walk also takes each folder once, so link loops
// neither hang it nor count a run twice.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/cancel.hpp"
#include "core/json.hpp"
#include "core/mapped_file.hpp"
#include "data/gzip.hpp"
#include "data/tar.hpp"
#include "data/webdataset.hpp"
#include "fleet/merge.hpp"
#include "store/history.hpp"
#include "test_data_util.hpp"

namespace gb {
namespace {

namespace fs = std::filesystem;

// A Ctrl-C for the scope of a test, cleared however the test ends.
class CancelledLoops : public ::testing::Test {
 protected:
  void SetUp() override { reset_cancel(); }
  void TearDown() override { reset_cancel(); }
};

void write_tar(const fs::path& path, int members) {
  data::TarWriter w(path);
  for (int i = 0; i < members; ++i)
    w.add("s/" + std::to_string(i) + ".cls", test::bytes_of(std::to_string(i % 3)));
  w.finish();
}

std::vector<std::uint8_t> slurp(const fs::path& p) {
  std::vector<std::uint8_t> b;
  read_whole_file(p, b);
  return b;
}

TEST_F(CancelledLoops, ATarShardsHeaderWalkEndsAtCtrlC) {
  test::TempDir dir;
  write_tar(dir / "a.tar", 50);
  const std::vector<std::uint8_t> bytes = slurp(dir / "a.tar");
  EXPECT_EQ(data::index_tar(bytes).members.size(), 50u);
  request_cancel();
  EXPECT_THROW(data::index_tar(bytes), Cancelled);
}

TEST_F(CancelledLoops, OpeningWebDatasetShardsEndsAtCtrlC) {
  test::TempDir dir;
  write_tar(dir / "s0.tar", 4);
  write_tar(dir / "s1.tar", 4);
  request_cancel();
  EXPECT_THROW(data::WebDataset::open_dir(dir.path()), Cancelled);
}

TEST_F(CancelledLoops, InflatingAGzipStreamEndsAtCtrlC) {
  if (!data::gzip_supported()) GTEST_SKIP() << "built without zlib";
  // "hello hello hello", gzip -n.
  const std::vector<std::uint8_t> gz = {0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03,
                                        0xcb, 0x48, 0xcd, 0xc9, 0xc9, 0x57, 0xc8, 0x40, 0x90, 0x00,
                                        0x80, 0x88, 0xf9, 0xe5, 0x11, 0x00, 0x00, 0x00};
  EXPECT_EQ(data::gunzip(gz, "t.gz", 17, data::GunzipLimit::fail).size(), 17u);
  request_cancel();
  EXPECT_THROW(data::gunzip(gz, "t.gz", 17, data::GunzipLimit::fail), Cancelled);
}

void write_run_file(const fs::path& path, int n) {
  Run run;
  run.tool_version = "0.1.0";
  run.command = "probe";
  run.started_at = "2026-12-01T10:00:0" + std::to_string(n % 10) + "Z";
  run.environment = {{"gpu.name", "GPU", "NVIDIA H200"},
                     {"gpu.uuid", "UUID", "GPU-" + std::to_string(n)}};
  run.results.push_back(
      Result::measured("probe.gemm.bf16.tflops", "BF16 GEMM", "TFLOP/s", {790.0}));
  fs::create_directories(path.parent_path());
  std::ofstream(path) << to_json(run).dump();
}

TEST_F(CancelledLoops, FleetMergeWalksEachFolderOnceThroughLinkLoops) {
  test::TempDir dir;
  write_run_file(dir / "runs" / "a" / "one.json", 1);
  write_run_file(dir / "runs" / "b" / "two.json", 2);
  // Two loops: walked blindly, the tree is endless (2^depth paths until ELOOP).
  fs::create_directory_symlink("..", dir / "runs" / "a" / "up");
  fs::create_directory_symlink("../a", dir / "runs" / "b" / "to_a");
  const std::vector<fs::path> files = fleet::collect_run_files({(dir / "runs").string()});
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].filename(), "one.json");
  EXPECT_EQ(files[1].filename(), "two.json");
}

TEST_F(CancelledLoops, FleetMergesWalkAndReadingEndAtCtrlC) {
  test::TempDir dir;
  for (int i = 0; i < 8; ++i) write_run_file(dir / "runs" / ("r" + std::to_string(i) + ".json"), i);
  const std::vector<fs::path> files = fleet::collect_run_files({(dir / "runs").string()});
  ASSERT_EQ(files.size(), 8u);
  request_cancel();
  EXPECT_THROW(fleet::collect_run_files({(dir / "runs").string()}), Cancelled);
  EXPECT_THROW(fleet::merge_files(files, {}), Cancelled);
}

TEST_F(CancelledLoops, TheHistorysFirstImportEndsAtCtrlCAndIsRolledBackWhole) {
  test::TempDir dir;
  for (int i = 0; i < 3; ++i)
    write_run_file(dir / "runs" / ("probe-" + std::to_string(i) + ".json"), i);
  request_cancel();
  EXPECT_THROW(store::History::open(dir.path()), Cancelled);
  reset_cancel();
  EXPECT_EQ(store::History::open(dir.path()).imported(), 3u) << "nothing was half-imported";
}

}  // namespace
}  // namespace gb
