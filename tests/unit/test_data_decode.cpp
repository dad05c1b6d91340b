// test_data_decode.cpp: the loader's JPEG decode: the DCT scale chosen for a crop, region
// decode returning only the rows and columns the crop needs (and the same pixels as a decode
// of the whole image at that scale), decode + resize close to a full-size decode + exact resize
// (PSNR) on synthetic ImageNet-like JPEGs in colour and grey, decode_augment end to end, and
// bad data (truncated at many cut points, random bytes, empty, a PNG) as typed errors.
#include <gtest/gtest.h>

#include "test_data_util.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/error.hpp"
#include "data/augment.hpp"
#include "data/decode.hpp"
#include "data/jpeg.hpp"
#include "data/synth.hpp"

namespace gb::test {
// Defined in test_data_augment.cpp: PIL's antialiased bilinear resize in double precision.
std::vector<double> reference_resize(const std::vector<std::uint8_t>& src, int src_w, int src_h,
                                     int channels, const data::CropRect& box, int out_w, int out_h);
}  // namespace gb::test

namespace gb::data {
namespace {

using SplitMix = gb::test::SplitMixSource;

// A synthetic ImageNet-like JPEG (data/synth.hpp content) of a given size; grey on request.
std::vector<std::uint8_t> synth_test_jpeg(int w, int h, std::uint64_t seed, bool grey = false) {
  SynthImageSpec spec;
  spec.width = w;
  spec.height = h;
  spec.quality = 90;
  spec.seed = seed;
  JpegEncoder encoder;
  std::vector<std::uint8_t> out;
  if (!grey) {
    synth_jpeg(spec, encoder, out);
    return out;
  }
  const std::vector<std::uint8_t> rgb = synth_pixels(spec);
  encoder.encode_rgb(rgb, w, h, 90, ChromaSubsampling::gray, out);
  return out;
}

double psnr(const std::vector<std::uint8_t>& a, const std::vector<double>& b) {
  double se = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double d = a[i] - std::clamp(b[i], 0.0, 255.0);
    se += d * d;
  }
  const double mse = se / static_cast<double>(a.size());
  return mse == 0 ? 99.0 : 10 * std::log10(255.0 * 255.0 / mse);
}

TEST(DecodeDctScale, IsTheSmallestScaleThatCoversTheOutput) {
  EXPECT_EQ(dct_scale_for_crop(500, 375, 224, 224), 8);    // 375 * 4/8 = 187 < 224: full size
  EXPECT_EQ(dct_scale_for_crop(896, 750, 224, 224), 4);    // 750 * 2/8 = 187 < 224; 4/8: 375
  EXPECT_EQ(dct_scale_for_crop(296, 342, 224, 224), 8);    // 296 * 4/8 = 148 < 224
  EXPECT_EQ(dct_scale_for_crop(1792, 1792, 224, 224), 1);  // exactly 224 at 1/8
  EXPECT_EQ(dct_scale_for_crop(448, 448, 224, 224), 4);
  EXPECT_EQ(dct_scale_for_crop(100, 100, 224, 224), 8);   // upscaling: full size
  EXPECT_EQ(dct_scale_for_crop(2000, 230, 224, 224), 8);  // one side too short to shrink
}

TEST(DecodeInfo, ReadsTheHeaderOnly) {
  JpegDecoder decoder;
  const JpegImageInfo colour = decoder.read_info(synth_test_jpeg(123, 77, 1));
  EXPECT_EQ(colour.width, 123);
  EXPECT_EQ(colour.height, 77);
  EXPECT_EQ(colour.components, 3);
  const JpegImageInfo grey = decoder.read_info(synth_test_jpeg(64, 48, 2, true));
  EXPECT_EQ(grey.components, 1);
}

TEST(DecodeForCrop, DecodesOnlyTheRowsAndColumnsTheCropNeeds) {
  const std::vector<std::uint8_t> jpeg = synth_test_jpeg(500, 375, 3);
  JpegDecoder decoder;
  std::vector<std::uint8_t> scratch;
  // 300x200 crop to 150x100: scale 4/8, the crop covers 150x100 scaled pixels at (50, 40).
  const DecodedRegion r =
      decoder.decode_for_crop(jpeg, CropBox{100, 80, 300, 200}, 150, 100, scratch);
  EXPECT_EQ(r.scale_num, 4);
  EXPECT_EQ(r.y0, 40);
  EXPECT_EQ(r.height, 100);  // exactly the crop's rows
  // Columns start at an iMCU boundary: 16 px at full size for 4:2:0, 8 px at 4/8.
  EXPECT_EQ(r.x0 % 8, 0);
  EXPECT_LE(r.x0, 50);
  EXPECT_GT(r.x0, 50 - 8);
  EXPECT_GE(r.x0 + r.width, 200);
  EXPECT_LE(r.width, 150 + 8);  // of the scaled image's 250 columns
  EXPECT_DOUBLE_EQ(r.box.x, 50 - r.x0);
  EXPECT_DOUBLE_EQ(r.box.y, 0);
  EXPECT_DOUBLE_EQ(r.box.width, 150);
  EXPECT_DOUBLE_EQ(r.box.height, 100);

  // Same pixels as the whole image decoded at the same scale (500x375 -> 250x188 at 4/8).
  std::vector<std::uint8_t> whole_scratch;
  const DecodedRegion whole =
      decoder.decode_for_crop(jpeg, CropBox{0, 0, 500, 375}, 250, 187, whole_scratch);
  ASSERT_EQ(whole.scale_num, 4);
  ASSERT_EQ(whole.width, 250);
  ASSERT_EQ(whole.height, 188);
  int max_diff = 0;
  for (int y = 0; y < r.height; ++y) {
    for (int x = 0; x < r.width * 3; ++x) {
      const int a = r.pixels[static_cast<std::size_t>(y) * r.stride + x];
      const int b = whole.pixels[static_cast<std::size_t>(y + r.y0) * whole.stride + r.x0 * 3 + x];
      max_diff = std::max(max_diff, std::abs(a - b));
    }
  }
  EXPECT_LE(max_diff, 1);  // libjpeg-turbo's crop and skip decode the same samples
}

// The fast path (DCT-scaled region decode + fused resize) against the reference path (full
// TurboJPEG decode at full size + exact floating-point resize of the same crop).
TEST(DecodeForCrop, ScaledRegionDecodeAndResizeMatchTheFullSizeReference) {
  struct Case {
    int w, h;
    bool grey;
  };
  const Case cases[] = {{500, 375, false}, {333, 500, false}, {640, 480, false},
                        {160, 120, false}, {500, 375, true},  {1024, 700, false}};
  JpegDecoder decoder;
  std::vector<std::uint8_t> scratch;
  ResizeWorkspace ws;
  SplitMix rng(42);
  double worst = 99;
  for (const Case& c : cases) {
    const std::vector<std::uint8_t> jpeg =
        synth_test_jpeg(c.w, c.h, static_cast<std::uint64_t>(c.w * 7 + c.h), c.grey);
    JpegInfo info;
    const auto full = decode_jpeg_rgb(jpeg, &info);
    ASSERT_TRUE(full.has_value());
    for (int i = 0; i < 6; ++i) {
      CropBox box = random_resized_crop(c.w, c.h, rng);
      if (i == 0) box = CropBox{0, 0, c.w, c.h};  // the whole image: the largest scale-down
      const int ow = 224, oh = 224;
      const DecodedRegion r = decoder.decode_for_crop(jpeg, box, ow, oh, scratch);
      std::vector<std::uint8_t> fast(static_cast<std::size_t>(ow) * oh * 3);
      resize_crop_flip(r.pixels, r.width, r.height, r.stride, 3, r.box, false, ow, oh, fast.data(),
                       PixelLayout::hwc, ws);
      const std::vector<double> ref = test::reference_resize(*full, c.w, c.h, 3, box, ow, oh);
      const double p = psnr(fast, ref);
      worst = std::min(worst, p);
      EXPECT_GE(p, 30.0) << c.w << "x" << c.h << (c.grey ? " grey" : "") << " box " << box.x << ","
                         << box.y << " " << box.width << "x" << box.height << " scale "
                         << r.scale_num << "/8";
      if (c.grey) {
        for (std::size_t px = 0; px < fast.size(); px += 3) {
          ASSERT_EQ(fast[px], fast[px + 1]);
          ASSERT_EQ(fast[px], fast[px + 2]);
        }
      }
    }
  }
  RecordProperty("worst_psnr_db", std::to_string(worst));
}

TEST(DecodeAugment, IsDecodeForCropThenResizeWithTheDrawnBoxAndFlip) {
  const std::vector<std::uint8_t> jpeg = synth_test_jpeg(500, 333, 9);
  JpegDecoder decoder;
  DecodeScratch scratch;
  AugmentOptions options;
  std::vector<std::uint8_t> out(224 * 224 * 3), again(out.size()), expected(out.size());
  SplitMix rng_a(5), rng_b(5);
  for (int i = 0; i < 8; ++i) {
    const DecodeAugmentResult a = decoder.decode_augment(jpeg, rng_a, options, out.data(), scratch);
    const DecodeAugmentResult b =
        decoder.decode_augment(jpeg, rng_b, options, again.data(), scratch);
    EXPECT_EQ(a.box, b.box);
    EXPECT_EQ(out, again);  // same draws, same bytes
    EXPECT_EQ(a.info.width, 500);
    EXPECT_GT(a.decode_ns, 0);
    EXPECT_GT(a.augment_ns, 0);
    std::vector<std::uint8_t> region_scratch;
    const DecodedRegion r = decoder.decode_for_crop(jpeg, a.box, 224, 224, region_scratch);
    EXPECT_EQ(r.scale_num, a.scale_num);
    resize_crop_flip(r.pixels, r.width, r.height, r.stride, 3, r.box, a.flipped, 224, 224,
                     expected.data(), PixelLayout::hwc, scratch.resize);
    EXPECT_EQ(out, expected);
  }
}

TEST(DecodeAugment, ValidationIsTheCenterCropWithoutDraws) {
  const std::vector<std::uint8_t> jpeg = synth_test_jpeg(500, 375, 10);
  JpegDecoder decoder;
  DecodeScratch scratch;
  AugmentOptions options;
  options.train = false;
  options.layout = PixelLayout::chw;
  std::vector<std::uint8_t> out(224 * 224 * 3);
  struct NoDraws {
    double uniform() {
      ADD_FAILURE() << "validation drew a random number";
      return 0;
    }
  } rng;
  const DecodeAugmentResult r = decoder.decode_augment(jpeg, rng, options, out.data(), scratch);
  EXPECT_EQ(r.box, (CropBox{86, 23, 328, 328}));
  EXPECT_FALSE(r.flipped);
  EXPECT_EQ(r.scale_num, 8);  // 328 * 4/8 = 164 < 224: full size
}

void expect_failure(JpegDecoder& decoder, const std::vector<std::uint8_t>& bytes,
                    std::initializer_list<DecodeFailure> allowed, const std::string& what) {
  std::vector<std::uint8_t> scratch;
  try {
    const JpegImageInfo info = decoder.read_info(bytes);
    decoder.decode_for_crop(bytes, CropBox{0, 0, info.width, info.height}, 224, 224, scratch);
    ADD_FAILURE() << what << ": decoded without an error";
  } catch (const DecodeError& e) {
    EXPECT_NE(std::find(allowed.begin(), allowed.end(), e.failure()), allowed.end())
        << what << ": " << to_string(e.failure()) << ": " << e.what();
    EXPECT_EQ(e.kind(), ErrorKind::runtime);
  }
}

TEST(DecodeBadData, TruncatedFilesAreTruncatedOrCorruptAtEveryCut) {
  const std::vector<std::uint8_t> jpeg = synth_test_jpeg(320, 240, 11);
  JpegDecoder decoder;
  const std::size_t n = jpeg.size();
  for (std::size_t cut : {std::size_t{2}, std::size_t{3}, std::size_t{20}, std::size_t{200},
                          std::size_t{620}, n / 4, n / 2, n * 3 / 4, n - 100, n - 2}) {
    const std::vector<std::uint8_t> cut_jpeg(jpeg.begin(), jpeg.begin() + static_cast<long>(cut));
    expect_failure(decoder, cut_jpeg,
                   {DecodeFailure::truncated, DecodeFailure::corrupt, DecodeFailure::not_jpeg},
                   "cut at " + std::to_string(cut));
  }
  // Cuts in the entropy-coded data are reported as truncation.
  const std::vector<std::uint8_t> half(jpeg.begin(), jpeg.begin() + static_cast<long>(n / 2));
  expect_failure(decoder, half, {DecodeFailure::truncated}, "cut in half");
  // The decoder is still usable afterwards.
  std::vector<std::uint8_t> scratch;
  EXPECT_EQ(decoder.decode_for_crop(jpeg, CropBox{0, 0, 320, 240}, 224, 224, scratch).width, 320);
}

TEST(DecodeBadData, NotAJpegIsNotJpeg) {
  JpegDecoder decoder;
  expect_failure(decoder, {}, {DecodeFailure::not_jpeg}, "empty");
  const std::vector<std::uint8_t> png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n',
                                         0,    0,   0,   13,  'I',  'H',  'D',  'R'};
  expect_failure(decoder, png, {DecodeFailure::not_jpeg}, "PNG header");
  SplitMix rng(1);
  std::vector<std::uint8_t> noise(5000);
  for (auto& b : noise) b = static_cast<std::uint8_t>(rng.uniform() * 256);
  expect_failure(decoder, noise, {DecodeFailure::not_jpeg}, "random bytes");
  // Random bytes behind a start-of-image marker: a JPEG with nonsense in it.
  noise[0] = 0xFF;
  noise[1] = 0xD8;
  noise[2] = 0xFF;
  expect_failure(decoder, noise, {DecodeFailure::corrupt, DecodeFailure::truncated},
                 "SOI + random bytes");
}

TEST(DecodeBadData, DamagedBytesNeverCrash) {
  const std::vector<std::uint8_t> jpeg = synth_test_jpeg(200, 150, 12);
  JpegDecoder decoder;
  SplitMix rng(2);
  std::vector<std::uint8_t> scratch;
  int failures = 0;
  for (int i = 0; i < 200; ++i) {
    std::vector<std::uint8_t> damaged = jpeg;
    for (int k = 0; k < 4; ++k) {
      damaged[static_cast<std::size_t>(rng.uniform() * static_cast<double>(damaged.size()))] =
          static_cast<std::uint8_t>(rng.uniform() * 256);
    }
    try {
      const JpegImageInfo info = decoder.read_info(damaged);
      if (info.width > 4000 || info.height > 4000) continue;  // a damaged size field
      decoder.decode_for_crop(damaged, CropBox{0, 0, info.width, info.height}, 64, 64, scratch);
    } catch (const DecodeError&) {
      ++failures;
    }
  }
  EXPECT_GT(failures, 0);  // most damage is caught; none of it crashes
}

TEST(DecodeBadData, AFullDecodeOfAHugeClaimedFrameIsRefusedBeforeAllocating) {
  std::vector<std::uint8_t> jpeg = synth_test_jpeg(64, 48, 13);
  // The frame header (SOF0: FF C0, length, precision, height, width) claims 65500 x 65500
  // (libjpeg's largest): 12.9 GB of RGB from a file of a few kilobytes.
  const std::uint8_t marker[] = {0xFF, 0xC0};
  const auto sof = std::search(jpeg.begin(), jpeg.end(), std::begin(marker), std::end(marker));
  ASSERT_NE(sof, jpeg.end());
  for (int k : {5, 7}) sof[k] = 0xFF;
  for (int k : {6, 8}) sof[k] = 0xDC;
  const auto info = read_jpeg_header(jpeg);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->width, 65500);
  EXPECT_FALSE(decode_jpeg_rgb(jpeg, nullptr).has_value());
}

}  // namespace
}  // namespace gb::data
