// test_data_tar.cpp: the hand-written tar reader (ustar, pax and GNU long names, base-256 sizes,
// truncated and corrupt archives) and WebDataset shards built on it.
#include <gtest/gtest.h>

#include <cstring>

#include "core/error.hpp"
#include "core/mapped_file.hpp"
#include "data/tar.hpp"
#include "data/webdataset.hpp"
#include "test_data_util.hpp"

namespace gb::data {
namespace {

namespace fs = std::filesystem;

std::vector<std::uint8_t> slurp(const fs::path& p) {
  std::vector<std::uint8_t> b;
  read_whole_file(p, b);
  return b;
}

std::string member_text(const std::vector<std::uint8_t>& archive, const TarMember& m) {
  return std::string(archive.begin() + static_cast<std::ptrdiff_t>(m.offset),
                     archive.begin() + static_cast<std::ptrdiff_t>(m.offset + m.size));
}

TEST(Tar, WriterAndReaderAgreeOnNamesAndContents) {
  test::TempDir dir;
  {
    TarWriter w(dir / "a.tar");
    w.add("one.txt", test::bytes_of("first"));
    w.add("dir/two.bin", test::bytes_of(std::string(1000, 'x')));
    w.add("empty", {});
    w.finish();
  }
  const std::vector<std::uint8_t> a = slurp(dir / "a.tar");
  EXPECT_EQ(a.size() % 512, 0u);
  const TarIndex t = index_tar(a);
  EXPECT_EQ(t.stop, TarIndex::Stop::none) << t.stop_reason;
  ASSERT_EQ(t.members.size(), 3u);
  EXPECT_EQ(t.members[0].name, "one.txt");
  EXPECT_EQ(member_text(a, t.members[0]), "first");
  EXPECT_EQ(t.members[1].name, "dir/two.bin");
  EXPECT_EQ(t.members[1].size, 1000u);
  EXPECT_EQ(t.members[2].size, 0u);
}

TEST(Tar, LongNamesInPaxAndGnuStyle) {
  const std::string long_name = std::string(150, 'd') + "/" + std::string(120, 'n') + ".jpg";
  for (TarLongNames style : {TarLongNames::pax, TarLongNames::gnu}) {
    test::TempDir dir;
    {
      TarWriter w(dir / "a.tar", style);
      w.add(long_name, test::bytes_of("payload"));
      w.add("short", test::bytes_of("s"));
      w.finish();
    }
    const std::vector<std::uint8_t> a = slurp(dir / "a.tar");
    const TarIndex t = index_tar(a);
    ASSERT_EQ(t.members.size(), 2u);
    EXPECT_EQ(t.members[0].name, long_name);
    EXPECT_EQ(member_text(a, t.members[0]), "payload");
    EXPECT_EQ(t.members[1].name, "short");  // the long name applies to one member only
  }
}

// A hand-made ustar header (what GNU tar writes for "./x" with a prefix field).
std::vector<std::uint8_t> header(const std::string& name, const std::string& prefix,
                                 std::uint64_t size, char type, bool base256 = false) {
  std::vector<std::uint8_t> h(512, 0);
  std::memcpy(h.data(), name.data(), name.size());
  std::snprintf(reinterpret_cast<char*>(h.data()) + 100, 8, "%07o", 0644);
  if (base256) {
    h[124] = 0x80;
    for (int i = 0; i < 8; ++i) h[135 - i] = static_cast<std::uint8_t>(size >> (8 * i));
  } else {
    std::snprintf(reinterpret_cast<char*>(h.data()) + 124, 12, "%011llo",
                  static_cast<unsigned long long>(size));
  }
  h[156] = static_cast<std::uint8_t>(type);
  std::memcpy(h.data() + 257,
              "ustar\0"
              "00",
              8);
  std::memcpy(h.data() + 345, prefix.data(), prefix.size());
  std::memset(h.data() + 148, ' ', 8);
  unsigned sum = 0;
  for (std::uint8_t b : h) sum += b;
  std::snprintf(reinterpret_cast<char*>(h.data()) + 148, 7, "%06o", sum);
  return h;
}

void append(std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
}
void append_data(std::vector<std::uint8_t>& a, const std::string& s) {
  append(a, test::bytes_of(s));
  a.resize((a.size() + 511) / 512 * 512, 0);
}

TEST(Tar, ReadsUstarPrefixBase256SizesAndSkipsDirectories) {
  std::vector<std::uint8_t> a;
  append(a, header("d/", "", 0, '5'));
  append(a, header("file.cls", "./some/prefix", 1, '0'));
  append_data(a, "7");
  append(a, header("big.bin", "", 3, '0', /*base256=*/true));
  append_data(a, "abc");
  const TarIndex t = index_tar(a);  // no end-of-archive blocks: the end of the bytes ends it
  EXPECT_EQ(t.stop, TarIndex::Stop::none);
  EXPECT_EQ(t.ignored, 1u);
  ASSERT_EQ(t.members.size(), 2u);
  EXPECT_EQ(t.members[0].name, "some/prefix/file.cls");
  EXPECT_EQ(member_text(a, t.members[1]), "abc");
}

TEST(Tar, StopsAtAMemberCutShort) {
  std::vector<std::uint8_t> a;
  append(a, header("a.cls", "", 1, '0'));
  append_data(a, "1");
  append(a, header("a.jpg", "", 5000, '0'));
  a.resize(a.size() + 700);
  const TarIndex t = index_tar(a);
  EXPECT_EQ(t.stop, TarIndex::Stop::truncated);
  EXPECT_NE(t.stop_reason.find("member 'a.jpg' needs 5000 bytes, 700 left"), std::string::npos)
      << t.stop_reason;
  EXPECT_EQ(t.members.size(), 1u);
}

TEST(Tar, StopsAtAHeaderCutShortAndAtABadChecksum) {
  std::vector<std::uint8_t> a = header("a.cls", "", 0, '0');
  a.resize(300);
  EXPECT_EQ(index_tar(a).stop, TarIndex::Stop::truncated);

  std::vector<std::uint8_t> b = header("a.cls", "", 0, '0');
  b[10] ^= 0x55;
  const TarIndex t = index_tar(b);
  EXPECT_EQ(t.stop, TarIndex::Stop::corrupt);
  EXPECT_NE(t.stop_reason.find("checksum"), std::string::npos);
}

TEST(Tar, NeverReadsPastTheEndWhateverTheBytes) {
  // Every prefix of a valid archive, and random garbage, ends the scan cleanly.
  test::TempDir dir;
  {
    TarWriter w(dir / "a.tar");
    w.add(std::string(130, 'p') + ".jpg", test::small_jpeg(8, 8, 1));
    w.add("k.cls", test::bytes_of("3"));
    w.finish();
  }
  const std::vector<std::uint8_t> a = slurp(dir / "a.tar");
  for (std::size_t n = 0; n <= a.size(); n += 97) {
    const std::vector<std::uint8_t> cut(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(n));
    const TarIndex t = index_tar(cut);
    for (const TarMember& m : t.members) EXPECT_LE(m.offset + m.size, n);
  }
  std::vector<std::uint8_t> garbage(4096);
  std::uint32_t x = 12345;
  for (auto& b : garbage) b = static_cast<std::uint8_t>((x = x * 1664525u + 1013904223u) >> 24);
  EXPECT_NE(index_tar(garbage).stop, TarIndex::Stop::none);
}

// ---- WebDataset -----------------------------------------------------------------------------

struct ShardSample {
  std::string key;
  std::vector<std::uint8_t> jpeg;
  std::string cls;
};

void write_shard(const fs::path& path, const std::vector<ShardSample>& samples) {
  TarWriter w(path);
  for (const ShardSample& s : samples) {
    if (!s.jpeg.empty()) w.add(s.key + ".jpg", s.jpeg);
    if (!s.cls.empty()) w.add(s.key + ".cls", test::bytes_of(s.cls));
    w.add(s.key + ".json", test::bytes_of("{}"));
  }
  w.finish();
}

TEST(WebDataset, GroupsMembersByKeyAcrossShards) {
  test::TempDir dir;
  write_shard(dir / "s0.tar", {{"a/0001", test::small_jpeg(8, 8, 1), "2"},
                               {"a/0002", test::small_jpeg(8, 8, 2), " 0\n"}});
  write_shard(dir / "s1.tar", {{"b/0003", test::small_jpeg(8, 8, 3), "1"}});
  const auto ds = WebDataset::open_dir(dir.path());
  EXPECT_EQ(ds->shard_count(), 2u);
  ASSERT_EQ(ds->size(), 3u);
  EXPECT_EQ(ds->num_classes(), 3u);
  EXPECT_EQ(ds->label(0), 2);
  EXPECT_EQ(ds->label(1), 0);
  EXPECT_EQ(ds->label(2), 1);
  EXPECT_EQ(ds->sample_name(2), (dir / "s1.tar").string() + ":b/0003");
  std::vector<std::uint8_t> scratch;
  const Sample s = ds->read(1, scratch);
  const std::vector<std::uint8_t> expected = test::small_jpeg(8, 8, 2);
  EXPECT_TRUE(std::equal(s.bytes.begin(), s.bytes.end(), expected.begin(), expected.end()));
  EXPECT_TRUE(scratch.empty()) << "tar samples are spans into the mapped shard";
  EXPECT_EQ(ds->scan_report().skipped(), 0u);
}

TEST(WebDataset, CountsNonJpegsAndMissingOrBadLabels) {
  test::TempDir dir;
  write_shard(dir / "s.tar", {{"ok", test::small_jpeg(8, 8, 1), "0"},
                              {"png", test::bytes_of("\x89PNG...."), "0"},
                              {"nolabel", test::small_jpeg(8, 8, 2), ""},
                              {"badlabel", test::small_jpeg(8, 8, 3), "cat"}});
  const auto ds = WebDataset::open({dir / "s.tar"});
  EXPECT_EQ(ds->size(), 1u);
  EXPECT_EQ(ds->scan_report().not_jpeg, 1u);
  EXPECT_EQ(ds->scan_report().unlabeled, 2u);
}

TEST(WebDataset, AHugeLabelIsABadSampleNotAHugeClassTable) {
  // A 10 KB shard whose .cls says 2,000,000,000 (or INT32_MAX): the class table is sized by the
  // largest label, so such a label is refused and counted instead of allocating gigabytes.
  test::TempDir dir;
  write_shard(dir / "s.tar", {{"ok", test::small_jpeg(8, 8, 1), "3"},
                              {"big", test::small_jpeg(8, 8, 2), "2000000000"},
                              {"max", test::small_jpeg(8, 8, 3), "2147483647"},
                              {"over", test::small_jpeg(8, 8, 4), "99999999999"}});
  const auto ds = WebDataset::open({dir / "s.tar"});
  EXPECT_EQ(ds->size(), 1u);
  EXPECT_EQ(ds->class_names().size(), 4u);  // labels 0..3
  EXPECT_EQ(ds->scan_report().unlabeled, 3u);
  EXPECT_THROW(WebDataset::open({dir / "s.tar"}, {.strict = true}), Error);
}

TEST(WebDataset, TwoImagesUnderOneKeyAreABadSampleNotMerged) {
  test::TempDir dir;
  // "dup" twice in a row: its members are adjacent, so they make one sample with two images.
  write_shard(dir / "s.tar", {{"ok", test::small_jpeg(8, 8, 1), "0"},
                              {"dup", test::small_jpeg(8, 8, 2), "1"},
                              {"dup", test::small_jpeg(8, 8, 3), "1"}});
  const auto ds = WebDataset::open({dir / "s.tar"});
  EXPECT_EQ(ds->size(), 1u);
  EXPECT_EQ(ds->scan_report().corrupt, 1u);
  ASSERT_FALSE(ds->scan_report().examples.empty());
  bool named = false;
  for (const std::string& e : ds->scan_report().examples)
    named = named || e.find("s.tar:dup: more than one image member") != std::string::npos;
  EXPECT_TRUE(named) << ds->scan_report().examples.front();
  EXPECT_THROW(WebDataset::open({dir / "s.tar"}, {.strict = true}), Error);
}

TEST(WebDataset, ATruncatedShardKeepsTheSamplesBeforeTheCut) {
  test::TempDir dir;
  std::vector<ShardSample> samples;
  for (unsigned i = 0; i < 5; ++i) {
    samples.push_back({"k" + std::to_string(i), test::small_jpeg(64, 64, i), std::to_string(i)});
  }
  write_shard(dir / "s.tar", samples);
  const std::vector<std::uint8_t> a = slurp(dir / "s.tar");
  const TarIndex full = index_tar(a);
  ASSERT_EQ(full.members.at(9).name, "k3.jpg");
  ASSERT_EQ(full.members.at(10).name, "k3.cls");
  // Cut inside the fourth sample's JPEG, then inside its label (its JPEG complete): either way
  // k0..k2 survive and k3 is lost.
  for (const std::uint64_t cut :
       {full.members[9].offset + full.members[9].size / 2, full.members[10].offset}) {
    test::write_bytes(dir / "cut.tar",
                      std::vector<std::uint8_t>(a.begin(), a.begin() + static_cast<long>(cut)));
    const auto ds = WebDataset::open({dir / "cut.tar"});
    EXPECT_EQ(ds->size(), 3u) << cut;
    EXPECT_EQ(ds->scan_report().truncated, 1u);
    EXPECT_EQ(ds->scan_report().unlabeled, 0u);
    EXPECT_NE(ds->scan_report().examples.at(0).find("cut.tar: truncated at byte"),
              std::string::npos);
  }
  EXPECT_THROW(WebDataset::open({dir / "cut.tar"}, {.strict = true}), Error);
}

TEST(WebDataset, AnUnreadableShardIsCountedOrStrictlyAnError) {
  test::TempDir dir;
  write_shard(dir / "s.tar", {{"a", test::small_jpeg(8, 8, 1), "0"}});
  const auto ds = WebDataset::open({dir / "s.tar", dir / "missing.tar"});
  EXPECT_EQ(ds->size(), 1u);
  EXPECT_EQ(ds->scan_report().unreadable, 1u);
  EXPECT_THROW(WebDataset::open({dir / "missing.tar"}, {.strict = true}), Error);
}

TEST(WebDataset, WriteWebdatasetRoundTrips) {
  test::TempDir dir;
  fs::create_directories(dir / "in");
  write_shard(dir / "in" / "s.tar", {{"a", test::small_jpeg(8, 8, 1), "1"},
                                     {"b", test::small_jpeg(8, 8, 2), "0"},
                                     {"c", test::small_jpeg(8, 8, 3), "1"}});
  const auto a = WebDataset::open_dir(dir / "in");
  const auto shards = write_webdataset(*a, dir / "out", 2);
  EXPECT_EQ(shards.size(), 2u);
  const auto b = WebDataset::open(shards);
  ASSERT_EQ(b->size(), 3u);
  std::vector<std::uint8_t> s;
  for (std::size_t i = 0; i < 3; ++i) {
    const Sample x = a->read(i, s), y = b->read(i, s);
    EXPECT_EQ(x.label, y.label);
    EXPECT_TRUE(std::equal(x.bytes.begin(), x.bytes.end(), y.bytes.begin(), y.bytes.end()));
  }
}

}  // namespace
}  // namespace gb::data
