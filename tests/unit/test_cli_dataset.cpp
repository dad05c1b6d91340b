// tests/unit/test_cli_dataset.cpp: `gpubase dataset` end to end, through the same parse-and-run
// path as the binary (cli::run_dataset_args), on a 12-image, 3-class synthetic set made once in
// a temporary directory: synth, info, pack, verify (and a corrupted pack), export round trips,
// refusals to overwrite, Ctrl-C during pack and export, and IDX info on Debian's
// Fashion-MNIST files.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "cli/dataset_cmd.hpp"
#include "core/cancel.hpp"
#include "core/json.hpp"
#include "data/gzip.hpp"
#include "data/open.hpp"
#include "test_data_util.hpp"

namespace gb {
namespace {

namespace fs = std::filesystem;

struct CommandResult {
  int code = -1;
  std::string out, err;
  Json json() const { return Json::parse(out); }
};

// Runs `gpubase dataset ARGS...` in process, with stdout and stderr captured.
CommandResult dataset(std::vector<std::string> args) {
  char* out_buf = nullptr;
  char* err_buf = nullptr;
  std::size_t out_len = 0, err_len = 0;
  std::FILE* out = open_memstream(&out_buf, &out_len);
  std::FILE* err = open_memstream(&err_buf, &err_len);
  CommandResult r;
  r.code = cli::run_dataset_args(args, out, err);
  std::fclose(out);
  std::fclose(err);
  r.out.assign(out_buf, out_len);
  r.err.assign(err_buf, err_len);
  std::free(out_buf);
  std::free(err_buf);
  return r;
}

std::uint64_t load_u64(const std::vector<char>& b, std::size_t at) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[at + i]);
  return v;
}

// One synthetic set for the whole suite: 12 small images (scale 0.2), 3 classes.
class DatasetCommand : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir;
    synth_ = new CommandResult(
        dataset({"synth", "--out", set().string(), "--images", "12", "--classes", "3", "--scale",
                 "0.2", "--threads", "2", "--seed", "7", "--json"}));
  }
  static void TearDownTestSuite() {
    delete synth_;
    delete dir_;
  }
  void TearDown() override { reset_cancel(); }

  static fs::path set() { return dir_->path() / "set"; }
  static fs::path tmp(const std::string& name) { return dir_->path() / name; }

  // Packs the synthetic set into a fresh file named `name`.
  static fs::path packed(const std::string& name) {
    const fs::path file = tmp(name);
    const CommandResult r =
        dataset({"pack", "--data", set().string(), "--out", file.string(), "-q"});
    EXPECT_EQ(r.code, 0) << r.err;
    return file;
  }

  static test::TempDir* dir_;
  static CommandResult* synth_;
};

test::TempDir* DatasetCommand::dir_ = nullptr;
CommandResult* DatasetCommand::synth_ = nullptr;

TEST_F(DatasetCommand, SynthReportsSizesAsJson) {
  ASSERT_EQ(synth_->code, 0) << synth_->err;
  const Json j = synth_->json();
  EXPECT_EQ(j["command"], "dataset synth");
  EXPECT_EQ(j["images"], 12);
  EXPECT_EQ(j["classes"], 3);
  EXPECT_LE(j["p10_bytes"].get<std::uint64_t>(), j["median_bytes"].get<std::uint64_t>());
  EXPECT_LE(j["median_bytes"].get<std::uint64_t>(), j["p90_bytes"].get<std::uint64_t>());
  EXPECT_GT(j["mean_width"].get<double>(), 0);
  EXPECT_TRUE(fs::is_directory(set() / "class_0002"));
}

TEST_F(DatasetCommand, SynthPrintsProgressOnStderrUnlessQuiet) {
  EXPECT_NE(synth_->err.find("synth: 100 %"), std::string::npos) << synth_->err;
  const CommandResult quiet = dataset({"synth", "--out", tmp("quiet").string(), "--images", "2",
                                       "--classes", "1", "--scale", "0.1", "-q"});
  ASSERT_EQ(quiet.code, 0) << quiet.err;
  EXPECT_EQ(quiet.err, "");
  EXPECT_NE(quiet.out.find("wrote     2 images in 1 classes"), std::string::npos) << quiet.out;
  EXPECT_NE(quiet.out.find("images/s"), std::string::npos) << quiet.out;
}

TEST_F(DatasetCommand, InfoDescribesTheImageFolder) {
  const CommandResult r = dataset({"info", set().string(), "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const Json j = r.json();
  EXPECT_EQ(j["kind"], "image_folder");
  EXPECT_EQ(j["samples"], 12);
  EXPECT_EQ(j["classes"], 3);
  EXPECT_EQ(j["class_names"][0], "class_0000");
  EXPECT_EQ(j["samples_per_class"]["min"], 4);
  EXPECT_EQ(j["format"], "jpeg");
  EXPECT_TRUE(j["shape"].is_null());
  EXPECT_EQ(j["total_bytes"], synth_->json()["total_bytes"]);
  EXPECT_EQ(j["scan"]["skipped"], 0);
}

TEST_F(DatasetCommand, InfoTextNamesKindClassesAndSkippedFiles) {
  test::TempDir d;
  fs::copy(set(), d / "tree", fs::copy_options::recursive);
  test::write_bytes(d / "tree" / "class_0001" / "notes.txt", test::bytes_of("not an image"));
  const CommandResult r = dataset({"info", (d / "tree").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("kind      image_folder (ImageFolder tree)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("samples   12"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("classes   3: class_0000, class_0001, class_0002 (4 samples each)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("scan      1 sample skipped (1 not a JPEG)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("notes.txt"), std::string::npos) << r.out;
}

TEST_F(DatasetCommand, PackThenVerifyIsOk) {
  const fs::path file = tmp("ok.gbpack");
  const CommandResult pack =
      dataset({"pack", "--data", set().string(), "--out", file.string(), "--json"});
  ASSERT_EQ(pack.code, 0) << pack.err;
  EXPECT_EQ(pack.json()["samples"], 12);
  EXPECT_EQ(pack.json()["file_bytes"], fs::file_size(file));
  EXPECT_FALSE(fs::exists(file.string() + ".tmp"));

  const CommandResult verify = dataset({"verify", file.string()});
  EXPECT_EQ(verify.code, 0) << verify.err;
  EXPECT_EQ(verify.out.rfind("ok: 12 samples", 0), 0u) << verify.out;
}

// Flips one byte inside sample 5's payload (its CRC no longer matches).
void damage_sample5(const fs::path& file) {
  std::vector<char> b(fs::file_size(file));
  std::ifstream(file, std::ios::binary).read(b.data(), static_cast<std::streamsize>(b.size()));
  // Header: index offset at byte 64, payload offset at byte 80; entry i: its offset first.
  const std::uint64_t entry5 = load_u64(b, load_u64(b, 64) + 5 * 24);
  const std::uint64_t at = load_u64(b, 80) + entry5 + 100;
  b[at] = static_cast<char>(b[at] ^ 0x01);
  std::ofstream(file, std::ios::binary).write(b.data(), static_cast<std::streamsize>(b.size()));
}

TEST_F(DatasetCommand, ADamagedPackIsNotRepackedOrExportedIntoACleanCopy) {
  const fs::path file = packed("launder.gbpack");
  damage_sample5(file);
  const CommandResult pack =
      dataset({"pack", "--data", file.string(), "--out", tmp("copy.gbpack").string()});
  EXPECT_EQ(pack.code, 2);
  EXPECT_NE(pack.err.find("launder.gbpack#5: checksum mismatch"), std::string::npos) << pack.err;
  EXPECT_FALSE(fs::exists(tmp("copy.gbpack")));
  const CommandResult exp =
      dataset({"export", "--data", file.string(), "--to-folder", tmp("copy-tree").string()});
  EXPECT_EQ(exp.code, 2);
  EXPECT_NE(exp.err.find("launder.gbpack#5: checksum mismatch"), std::string::npos) << exp.err;
}

TEST_F(DatasetCommand, VerifyFailsNamingTheCorruptSample) {
  const fs::path file = packed("bad.gbpack");
  damage_sample5(file);

  const CommandResult text = dataset({"verify", file.string()});
  EXPECT_EQ(text.code, 1);
  EXPECT_NE(text.out.find("FAIL: 1 of 12 samples do not match their checksum: 5"),
            std::string::npos)
      << text.out;
  const CommandResult json = dataset({"verify", file.string(), "--json"});
  EXPECT_EQ(json.code, 1);
  EXPECT_EQ(json.json()["bad_samples"], Json::array({5}));
  EXPECT_EQ(json.json()["ok"], false);
}

TEST_F(DatasetCommand, VerifyOfAFifoIsAUsageErrorAtOnceNotAHang) {
  // A named pipe with no writer: opening it for reading would block forever.
  const fs::path fifo = tmp("pipe.gbpack");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto t0 = std::chrono::steady_clock::now();
  const CommandResult r = dataset({"verify", fifo.string()});
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("not a regular file"), std::string::npos) << r.err;
}

TEST_F(DatasetCommand, VerifyFailsOnATruncatedPack) {
  const fs::path file = packed("short.gbpack");
  fs::resize_file(file, fs::file_size(file) - 1000);
  const CommandResult r = dataset({"verify", file.string()});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.out.find("FAIL: " + file.string() + ": truncated"), std::string::npos) << r.out;
}

// Every sample of `a` equals `b`'s: same bytes, same label, same order.
void expect_same_samples(const fs::path& a, const fs::path& b) {
  const auto x = data::open_dataset({.path = a});
  const auto y = data::open_dataset({.path = b});
  ASSERT_EQ(x->size(), y->size());
  std::vector<std::uint8_t> sx, sy;
  for (std::size_t i = 0; i < x->size(); ++i) {
    const data::Sample p = x->read(i, sx), q = y->read(i, sy);
    EXPECT_EQ(p.label, q.label) << i;
    EXPECT_TRUE(std::equal(p.bytes.begin(), p.bytes.end(), q.bytes.begin(), q.bytes.end())) << i;
  }
}

TEST_F(DatasetCommand, ExportToShardsAndBackKeepsEverySample) {
  const fs::path pack = packed("export.gbpack");
  const fs::path shards = tmp("shards");
  const CommandResult r = dataset({"export", "--data", pack.string(), "--to-shards",
                                   shards.string(), "--images-per-shard", "5", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.json()["shards"], 3);
  expect_same_samples(pack, shards);

  const CommandResult info = dataset({"info", shards.string()});
  EXPECT_NE(info.out.find("webdataset (3 tar shards)"), std::string::npos) << info.out;
}

TEST_F(DatasetCommand, ExportToFolderAndBackKeepsEverySample) {
  const fs::path pack = packed("folder.gbpack");
  const fs::path tree = tmp("tree");
  const CommandResult r =
      dataset({"export", "--data", pack.string(), "--to-folder", tree.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("exported  12 samples"), std::string::npos) << r.out;
  expect_same_samples(pack, tree);
}

TEST_F(DatasetCommand, ExportNeedsExactlyOneTarget) {
  EXPECT_EQ(dataset({"export", "--data", set().string()}).code, 2);
  EXPECT_EQ(dataset({"export", "--data", set().string(), "--to-folder", tmp("a").string(),
                     "--to-shards", tmp("b").string()})
                .code,
            2);
}

TEST_F(DatasetCommand, MissingPathIsAUsageErrorNamingIt) {
  const std::string missing = tmp("no-such-dir").string();
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"info", missing},
           {"verify", missing},
           {"pack", "--data", missing, "--out", tmp("x.gbpack").string()}}) {
    const CommandResult r = dataset(args);
    EXPECT_EQ(r.code, 2) << args[0];
    EXPECT_NE(r.err.find(missing), std::string::npos) << r.err;
  }
}

TEST_F(DatasetCommand, UnknownFileFormatIsAUsageError) {
  test::TempDir d;
  test::write_bytes(d / "data.bin", test::bytes_of("neither a pack nor a tar"));
  const CommandResult info = dataset({"info", (d / "data.bin").string()});
  EXPECT_EQ(info.code, 2);
  EXPECT_NE(info.err.find("neither a gpubase pack nor a .tar shard"), std::string::npos)
      << info.err;
  const CommandResult verify = dataset({"verify", (d / "data.bin").string()});
  EXPECT_EQ(verify.code, 2) << verify.err;
}

TEST_F(DatasetCommand, RefusesToOverwriteAPackWithoutForce) {
  const fs::path file = packed("twice.gbpack");
  const CommandResult again = dataset({"pack", "--data", set().string(), "--out", file.string()});
  EXPECT_EQ(again.code, 2);
  EXPECT_NE(again.err.find("exists; add --force"), std::string::npos) << again.err;
  const CommandResult forced =
      dataset({"pack", "--data", set().string(), "--out", file.string(), "--force", "-q"});
  EXPECT_EQ(forced.code, 0) << forced.err;
}

TEST_F(DatasetCommand, RefusesToWriteIntoANonEmptyDirectoryWithoutForce) {
  const CommandResult synth = dataset({"synth", "--out", set().string(), "--images", "1"});
  EXPECT_EQ(synth.code, 2);
  EXPECT_NE(synth.err.find("is not empty; add --force"), std::string::npos) << synth.err;
  const CommandResult exp =
      dataset({"export", "--data", set().string(), "--to-folder", set().string(), "--force"});
  EXPECT_EQ(exp.code, 2);
  EXPECT_NE(exp.err.find("is the input itself"), std::string::npos) << exp.err;
}

TEST_F(DatasetCommand, ExportIntoAFolderInsideItsInputIsRefused) {
  const fs::path inside = set() / "copy";
  const CommandResult r =
      dataset({"export", "--data", set().string(), "--to-folder", inside.string(), "--force"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("is inside the input"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(inside));
}

TEST_F(DatasetCommand, CtrlCDuringTheScanOfAFolderStopsBeforeWritingAnything) {
  const fs::path tree = tmp("scan-cut-tree");
  request_cancel();
  const CommandResult r =
      dataset({"export", "--data", set().string(), "--to-folder", tree.string()});
  EXPECT_EQ(r.code, 130);
  EXPECT_FALSE(fs::exists(tree));
}

TEST_F(DatasetCommand, InterruptedPackLeavesNoFile) {
  const fs::path file = tmp("cut.gbpack");
  request_cancel();  // as Ctrl-C does: seen at the first progress report
  const CommandResult r = dataset({"pack", "--data", set().string(), "--out", file.string()});
  EXPECT_EQ(r.code, 130);
  EXPECT_FALSE(fs::exists(file));
  EXPECT_FALSE(fs::exists(file.string() + ".tmp"));
}

TEST_F(DatasetCommand, InterruptedExportRemovesTheDirectoryItCreated) {
  // From a pack: opening it walks no directory, so the Ctrl-C is seen by the export itself (an
  // ImageFolder input stops already in its scan, before anything is written).
  const fs::path pack = packed("cut.gbpack");
  const fs::path tree = tmp("cut-tree");
  request_cancel();
  const CommandResult r =
      dataset({"export", "--data", pack.string(), "--to-folder", tree.string()});
  EXPECT_EQ(r.code, 130);
  EXPECT_FALSE(fs::exists(tree));
  EXPECT_NE(r.err.find("removed the partial output"), std::string::npos) << r.err;
}

class DatasetCommandIdx : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!data::gzip_supported()) GTEST_SKIP() << "built without zlib: the Fashion-MNIST files are .gz";
    if (!fs::exists(fashion() / "t10k-images-idx3-ubyte.gz")) {
      GTEST_SKIP() << test::no_fashion_mnist(fashion());
    }
  }
  static fs::path fashion() { return test::fashion_mnist_dir(); }
};

TEST_F(DatasetCommandIdx, InfoShowsRawShapeOfFashionMnist) {
  const CommandResult r = dataset({"info", fashion().string(), "--split", "t10k"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("kind      idx"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("samples   10000"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("classes   10: 0, 1, 2, 3, 4, ... (1000 samples each)"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("raw uint8 pixels, 28 x 28 x 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(7840000 bytes;"), std::string::npos) << r.out;
}

TEST_F(DatasetCommandIdx, ExportOfRawPixelsIsAUsageError) {
  test::TempDir d;
  const CommandResult r = dataset({"export", "--data", fashion().string(), "--split", "t10k",
                                   "--to-folder", (d / "out").string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("export writes JPEG files only"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(d / "out"));
}

}  // namespace
}  // namespace gb
