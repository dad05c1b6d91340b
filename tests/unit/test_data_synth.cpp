// test_data_synth.cpp: the synthetic ImageNet-like generator: the size mixture (median 500x375,
// mean near ImageNet's), quality around 90, determinism (same seed, same bytes, whatever the
// thread count), valid 4:2:0 JPEGs with photo-like content, and both output layouts readable
// by the readers. Kept small (size_scale) so it runs in a fraction of a second in Debug.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.hpp"
#include "core/mapped_file.hpp"
#include "data/image_folder.hpp"
#include "data/jpeg.hpp"
#include "data/synth.hpp"
#include "data/webdataset.hpp"
#include "test_data_util.hpp"

namespace gb::data {
namespace {

namespace fs = std::filesystem;

TEST(SynthSizes, FollowImageNetsShape) {
  SynthOptions o;
  std::vector<int> widths, heights;
  std::map<std::pair<int, int>, int> counts;
  double quality_sum = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    const SynthImageSpec s = synth_image_spec(o, static_cast<std::size_t>(i));
    widths.push_back(s.width);
    heights.push_back(s.height);
    ++counts[{s.width, s.height}];
    quality_sum += s.quality;
    ASSERT_GE(s.quality, o.quality_min);
    ASSERT_LE(s.quality, o.quality_max);
    ASSERT_EQ(s.label, i % 1000);
  }
  const auto mean = [](const std::vector<int>& v) {
    double t = 0;
    for (int x : v) t += x;
    return t / static_cast<double>(v.size());
  };
  const auto median = [](std::vector<int> v) {
    std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  EXPECT_EQ(median(widths), 500);
  EXPECT_EQ(median(heights), 375);
  EXPECT_NEAR(mean(widths), 445, 15);
  EXPECT_NEAR(mean(heights), 375, 15);
  EXPECT_NEAR(quality_sum / n, 90, 0.5);
  // 500x375 is the most common size, then 500x333.
  std::vector<std::pair<int, std::pair<int, int>>> by_count;
  for (const auto& [size, c] : counts) by_count.push_back({c, size});
  std::sort(by_count.rbegin(), by_count.rend());
  EXPECT_EQ(by_count[0].second, std::make_pair(500, 375));
  EXPECT_EQ(by_count[1].second, std::make_pair(500, 333));
}

TEST(SynthImage, IsAValid420JpegOfTheDrawnSizeWithPhotoLikeContent) {
  SynthOptions o;
  o.size_scale = 0.25;
  const SynthImageSpec spec = synth_image_spec(o, 3);
  JpegEncoder encoder;
  std::vector<std::uint8_t> jpeg;
  synth_jpeg(spec, encoder, jpeg);
  JpegInfo info;
  const auto rgb = decode_jpeg_rgb(jpeg, &info);
  ASSERT_TRUE(rgb.has_value());
  EXPECT_EQ(info.width, spec.width);
  EXPECT_EQ(info.height, spec.height);
  EXPECT_EQ(info.subsampling, ChromaSubsampling::s420);

  // Not flat: the pixels spread widely. Not white noise: neighbours are strongly correlated.
  const std::vector<std::uint8_t>& p = *rgb;
  double mean = 0;
  for (std::uint8_t v : p) mean += v;
  mean /= static_cast<double>(p.size());
  double var = 0, cov = 0;
  for (std::size_t i = 0; i + 3 < p.size(); ++i) {
    var += (p[i] - mean) * (p[i] - mean);
    cov += (p[i] - mean) * (p[i + 3] - mean);  // the same channel, one pixel to the right
  }
  const double stddev = std::sqrt(var / static_cast<double>(p.size()));
  EXPECT_GT(stddev, 25.0);
  EXPECT_GT(cov / var, 0.3) << "horizontal neighbours should be correlated";
}

TEST(SynthImage, SameSeedSameBytesOtherSeedOtherBytes) {
  SynthOptions a;
  a.size_scale = 0.2;
  SynthOptions b = a;
  b.seed = 1;
  JpegEncoder encoder;
  std::vector<std::uint8_t> x, y, z;
  synth_jpeg(synth_image_spec(a, 5), encoder, x);
  synth_jpeg(synth_image_spec(a, 5), encoder, y);
  synth_jpeg(synth_image_spec(b, 5), encoder, z);
  EXPECT_EQ(x, y);
  EXPECT_NE(x, z);
}

TEST(SynthImage, FullSizeFilesAreAboutImageNetsSize) {
  // 1,000 images measured in Release: mean 109 KB, median 107 KB, p10 42 KB, p90 156 KB.
  // Eight images cannot pin the mean down; they must land in ImageNet's range.
  SynthOptions o;
  JpegEncoder encoder;
  std::vector<std::uint8_t> jpeg;
  double total = 0;
  const int n = 8;
  for (int i = 0; i < n; ++i) {
    synth_jpeg(synth_image_spec(o, static_cast<std::size_t>(i)), encoder, jpeg);
    total += static_cast<double>(jpeg.size());
  }
  EXPECT_GT(total / n, 50e3);
  EXPECT_LT(total / n, 220e3);
}

SynthOptions tiny(const fs::path& out, unsigned threads) {
  SynthOptions o;
  o.output = out;
  o.images = 12;
  o.classes = 3;
  o.images_per_shard = 5;
  o.size_scale = 0.2;
  o.threads = threads;
  o.layout = SynthLayout::both;
  return o;
}

TEST(SynthDataset, WritesReadableImageFolderAndShardsIdenticalForAnyThreadCount) {
  test::TempDir dir;
  std::size_t progress_calls = 0;
  const SynthSummary one =
      synth_dataset(tiny(dir / "one", 1), [&](std::size_t, std::size_t) { ++progress_calls; });
  const SynthSummary two = synth_dataset(tiny(dir / "two", 2));
  EXPECT_GE(progress_calls, 1u);
  EXPECT_EQ(one.images, 12u);
  EXPECT_EQ(one.total_bytes, two.total_bytes);
  EXPECT_LE(one.min_bytes, one.median_bytes);
  EXPECT_LE(one.median_bytes, one.max_bytes);
  EXPECT_NEAR(one.mean_bytes * 12, static_cast<double>(one.total_bytes), 1e-6);

  const auto folder = ImageFolderDataset::open(dir / "one" / "image_folder");
  const auto shards = WebDataset::open_dir(dir / "two" / "webdataset");
  EXPECT_EQ(shards->shard_count(), 3u);
  ASSERT_EQ(folder->size(), 12u);
  ASSERT_EQ(shards->size(), 12u);
  EXPECT_EQ(folder->class_names(),
            (std::vector<std::string>{"class_0000", "class_0001", "class_0002"}));
  EXPECT_EQ(folder->scan_report().skipped(), 0u);
  EXPECT_EQ(shards->scan_report().skipped(), 0u);

  // Same images in both layouts: shard order is the index order, the folder groups by class.
  std::map<std::string, std::vector<std::uint8_t>> by_name;
  std::vector<std::uint8_t> scratch;
  for (std::size_t i = 0; i < folder->size(); ++i) {
    const Sample s = folder->read(i, scratch);
    by_name[folder->path(i).filename().string()] = {s.bytes.begin(), s.bytes.end()};
  }
  for (std::size_t i = 0; i < shards->size(); ++i) {
    const Sample s = shards->read(i, scratch);
    char name[32];
    std::snprintf(name, sizeof name, "synth_%08zu.jpg", i);
    EXPECT_EQ(s.label, static_cast<std::int32_t>(i % 3));
    EXPECT_EQ(by_name.at(name), std::vector<std::uint8_t>(s.bytes.begin(), s.bytes.end())) << i;
  }
}

TEST(SynthDataset, RejectsBadOptions) {
  test::TempDir dir;
  SynthOptions o = tiny(dir.path(), 1);
  o.images = 0;
  EXPECT_THROW(synth_dataset(o), Error);
  o = tiny(dir.path(), 1);
  o.size_scale = 2;
  EXPECT_THROW(synth_dataset(o), Error);
  o = tiny(dir.path(), 1);
  o.quality_max = 101;
  EXPECT_THROW(synth_dataset(o), Error);
}

}  // namespace
}  // namespace gb::data
