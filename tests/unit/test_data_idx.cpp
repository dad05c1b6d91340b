// test_data_idx.cpp: the IDX reader on the Fashion-MNIST files (gzip, as Debian ships them), and
// every way an IDX file can be wrong: magic, element type, dimensions, counts, truncation.
// Expected values were computed once with Python's gzip module from the same files (the official
// Zalando split: Debian's dataset-fashion-mnist 0.0~git20200523).
#include <gtest/gtest.h>

#include <cstdlib>

#include <algorithm>
#include <numeric>

#include "core/error.hpp"
#include "data/gzip.hpp"
#include "data/idx.hpp"
#include "test_data_util.hpp"

namespace gb::data {
namespace {

std::filesystem::path fashion_dir() { return test::fashion_mnist_dir(); }

// Opening the 60,000 training images inflates 26 MB of gzip: done once for the suite.
class FashionMnist : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!gzip_supported() || !std::filesystem::exists(fashion_dir())) return;
    train_ = open_idx_split(fashion_dir(), "train", {fashion_mnist_class_names()}).release();
    test_ = open_idx_split(fashion_dir(), "t10k").release();
  }
  static void TearDownTestSuite() {
    delete train_;
    delete test_;
    train_ = test_ = nullptr;
  }
  void SetUp() override {
    if (!gzip_supported()) GTEST_SKIP() << "built without zlib: the Fashion-MNIST files are .gz";
    if (train_ == nullptr) GTEST_SKIP() << test::no_fashion_mnist(fashion_dir());
  }
  static IdxDataset* train_;
  static IdxDataset* test_;
};
IdxDataset* FashionMnist::train_ = nullptr;
IdxDataset* FashionMnist::test_ = nullptr;

TEST_F(FashionMnist, HasTheOfficialCountsAndShape) {
  EXPECT_EQ(train_->size(), 60000u);
  EXPECT_EQ(test_->size(), 10000u);
  EXPECT_EQ(train_->format(), SampleFormat::raw_u8);
  EXPECT_EQ(train_->raw_shape(), (RawShape{28, 28, 1}));
  EXPECT_EQ(test_->raw_shape(), (RawShape{28, 28, 1}));
}

TEST_F(FashionMnist, HasTenBalancedClasses) {
  ASSERT_EQ(train_->num_classes(), 10u);
  EXPECT_EQ(train_->class_names()[9], "Ankle boot");
  EXPECT_EQ(test_->class_names(), numeric_class_names(10));  // no names given
  std::vector<int> train_counts(10), test_counts(10);
  for (std::size_t i = 0; i < train_->size(); ++i) ++train_counts.at(train_->label(i));
  for (std::size_t i = 0; i < test_->size(); ++i) ++test_counts.at(test_->label(i));
  EXPECT_EQ(train_counts, std::vector<int>(10, 6000));
  EXPECT_EQ(test_counts, std::vector<int>(10, 1000));
}

TEST_F(FashionMnist, KnownLabelsAndPixels) {
  std::vector<std::uint8_t> scratch;
  const std::vector<std::int32_t> first_train = {9, 0, 0, 3, 0, 2, 7, 2, 5, 5};
  const std::vector<std::int32_t> first_test = {9, 2, 1, 1, 6, 1, 4, 6, 5, 7};
  for (std::size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(train_->read(i, scratch).label, first_train[i]) << i;
    EXPECT_EQ(test_->read(i, scratch).label, first_test[i]) << i;
  }
  const Sample s0 = train_->read(0, scratch);
  ASSERT_EQ(s0.bytes.size(), 784u);
  EXPECT_EQ(s0.bytes[14 * 28 + 14], 217);
  EXPECT_EQ(std::accumulate(s0.bytes.begin(), s0.bytes.end(), 0), 76247);
  const Sample last = train_->read(59999, scratch);
  EXPECT_EQ(std::accumulate(last.bytes.begin(), last.bytes.end(), 0), 16684);
  EXPECT_TRUE(scratch.empty()) << "IDX samples are spans into the file, not copies";
}

TEST_F(FashionMnist, PixelSumsMatchTheFiles) {
  const auto sum = [](std::span<const std::uint8_t> p) {
    return std::accumulate(p.begin(), p.end(), std::uint64_t{0});
  };
  EXPECT_EQ(sum(train_->pixels()), 3431114169u);
  EXPECT_EQ(sum(test_->pixels()), 573469082u);
}

// ---- malformed files -------------------------------------------------------------------

std::vector<std::uint8_t> idx_bytes(std::uint8_t type, std::vector<std::uint32_t> dims,
                                    std::size_t data_bytes) {
  std::vector<std::uint8_t> b = {0, 0, type, static_cast<std::uint8_t>(dims.size())};
  for (std::uint32_t d : dims) {
    for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<std::uint8_t>(d >> s));
  }
  for (std::size_t i = 0; i < data_bytes; ++i) b.push_back(static_cast<std::uint8_t>(i % 10));
  return b;
}

// The gb::Error message of fn(), or "" when it does not throw.
template <typename Fn>
std::string error_of(Fn fn) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
    return e.what();
  }
  return "";
}

TEST(IdxParse, AcceptsAWellFormedArray) {
  const std::vector<std::uint8_t> b = idx_bytes(0x08, {3, 2, 2}, 12);
  const IdxArray a = parse_idx(b, "x");
  EXPECT_EQ(a.dims, (std::vector<std::uint32_t>{3, 2, 2}));
  EXPECT_EQ(a.data.size(), 12u);
}

TEST(IdxParse, RejectsAWrongMagic) {
  std::vector<std::uint8_t> b = idx_bytes(0x08, {3}, 3);
  b[0] = 0x1F;
  EXPECT_NE(error_of([&] { parse_idx(b, "f.idx"); }).find("f.idx: not an IDX file"),
            std::string::npos);
}

TEST(IdxParse, RejectsElementTypesOtherThanUint8) {
  const std::vector<std::uint8_t> b = idx_bytes(0x0D, {3}, 12);
  EXPECT_NE(error_of([&] { parse_idx(b, "f.idx"); }).find("float32 is not supported"),
            std::string::npos);
}

TEST(IdxParse, RejectsATruncatedHeader) {
  std::vector<std::uint8_t> b = idx_bytes(0x08, {3, 28, 28}, 0);
  b.resize(9);
  EXPECT_NE(error_of([&] { parse_idx(b, "f.idx"); }).find("truncated IDX header"),
            std::string::npos);
}

TEST(IdxParse, RejectsTruncatedDataNamingTheSizes) {
  const std::vector<std::uint8_t> b = idx_bytes(0x08, {3, 28, 28}, 3 * 784 - 100);
  const std::string msg = error_of([&] { parse_idx(b, "f.idx"); });
  EXPECT_NE(msg.find("f.idx: truncated"), std::string::npos) << msg;
  EXPECT_NE(msg.find("3 x 28 x 28 = 2352 bytes"), std::string::npos) << msg;
  EXPECT_NE(msg.find("file has 2252"), std::string::npos) << msg;
}

TEST(IdxParse, RejectsTrailingBytes) {
  const std::vector<std::uint8_t> b = idx_bytes(0x08, {3}, 5);
  EXPECT_NE(error_of([&] { parse_idx(b, "f.idx"); }).find("2 bytes after"), std::string::npos);
}

TEST(IdxDataset, RejectsImageAndLabelCountsThatDiffer) {
  test::TempDir dir;
  test::write_bytes(dir / "i", idx_bytes(0x08, {3, 2, 2}, 12));
  test::write_bytes(dir / "l", idx_bytes(0x08, {4}, 4));
  const std::string msg = error_of([&] { IdxDataset::open(dir / "i", dir / "l"); });
  EXPECT_NE(msg.find("has 3 images but"), std::string::npos) << msg;
  EXPECT_NE(msg.find("has 4 labels"), std::string::npos) << msg;
}

TEST(IdxDataset, RejectsLabelsFileWithImageDimensions) {
  test::TempDir dir;
  test::write_bytes(dir / "i", idx_bytes(0x08, {3, 2, 2}, 12));
  test::write_bytes(dir / "l", idx_bytes(0x08, {3, 1}, 3));
  EXPECT_NE(error_of([&] { IdxDataset::open(dir / "i", dir / "l"); }).find("labels need 1"),
            std::string::npos);
}

TEST(IdxDataset, RejectsLabelsBeyondTheClassNames) {
  test::TempDir dir;
  test::write_bytes(dir / "i", idx_bytes(0x08, {10, 1, 1}, 10));
  test::write_bytes(dir / "l", idx_bytes(0x08, {10}, 10));  // labels 0..9
  const std::string msg = error_of([&] {
    IdxDataset::open(dir / "i", dir / "l", {{"a", "b", "c"}});
  });
  EXPECT_NE(msg.find("label 9 is out of range for 3 class names"), std::string::npos) << msg;
}

TEST(IdxDataset, ReadsAPlainFileWithChannels) {
  test::TempDir dir;
  test::write_bytes(dir / "i", idx_bytes(0x08, {2, 2, 3, 3}, 36));
  test::write_bytes(dir / "l", idx_bytes(0x08, {2}, 2));
  const auto ds = IdxDataset::open(dir / "i", dir / "l");
  EXPECT_EQ(ds->raw_shape(), (RawShape{2, 3, 3}));
  std::vector<std::uint8_t> scratch;
  const Sample s = ds->read(1, scratch);
  EXPECT_EQ(s.label, 1);
  ASSERT_EQ(s.bytes.size(), 18u);
  EXPECT_EQ(s.bytes[0], 18 % 10);
}

TEST(IdxDataset, NamesAMissingFile) {
  test::TempDir dir;
  const std::string msg = error_of([&] { open_idx_split(dir.path(), "train"); });
  EXPECT_NE(msg.find("train-images-idx3-ubyte[.gz]: no such file"), std::string::npos) << msg;
}

TEST(IdxDataset, RejectsATruncatedGzipFile) {
  if (!gzip_supported()) GTEST_SKIP() << "built without zlib";
  const std::filesystem::path gz = fashion_dir() / "t10k-labels-idx1-ubyte.gz";
  if (!std::filesystem::exists(gz)) GTEST_SKIP() << test::no_fashion_mnist(fashion_dir());
  std::ifstream in(gz, std::ios::binary);
  std::vector<std::uint8_t> b((std::istreambuf_iterator<char>(in)), {});
  b.resize(b.size() / 2);
  test::TempDir dir;
  test::write_bytes(dir / "l.gz", b);
  test::write_bytes(dir / "i", idx_bytes(0x08, {10000, 1, 1}, 10000));
  const std::string msg = error_of([&] { IdxDataset::open(dir / "i", dir / "l.gz"); });
  EXPECT_NE(msg.find("l.gz: truncated gzip data"), std::string::npos) << msg;
}

TEST(IdxParse, RejectsDimensionsWhoseProductWrapsAround) {
  // 65536^4 = 2^64: multiplied in 64 bits it wraps to 0, a plausible empty array.
  std::vector<std::uint8_t> b = {0, 0, 0x08, 4};
  for (int d = 0; d < 4; ++d)
    for (const std::uint8_t byte : {0x00, 0x01, 0x00, 0x00}) b.push_back(byte);
  const std::string msg = error_of([&] { parse_idx(b, "wrap"); });
  EXPECT_NE(msg.find("more than 2^64 bytes"), std::string::npos) << msg;
}

TEST(IdxDataset, AGzipFileIsInflatedNoFurtherThanItsHeaderSays) {
  if (!gzip_supported()) GTEST_SKIP() << "built without zlib";
  // The header says 2 images of 2x2 (8 bytes); the stream holds 4 MB more: the reader stops at
  // the header's size instead of inflating everything first.
  test::TempDir dir;
  std::vector<std::uint8_t> raw = idx_bytes(0x08, {2, 2, 2}, 8);
  raw.resize(raw.size() + (4u << 20), 0);
  test::write_bytes(dir / "i", raw);
  ASSERT_EQ(std::system(("gzip -n -q " + (dir / "i").string()).c_str()), 0);
  test::write_bytes(dir / "l", idx_bytes(0x08, {2}, 2));
  const std::string msg = error_of([&] { IdxDataset::open(dir / "i.gz", dir / "l"); });
  EXPECT_NE(msg.find("i.gz: the gzip stream holds more than the 24 bytes its header describes"),
            std::string::npos)
      << msg;
}

TEST(IdxParse, RejectsASampleShapeThatWrapsEvenWithZeroSamples) {
  // 0 x 2^22 x 2^22 x 2^20: no data, but a per-sample shape of 2^64 bytes (0 when wrapped).
  const std::vector<std::uint8_t> b = {0, 0, 0x08, 4, 0, 0, 0,    0,    0, 0x40, 0, 0,
                                       0, 0x40, 0, 0, 0, 0x10, 0, 0};
  const std::string msg = error_of([&] { parse_idx(b, "wrap"); });
  EXPECT_NE(msg.find("more than 2^64 bytes"), std::string::npos) << msg;
}

}  // namespace
}  // namespace gb::data
