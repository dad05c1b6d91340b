// test_data_pack.cpp: the packed format: round trips from every reader (same bytes, labels,
// class names, raw shape), the layout promises (page-aligned payload, aligned samples), CRC-32C,
// and damage found: a flipped payload byte (verify, verify_reads), a flipped index or header
// byte, a truncated file, a file that is not a pack.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/mapped_file.hpp"
#include "data/crc32c.hpp"
#include "data/idx.hpp"
#include "data/image_folder.hpp"
#include "data/open.hpp"
#include "data/pack.hpp"
#include "data/webdataset.hpp"
#include "test_data_util.hpp"

namespace gb::data {
namespace {

namespace fs = std::filesystem;

void expect_same_samples(const Dataset& a, const Dataset& b) {
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(a.class_names(), b.class_names());
  EXPECT_EQ(a.format(), b.format());
  EXPECT_EQ(a.raw_shape(), b.raw_shape());
  std::vector<std::uint8_t> sa, sb;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const Sample x = a.read(i, sa);
    const Sample y = b.read(i, sb);
    EXPECT_EQ(x.label, y.label) << i;
    EXPECT_EQ(b.label(i), x.label) << i;
    EXPECT_TRUE(std::equal(x.bytes.begin(), x.bytes.end(), y.bytes.begin(), y.bytes.end())) << i;
  }
}

void make_image_folder(const fs::path& root) {
  test::write_bytes(root / "bird" / "1.jpg", test::small_jpeg(24, 16, 1));
  test::write_bytes(root / "bird" / "2.jpg", test::small_jpeg(16, 24, 2));
  test::write_bytes(root / "fish" / "3.jpg", test::small_jpeg(40, 8, 3));
}

void flip_byte(const fs::path& p, std::uint64_t offset) {
  std::vector<std::uint8_t> b;
  read_whole_file(p, b);
  b.at(offset) ^= 0x01;
  test::write_bytes(p, b);
}

std::uint64_t le64(const std::vector<std::uint8_t>& b, std::size_t at) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = v << 8 | b.at(at + static_cast<std::size_t>(i));
  return v;
}

template <typename Fn>
std::string error_of(Fn fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Crc32c, MatchesTheStandardCheckValue) {
  const std::vector<std::uint8_t> check = test::bytes_of("123456789");
  EXPECT_EQ(crc32c(check), 0xE3069283u);
  EXPECT_EQ(crc32c({}), 0u);
  // In pieces == at once, on lengths that exercise the 8-byte loop and the tail.
  std::vector<std::uint8_t> b(1000);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<std::uint8_t>(i * 13 + 5);
  const std::span<const std::uint8_t> all(b);
  EXPECT_EQ(crc32c(all.subspan(333), crc32c(all.first(333))), crc32c(all));
}

TEST(Pack, ImageFolderRoundTripsWithAlignedLayout) {
  test::TempDir dir;
  make_image_folder(dir / "tree");
  const auto src = ImageFolderDataset::open(dir / "tree");
  const PackSummary sum = pack_dataset(*src, dir / "p.gbpack", {.sample_alignment = 64});
  EXPECT_EQ(sum.samples, 3u);
  EXPECT_EQ(sum.file_bytes, fs::file_size(dir / "p.gbpack"));
  EXPECT_FALSE(fs::exists(dir / "p.gbpack.tmp"));

  const auto pack = PackedDataset::open(dir / "p.gbpack", {.verify_reads = true});
  expect_same_samples(*src, *pack);
  std::vector<std::uint8_t> scratch;
  const Sample first = pack->read(0, scratch);
  // The payload starts on a page (mmap returns page-aligned addresses) and every sample on a
  // 64-byte boundary.
  for (std::size_t i = 0; i < pack->size(); ++i) {
    const auto addr = reinterpret_cast<std::uintptr_t>(pack->read(i, scratch).bytes.data());
    EXPECT_EQ(addr % 64, 0u) << i;
  }
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(first.bytes.data()) % 4096, 0u);
  EXPECT_TRUE(scratch.empty()) << "pack samples are spans into the mapping";
}

TEST(Pack, IdxRoundTripKeepsTheRawShape) {
  test::TempDir dir;
  std::vector<std::uint8_t> images = {0, 0, 8, 3, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 2};
  for (int i = 0; i < 12; ++i) images.push_back(static_cast<std::uint8_t>(i * 20));
  test::write_bytes(dir / "i", images);
  test::write_bytes(dir / "l", {0, 0, 8, 1, 0, 0, 0, 3, 2, 0, 1});
  const auto src = IdxDataset::open(dir / "i", dir / "l", {{"a", "b", "c"}});
  pack_dataset(*src, dir / "p.gbpack", {.sample_alignment = 1});
  const auto pack = PackedDataset::open(dir / "p.gbpack");
  EXPECT_EQ(pack->raw_shape(), (RawShape{2, 2, 1}));
  expect_same_samples(*src, *pack);
}

TEST(Pack, WebDatasetRoundTripAndOpenDatasetRecognisesEveryFormat) {
  test::TempDir dir;
  make_image_folder(dir / "tree");
  const auto folder = ImageFolderDataset::open(dir / "tree");
  write_webdataset(*folder, dir / "shards", 2);
  const auto wds = open_dataset({.path = dir / "shards"});
  EXPECT_EQ(wds->kind(), "webdataset");
  pack_dataset(*wds, dir / "p.gbpack");
  const auto pack = open_dataset({.path = dir / "p.gbpack"});
  EXPECT_EQ(pack->kind(), "pack");
  expect_same_samples(*wds, *pack);
  EXPECT_EQ(open_dataset({.path = dir / "tree"})->kind(), "image_folder");
  EXPECT_EQ(open_dataset({.path = dir / "shards" / "shard-000000.tar"})->size(), 2u);
  EXPECT_THROW(open_dataset({.path = dir / "nothing"}), Error);
}

TEST(Pack, AnEmptyDatasetPacks) {
  test::TempDir dir;
  fs::create_directories(dir / "tree" / "only_class");
  const auto src = ImageFolderDataset::open(dir / "tree");
  pack_dataset(*src, dir / "p.gbpack");
  const auto pack = PackedDataset::open(dir / "p.gbpack");
  EXPECT_EQ(pack->size(), 0u);
  EXPECT_EQ(pack->class_names(), std::vector<std::string>{"only_class"});
  EXPECT_TRUE(verify_pack(dir / "p.gbpack").ok());
}

TEST(Pack, VerifyFindsACorruptSample) {
  test::TempDir dir;
  make_image_folder(dir / "tree");
  const auto src = ImageFolderDataset::open(dir / "tree");
  pack_dataset(*src, dir / "p.gbpack");
  EXPECT_TRUE(verify_pack(dir / "p.gbpack").ok());

  // Sample 1's file offset, from the documented layout: payload_offset (header byte 80) plus
  // the offset in index entry 1 (index_offset at header byte 64, entries of 24 bytes).
  std::vector<std::uint8_t> b;
  read_whole_file(dir / "p.gbpack", b);
  const std::uint64_t payload_offset = le64(b, 80);
  const std::uint64_t entry1 = le64(b, 64) + 24;
  EXPECT_EQ(payload_offset % 4096, 0u);
  EXPECT_EQ(le64(b, 72), 3u * 24);  // index_bytes
  const std::uint64_t second_offset = payload_offset + le64(b, entry1);
  flip_byte(dir / "p.gbpack", second_offset + 100);

  const VerifyReport r = verify_pack(dir / "p.gbpack");
  EXPECT_EQ(r.samples, 3u);
  EXPECT_EQ(r.bad_samples, std::vector<std::size_t>{1});

  const auto plain = PackedDataset::open(dir / "p.gbpack");
  EXPECT_TRUE(plain->verify_sample(0));
  EXPECT_FALSE(plain->verify_sample(1));
  const auto checked = PackedDataset::open(dir / "p.gbpack", {.verify_reads = true});
  std::vector<std::uint8_t> scratch;
  EXPECT_NO_THROW(checked->read(0, scratch));
  const std::string msg = error_of([&] { checked->read(1, scratch); });
  EXPECT_NE(msg.find("p.gbpack#1: checksum mismatch"), std::string::npos) << msg;
}

TEST(Pack, OpenRejectsADamagedHeaderOrIndex) {
  test::TempDir dir;
  make_image_folder(dir / "tree");
  pack_dataset(*ImageFolderDataset::open(dir / "tree"), dir / "p.gbpack");
  std::vector<std::uint8_t> good;
  read_whole_file(dir / "p.gbpack", good);

  test::write_bytes(dir / "h.gbpack", good);
  flip_byte(dir / "h.gbpack", 20);  // sample count
  EXPECT_NE(
      error_of([&] { PackedDataset::open(dir / "h.gbpack"); }).find("header checksum mismatch"),
      std::string::npos);

  // The index follows the class names ("bird\nfish\n", 10 bytes) at 4096 + 16 (8-aligned).
  test::write_bytes(dir / "i.gbpack", good);
  flip_byte(dir / "i.gbpack", 4096 + 16 + 12);  // label of sample 0
  EXPECT_NE(
      error_of([&] { PackedDataset::open(dir / "i.gbpack"); }).find("index checksum mismatch"),
      std::string::npos);
}

TEST(Pack, OpenRejectsTruncatedFilesAndOtherFiles) {
  test::TempDir dir;
  make_image_folder(dir / "tree");
  pack_dataset(*ImageFolderDataset::open(dir / "tree"), dir / "p.gbpack");
  std::vector<std::uint8_t> b;
  read_whole_file(dir / "p.gbpack", b);
  b.resize(b.size() - 100);
  test::write_bytes(dir / "cut.gbpack", b);
  std::string msg = error_of([&] { PackedDataset::open(dir / "cut.gbpack"); });
  EXPECT_NE(msg.find("cut.gbpack: truncated: the header says the payload ends at byte"),
            std::string::npos)
      << msg;
  b.resize(1000);
  test::write_bytes(dir / "tiny.gbpack", b);
  msg = error_of([&] { PackedDataset::open(dir / "tiny.gbpack"); });
  EXPECT_NE(msg.find("truncated: 1000 bytes"), std::string::npos) << msg;
  test::write_bytes(dir / "other", test::bytes_of(std::string(5000, 'z')));
  msg = error_of([&] { PackedDataset::open(dir / "other"); });
  EXPECT_NE(msg.find("not a gpubase pack"), std::string::npos) << msg;
}

TEST(Pack, RejectsAnAlignmentThatIsNotAPowerOfTwo) {
  test::TempDir dir;
  make_image_folder(dir / "tree");
  const auto src = ImageFolderDataset::open(dir / "tree");
  EXPECT_THROW(pack_dataset(*src, dir / "p.gbpack", {.sample_alignment = 48}), Error);
}

}  // namespace
// A header whose offsets or sizes are near 2^64, with its checksum recomputed as a hostile file
// would have it: every such field is refused with a message, never read past the file.
TEST(Pack, OpenRefusesHostileOffsetsAndSizesWithAValidHeaderChecksum) {
  test::TempDir dir;
  make_image_folder(dir / "tree");
  pack_dataset(*ImageFolderDataset::open(dir / "tree"), dir / "p.gbpack");
  std::vector<std::uint8_t> good;
  read_whole_file(dir / "p.gbpack", good);
  const auto put64 = [](std::vector<std::uint8_t>& b, std::size_t at, std::uint64_t v) {
    for (int i = 0; i < 8; ++i) b[at + i] = static_cast<std::uint8_t>(v >> (8 * i));
  };
  const auto reseal = [](std::vector<std::uint8_t>& b) {  // header CRC-32C of bytes [0, 108)
    const std::uint32_t crc = crc32c({b.data(), 108});
    for (int i = 0; i < 4; ++i) b[108 + i] = static_cast<std::uint8_t>(crc >> (8 * i));
  };
  const std::uint64_t huge = ~std::uint64_t{0} - 15;
  struct Field {
    const char* what;
    std::size_t at;
    std::uint64_t value;
  };
  const Field fields[] = {
      {"class-names offset", 48, huge}, {"class-names size", 56, huge},
      {"index offset", 64, huge},       {"index size", 72, huge / 24 * 24},
      {"sample count", 16, huge / 24},  {"payload offset", 80, huge},
      {"payload size", 88, huge},
  };
  for (const Field& f : fields) {
    SCOPED_TRACE(f.what);
    std::vector<std::uint8_t> b = good;
    put64(b, f.at, f.value);
    if (f.at == 16) put64(b, 72, f.value * 24);  // a count with a matching index size
    reseal(b);
    const auto path = dir / (std::string("hostile-") + std::to_string(f.at) + ".gbpack");
    test::write_bytes(path, b);
    const std::string msg = error_of([&] { PackedDataset::open(path); });
    EXPECT_FALSE(msg.empty()) << "accepted";
    EXPECT_NE(msg.find(path.filename().string()), std::string::npos) << msg;
  }
}

TEST(Pack, EveryReaderThroughOpenDatasetChecksTheSampleItReads) {
  // The loader, pack and export open datasets through open_dataset: a damaged sample is an
  // error there (the loader counts and substitutes it), never bytes passed on silently.
  test::TempDir dir;
  make_image_folder(dir / "tree");
  pack_dataset(*ImageFolderDataset::open(dir / "tree"), dir / "p.gbpack");
  std::vector<std::uint8_t> b;
  read_whole_file(dir / "p.gbpack", b);
  const std::uint64_t second = le64(b, 80) + le64(b, le64(b, 64) + 24);
  flip_byte(dir / "p.gbpack", second + 100);
  const auto ds = open_dataset({.path = dir / "p.gbpack"});
  std::vector<std::uint8_t> scratch;
  EXPECT_NO_THROW(ds->read(0, scratch));
  const std::string msg = error_of([&] { ds->read(1, scratch); });
  EXPECT_NE(msg.find("p.gbpack#1: checksum mismatch"), std::string::npos) << msg;
}

TEST(Pack, OpenRefusesARawShapeWhoseSizeWrapsPast2To64) {
  test::TempDir dir;
  std::vector<std::uint8_t> images = {0, 0, 8, 3, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 2, 1, 2, 3, 4};
  test::write_bytes(dir / "i", images);
  test::write_bytes(dir / "l", {0, 0, 8, 1, 0, 0, 0, 1, 0});
  pack_dataset(*IdxDataset::open(dir / "i", dir / "l"), dir / "p.gbpack");
  std::vector<std::uint8_t> b;
  read_whole_file(dir / "p.gbpack", b);
  // height 2^22, width 2^22, channels 2^20: 2^64 bytes, 0 in 64-bit arithmetic.
  const auto put32 = [&](std::size_t at, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) b[at + i] = static_cast<std::uint8_t>(v >> (8 * i));
  };
  put32(32, 1u << 22);
  put32(36, 1u << 22);
  put32(40, 1u << 20);
  put32(108, crc32c({b.data(), 108}));
  test::write_bytes(dir / "wrapped.gbpack", b);
  const std::string msg = error_of([&] { PackedDataset::open(dir / "wrapped.gbpack"); });
  EXPECT_NE(msg.find("describes more than 2^64 bytes"), std::string::npos) << msg;
}

}  // namespace gb::data
