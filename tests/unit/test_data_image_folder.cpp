// test_data_image_folder.cpp: the ImageFolder scan on small generated trees: sorted classes as
// labels (as torchvision), JPEGs recognised by their SOI marker, bad entries skipped and counted
// or (strict) an error naming the file, and reads returning the files' bytes.
#include <gtest/gtest.h>
#include <unistd.h>

#include "core/error.hpp"
#include "data/image_folder.hpp"
#include "test_data_util.hpp"

namespace gb::data {
namespace {

namespace fs = std::filesystem;

// root/cat/{a,b}.jpg, root/dog/c.JPEG + sub/d.jpg, root/empty/, root/zebra/not_really.jpg (PNG).
void make_tree(const fs::path& root) {
  test::write_bytes(root / "cat" / "a.jpg", test::small_jpeg(16, 8, 1));
  test::write_bytes(root / "cat" / "b.jpg", test::small_jpeg(8, 16, 2));
  test::write_bytes(root / "dog" / "c.JPEG", test::small_jpeg(8, 8, 3));
  test::write_bytes(root / "dog" / "sub" / "d.jpg", test::small_jpeg(8, 8, 4));
  fs::create_directories(root / "empty");
  test::write_bytes(root / "zebra" / "not_really.jpg",
                    {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'});
}

TEST(ImageFolder, LabelsAreSortedClassDirectoriesLikeTorchvision) {
  test::TempDir dir;
  make_tree(dir.path());
  const auto ds = ImageFolderDataset::open(dir.path());
  EXPECT_EQ(ds->class_names(), (std::vector<std::string>{"cat", "dog", "empty", "zebra"}));
  ASSERT_EQ(ds->size(), 4u);
  EXPECT_EQ(ds->path(0), dir / "cat/a.jpg");
  EXPECT_EQ(ds->path(3), dir / "dog/sub/d.jpg");
  EXPECT_EQ(ds->label(0), 0);
  EXPECT_EQ(ds->label(1), 0);
  EXPECT_EQ(ds->label(2), 1);
  EXPECT_EQ(ds->label(3), 1);
}

TEST(ImageFolder, CountsEmptyClassesAndNonJpegsButKeepsTheirLabels) {
  test::TempDir dir;
  make_tree(dir.path());
  const auto ds = ImageFolderDataset::open(dir.path());
  const ScanReport& scan = ds->scan_report();
  EXPECT_EQ(scan.empty_class_dirs, 2u);  // "empty", and "zebra" whose only file is a PNG
  EXPECT_EQ(scan.not_jpeg, 1u);
  EXPECT_EQ(scan.unreadable, 0u);
  EXPECT_EQ(scan.skipped(), 1u);
  ASSERT_EQ(scan.examples.size(), 3u);
  EXPECT_NE(scan.examples[0].find("empty: empty class directory"), std::string::npos);
  EXPECT_NE(scan.examples[1].find("not_really.jpg: not a JPEG"), std::string::npos);
  EXPECT_NE(scan.examples[2].find("zebra: empty class directory"), std::string::npos);
}

TEST(ImageFolder, RecognisesJpegsByContentNotExtension) {
  test::TempDir dir;
  test::write_bytes(dir / "a" / "photo.bin", test::small_jpeg(8, 8, 1));
  test::write_bytes(dir / "a" / "notes.jpg", test::bytes_of("hello"));
  const auto ds = ImageFolderDataset::open(dir.path());
  ASSERT_EQ(ds->size(), 1u);
  EXPECT_EQ(ds->path(0).filename(), "photo.bin");
  EXPECT_EQ(ds->scan_report().not_jpeg, 1u);
}

TEST(ImageFolder, ReadReturnsTheFileBytesInScratch) {
  test::TempDir dir;
  const std::vector<std::uint8_t> jpeg = test::small_jpeg(16, 8, 7);
  test::write_bytes(dir / "x" / "a.jpg", jpeg);
  const auto ds = ImageFolderDataset::open(dir.path());
  std::vector<std::uint8_t> scratch;
  const Sample s = ds->read(0, scratch);
  EXPECT_EQ(std::vector<std::uint8_t>(s.bytes.begin(), s.bytes.end()), jpeg);
  EXPECT_EQ(s.bytes.data(), scratch.data());
  EXPECT_EQ(ds->file_bytes(0), jpeg.size());
}

TEST(ImageFolder, ATruncatedJpegPassesTheScanForTheDecoderToCatch) {
  test::TempDir dir;
  std::vector<std::uint8_t> jpeg = test::small_jpeg(32, 32, 5);
  jpeg.resize(jpeg.size() / 2);
  test::write_bytes(dir / "x" / "cut.jpg", jpeg);
  const auto ds = ImageFolderDataset::open(dir.path());
  EXPECT_EQ(ds->size(), 1u);
  EXPECT_EQ(ds->scan_report().skipped(), 0u);
}

TEST(ImageFolder, CountsADanglingLinkAsUnreadable) {
  test::TempDir dir;
  test::write_bytes(dir / "x" / "a.jpg", test::small_jpeg(8, 8, 1));
  fs::create_symlink(dir / "nowhere.jpg", dir / "x" / "b.jpg");
  const auto ds = ImageFolderDataset::open(dir.path());
  EXPECT_EQ(ds->size(), 1u);
  EXPECT_EQ(ds->scan_report().unreadable, 1u);
  EXPECT_NE(ds->scan_report().examples.at(0).find("b.jpg: unreadable"), std::string::npos);
}

TEST(ImageFolder, CountsAFileWithoutReadPermissionAsUnreadable) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads files whatever their mode";
  test::TempDir dir;
  test::write_bytes(dir / "x" / "a.jpg", test::small_jpeg(8, 8, 1));
  test::write_bytes(dir / "x" / "b.jpg", test::small_jpeg(8, 8, 2));
  fs::permissions(dir / "x" / "b.jpg", fs::perms::none);
  const auto ds = ImageFolderDataset::open(dir.path());
  EXPECT_EQ(ds->size(), 1u);
  EXPECT_EQ(ds->scan_report().unreadable, 1u);
}

TEST(ImageFolder, StrictFailsNamingTheFirstBadFile) {
  test::TempDir dir;
  test::write_bytes(dir / "a" / "good.jpg", test::small_jpeg(8, 8, 1));
  test::write_bytes(dir / "b" / "bad.jpg", test::bytes_of("GIF89a"));
  try {
    ImageFolderDataset::open(dir.path(), {.strict = true});
    FAIL() << "strict open accepted a non-JPEG";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
    EXPECT_NE(std::string(e.what()).find((dir / "b" / "bad.jpg").string() + ": not a JPEG"),
              std::string::npos)
        << e.what();
  }
}

TEST(ImageFolder, StrictFailsOnAnEmptyClassDirectory) {
  test::TempDir dir;
  test::write_bytes(dir / "a" / "good.jpg", test::small_jpeg(8, 8, 1));
  fs::create_directories(dir / "b");
  EXPECT_THROW(ImageFolderDataset::open(dir.path(), {.strict = true}), Error);
}

TEST(ImageFolder, IgnoresHiddenEntries) {
  test::TempDir dir;
  test::write_bytes(dir / "a" / "good.jpg", test::small_jpeg(8, 8, 1));
  test::write_bytes(dir / "a" / ".DS_Store", test::bytes_of("junk"));
  test::write_bytes(dir / ".ipynb_checkpoints" / "x.jpg", test::small_jpeg(8, 8, 2));
  const auto ds = ImageFolderDataset::open(dir.path());
  EXPECT_EQ(ds->class_names(), std::vector<std::string>{"a"});
  EXPECT_EQ(ds->size(), 1u);
  EXPECT_EQ(ds->scan_report().skipped(), 0u);
}

TEST(ImageFolder, RejectsARootWithoutClassDirectories) {
  test::TempDir dir;
  test::write_bytes(dir / "a.jpg", test::small_jpeg(8, 8, 1));
  EXPECT_THROW(ImageFolderDataset::open(dir.path()), Error);
  EXPECT_THROW(ImageFolderDataset::open(dir / "missing"), Error);
}

TEST(ImageFolder, WriteThenReadGivesTheSameSamples) {
  test::TempDir src, dst;
  make_tree(src.path());
  const auto a = ImageFolderDataset::open(src.path());
  write_image_folder(*a, dst.path());
  const auto b = ImageFolderDataset::open(dst.path());
  ASSERT_EQ(b->size(), a->size());
  EXPECT_EQ(b->class_names(), a->class_names());
  std::vector<std::uint8_t> sa, sb;
  for (std::size_t i = 0; i < a->size(); ++i) {
    const Sample x = a->read(i, sa);
    const Sample y = b->read(i, sb);
    EXPECT_EQ(x.label, y.label);
    EXPECT_TRUE(std::equal(x.bytes.begin(), x.bytes.end(), y.bytes.begin(), y.bytes.end()));
  }
}


TEST(ImageFolder, ALinkLoopIsWalkedOnceAndTheScanEnds) {
  test::TempDir dir;
  make_tree(dir.path());
  // cat/up -> the root (a loop through every class), dog/again -> dog itself, and a class that
  // is a link to another class.
  fs::create_directory_symlink(dir.path(), dir / "cat" / "up");
  fs::create_directory_symlink(dir / "dog", dir / "dog" / "again");
  fs::create_directory_symlink(dir / "cat", dir / "lion");
  const auto ds = ImageFolderDataset::open(dir.path());
  // The four images once each, with their own labels; nothing read again through a link.
  ASSERT_EQ(ds->size(), 4u);
  EXPECT_EQ(ds->path(0), dir / "cat/a.jpg");
  EXPECT_EQ(ds->path(3), dir / "dog/sub/d.jpg");
  EXPECT_EQ(ds->label(3), 1);
  EXPECT_GE(ds->scan_report().ignored, 3u);
}
}  // namespace
}  // namespace gb::data
