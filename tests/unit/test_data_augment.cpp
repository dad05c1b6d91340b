// test_data_augment.cpp: RandomResizedCrop as torchvision draws it (a hand-computed example,
// the fallback, ranges over many draws), the flip draw, the validation center crop, and the
// fused crop + resize + flip kernel against a straightforward floating-point reference of
// PIL's antialiased bilinear filter (in both layouts, RGB and grey).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "data/augment.hpp"
#include "test_data_util.hpp"

namespace gb::test {

// Plays back fixed draws, then repeats the last one; counts what was drawn.
class FixedSource {
 public:
  explicit FixedSource(std::vector<double> draws) : draws_(std::move(draws)) {}
  double uniform() {
    const double v = draws_[std::min(next_, draws_.size() - 1)];
    ++next_;
    return v;
  }
  std::size_t drawn() const { return next_; }

 private:
  std::vector<double> draws_;
  std::size_t next_ = 0;
};

// The reference: PIL's antialiased bilinear resize of a crop written the plain way, in double
// precision with no intermediate rounding: each output pixel is the sum over the crop's pixels
// of wy * wx * pixel, with triangle weights normalised per axis (computed separably, which is
// the same sum). HWC, channels interleaved. Also used by test_data_decode.cpp.
std::vector<double> reference_resize(const std::vector<std::uint8_t>& src, int src_w, int src_h,
                                     int channels, const data::CropRect& box, int out_w,
                                     int out_h) {
  using Taps = std::vector<std::pair<int, double>>;
  const auto axis_taps = [](double start, double length, int size, int out) {
    std::vector<Taps> all(static_cast<std::size_t>(out));
    const double scale = length / out;
    const double support = std::max(scale, 1.0);
    const int lo = static_cast<int>(std::floor(start + 1e-6));
    const int hi = std::min(size, static_cast<int>(std::ceil(start + length - 1e-6)));
    for (int i = 0; i < out; ++i) {
      const double center = start + (i + 0.5) * scale;
      double total = 0;
      for (int p = lo; p < hi; ++p) {
        const double t = std::fabs((p + 0.5 - center) / support);
        if (t < 1.0) {
          all[static_cast<std::size_t>(i)].push_back({p, 1.0 - t});
          total += 1.0 - t;
        }
      }
      for (auto& tap : all[static_cast<std::size_t>(i)]) tap.second /= total;
    }
    return all;
  };
  const std::vector<Taps> wx = axis_taps(box.x, box.width, src_w, out_w);
  const std::vector<Taps> wy = axis_taps(box.y, box.height, src_h, out_h);
  // Horizontal sums of every source row, then vertical sums of those.
  const std::size_t row = static_cast<std::size_t>(out_w) * channels;
  std::vector<double> rows(static_cast<std::size_t>(src_h) * row, 0.0);
  for (int y = 0; y < src_h; ++y) {
    for (int x = 0; x < out_w; ++x) {
      for (int c = 0; c < channels; ++c) {
        double v = 0;
        for (const auto& [px, k] : wx[static_cast<std::size_t>(x)]) {
          v += k * src[(static_cast<std::size_t>(y) * src_w + px) * channels + c];
        }
        rows[y * row + static_cast<std::size_t>(x) * channels + c] = v;
      }
    }
  }
  std::vector<double> out(static_cast<std::size_t>(out_h) * row, 0.0);
  for (int y = 0; y < out_h; ++y) {
    for (const auto& [py, k] : wy[static_cast<std::size_t>(y)]) {
      for (std::size_t i = 0; i < row; ++i) out[y * row + i] += k * rows[py * row + i];
    }
  }
  return out;
}

}  // namespace gb::test

namespace gb::data {
namespace {

using test::FixedSource;
using test::SplitMixSource;

// A photo-like test image: smooth gradients plus texture at a few scales.
std::vector<std::uint8_t> test_image(int w, int h, int channels) {
  std::vector<std::uint8_t> img(static_cast<std::size_t>(w) * h * channels);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      for (int c = 0; c < channels; ++c) {
        const double v = 128 + 60 * std::sin(x * 0.05 + c) * std::cos(y * 0.04) +
                         30 * std::sin(x * 0.7 + y * 0.3 + c * 2) + ((x * 31 + y * 17) % 23);
        img[(static_cast<std::size_t>(y) * w + x) * channels + c] =
            static_cast<std::uint8_t>(std::clamp(v, 0.0, 255.0));
      }
    }
  }
  return img;
}

// torchvision, fixed draws, 500x375: area 0.08 + 0.5 * 0.92 = 54 % (101,250 px); log-ratio a
// quarter of the way from log(3/4) to log(4/3), ratio sqrt(3/4) = 0.866; w = round(sqrt(101250
// * 0.866)) = 296, h = round(sqrt(101250 / 0.866)) = 342; top = floor(0.5 * 34) = 17, left =
// floor(0.1 * 205) = 20.
TEST(AugmentRandomResizedCrop, MatchesTorchvisionForFixedDraws) {
  FixedSource rng({0.5, 0.25, 0.5, 0.1});
  EXPECT_EQ(random_resized_crop(500, 375, rng), (CropBox{20, 17, 296, 342}));
  EXPECT_EQ(rng.drawn(), 4u);
}

TEST(AugmentRandomResizedCrop, RetriesWhenABoxDoesNotFit) {
  // First attempt: ~100 % of the area at ratio 4/3 is 283 px wide, more than the 200x300
  // image's width; the second (8 % of the area, ratio 1) fits.
  FixedSource rng({0.999, 0.999, 0.0, 0.5, 0.5, 0.5});
  const CropBox box = random_resized_crop(200, 300, rng);
  EXPECT_EQ(box.width, 69);  // round(sqrt(0.08 * 60000))
  EXPECT_EQ(box.height, 69);
  EXPECT_EQ(rng.drawn(), 6u);
}

TEST(AugmentRandomResizedCrop, FallsBackToTheCenterCropAfterTenMisses) {
  // 1000x100 is far wider than 4/3: a box of ~100 % of the area never fits its 100 rows.
  FixedSource rng({0.999});
  EXPECT_EQ(random_resized_crop(1000, 100, rng), (CropBox{433, 0, 133, 100}));
  EXPECT_EQ(rng.drawn(), 20u);  // 10 attempts x (area, ratio)
  // Too tall: the width is kept, the height becomes round(w / (3/4)).
  FixedSource tall({0.999});
  EXPECT_EQ(random_resized_crop(100, 1000, tall), (CropBox{0, 433, 100, 133}));
  // Ties round to even as Python's round(): h = 1, w = round(1 * 2.5) = 2.
  FixedSource tie({0.999});
  EXPECT_EQ(random_resized_crop(100, 1, tie, {}, {1.0, 2.5}), (CropBox{49, 0, 2, 1}));
}

TEST(AugmentRandomResizedCrop, BoxesStayInsideAndFollowTheScaleAndRatioRanges) {
  SplitMixSource rng(7);
  const int sizes[][2] = {{500, 375}, {375, 500}, {500, 333}, {64, 64}, {1200, 80}, {3, 2}};
  for (const auto& size : sizes) {
    const int w = size[0], h = size[1];
    int inside_range = 0;
    const int n = 2000;
    for (int i = 0; i < n; ++i) {
      const CropBox b = random_resized_crop(w, h, rng);
      ASSERT_GT(b.width, 0);
      ASSERT_GT(b.height, 0);
      ASSERT_GE(b.x, 0);
      ASSERT_GE(b.y, 0);
      ASSERT_LE(b.x + b.width, w);
      ASSERT_LE(b.y + b.height, h);
      const double share = static_cast<double>(b.width) * b.height / (static_cast<double>(w) * h);
      const double ratio = static_cast<double>(b.width) / b.height;
      // Rounding to whole pixels moves small boxes a little outside the ranges.
      if (share > 0.07 && share <= 1.0 && ratio > 0.7 && ratio < 1.4) ++inside_range;
    }
    if (w >= 64 && h >= 64) {
      EXPECT_EQ(inside_range, n) << w << "x" << h;
    }
  }
}

TEST(AugmentRandomResizedCrop, MeanAreaShareIsThatOfUniformDrawsWithRetries) {
  SplitMixSource rng(11);
  double sum = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    const CropBox b = random_resized_crop(1000, 1000, rng);
    sum += b.width * static_cast<double>(b.height) / 1e6;
  }
  // Uniform in [0.08, 1] would average 0.54; on a square image a box of area share s and
  // ratio r fits only when s <= min(r, 1/r), so large areas are redrawn more often. The mean
  // of that process (simulated, 400k draws) is 0.478.
  EXPECT_NEAR(sum / n, 0.478, 0.01);
}

TEST(AugmentFlip, FlipsWhenTheDrawIsBelowP) {
  FixedSource low({0.49});
  EXPECT_TRUE(random_flip(low));
  FixedSource high({0.5});
  EXPECT_FALSE(random_flip(high));
  SplitMixSource rng(3);
  int flips = 0;
  for (int i = 0; i < 10000; ++i) flips += random_flip(rng) ? 1 : 0;
  EXPECT_NEAR(flips, 5000, 250);
}

TEST(AugmentCenterCrop, IsTorchvisionsResizeThenCenterCropInSourcePixels) {
  // Resize(256): 500x375 -> 341x256; CenterCrop(224) covers 224 * 375/256 = 328 px.
  EXPECT_EQ(center_crop_box(500, 375, 256, 224, 224), (CropBox{86, 23, 328, 328}));
  EXPECT_EQ(center_crop_box(375, 500, 256, 224, 224), (CropBox{23, 86, 328, 328}));
  EXPECT_EQ(center_crop_box(256, 256, 256, 224, 224), (CropBox{16, 16, 224, 224}));
  // A crop larger than the resized image is clamped to the image.
  EXPECT_EQ(center_crop_box(100, 50, 20, 224, 224), (CropBox{0, 0, 100, 50}));
}

TEST(AugmentResize, SameSizeFullBoxIsACopy) {
  const std::vector<std::uint8_t> img = test_image(40, 30, 3);
  std::vector<std::uint8_t> out(img.size());
  ResizeWorkspace ws;
  resize_crop_flip(img.data(), 40, 30, 40 * 3, 3, CropBox{0, 0, 40, 30}, false, 40, 30, out.data(),
                   PixelLayout::hwc, ws);
  EXPECT_EQ(out, img);
}

TEST(AugmentResize, MatchesTheFloatingPointReferenceWithinOneLevel) {
  const int w = 500, h = 375;
  for (int channels : {3, 1}) {
    const std::vector<std::uint8_t> img = test_image(w, h, channels);
    ResizeWorkspace ws;
    // Downscale 3x, downscale ~1.3x with an odd box, upscale, a thin box, a fractional box.
    const CropRect boxes[] = {CropBox{0, 0, 500, 375}, CropBox{37, 11, 296, 342},
                              CropBox{200, 100, 50, 60}, CropBox{0, 300, 500, 75},
                              CropRect{10.25, 3.5, 250.5, 199.75}};
    for (const CropRect& box : boxes) {
      const int ow = 224, oh = 224;
      std::vector<std::uint8_t> out(static_cast<std::size_t>(ow) * oh * channels);
      resize_crop_flip(img.data(), w, h, w * channels, channels, box, false, ow, oh, out.data(),
                       PixelLayout::hwc, ws);
      const std::vector<double> ref = test::reference_resize(img, w, h, channels, box, ow, oh);
      double max_diff = 0, sum_diff = 0;
      for (std::size_t i = 0; i < out.size(); ++i) {
        const double d = std::fabs(out[i] - ref[i]);
        max_diff = std::max(max_diff, d);
        sum_diff += d;
      }
      // Two roundings to 8 bits (after each pass) stay within about one level.
      EXPECT_LE(max_diff, 1.5) << "box at " << box.x << "," << box.y << " c=" << channels;
      EXPECT_LT(sum_diff / static_cast<double>(out.size()), 0.5);
    }
  }
}

TEST(AugmentResize, FlipMirrorsEachRow) {
  const std::vector<std::uint8_t> img = test_image(300, 200, 3);
  const int ow = 64, oh = 48;
  std::vector<std::uint8_t> plain(static_cast<std::size_t>(ow) * oh * 3);
  std::vector<std::uint8_t> flipped(plain.size());
  ResizeWorkspace ws;
  const CropBox box{13, 7, 211, 150};
  resize_crop_flip(img.data(), 300, 200, 900, 3, box, false, ow, oh, plain.data(), PixelLayout::hwc,
                   ws);
  resize_crop_flip(img.data(), 300, 200, 900, 3, box, true, ow, oh, flipped.data(),
                   PixelLayout::hwc, ws);
  for (int y = 0; y < oh; ++y) {
    for (int x = 0; x < ow; ++x) {
      for (int c = 0; c < 3; ++c) {
        ASSERT_EQ(flipped[(static_cast<std::size_t>(y) * ow + x) * 3 + c],
                  plain[(static_cast<std::size_t>(y) * ow + (ow - 1 - x)) * 3 + c]);
      }
    }
  }
  EXPECT_NE(plain, flipped);
}

TEST(AugmentResize, ChwHoldsTheSamePixelsAsHwcOnePlanePerChannel) {
  const std::vector<std::uint8_t> img = test_image(320, 240, 3);
  const int ow = 50, oh = 40;
  std::vector<std::uint8_t> hwc(static_cast<std::size_t>(ow) * oh * 3), chw(hwc.size());
  ResizeWorkspace ws;
  for (bool flip : {false, true}) {
    resize_crop_flip(img.data(), 320, 240, 960, 3, CropBox{5, 6, 200, 170}, flip, ow, oh,
                     hwc.data(), PixelLayout::hwc, ws);
    resize_crop_flip(img.data(), 320, 240, 960, 3, CropBox{5, 6, 200, 170}, flip, ow, oh,
                     chw.data(), PixelLayout::chw, ws);
    for (int c = 0; c < 3; ++c) {
      for (int i = 0; i < ow * oh; ++i) {
        ASSERT_EQ(chw[static_cast<std::size_t>(c) * ow * oh + i],
                  hwc[static_cast<std::size_t>(i) * 3 + c]);
      }
    }
  }
}

TEST(AugmentResize, HonoursTheSourceStrideAndAReusedWorkspace) {
  const int w = 120, h = 90, stride = w * 3 + 40;  // padded rows
  const std::vector<std::uint8_t> packed = test_image(w, h, 3);
  std::vector<std::uint8_t> padded(static_cast<std::size_t>(stride) * h, 0xEE);
  for (int y = 0; y < h; ++y) {
    std::copy_n(&packed[static_cast<std::size_t>(y) * w * 3], w * 3,
                &padded[static_cast<std::size_t>(y) * stride]);
  }
  std::vector<std::uint8_t> a(32 * 32 * 3), b(a.size());
  ResizeWorkspace fresh, reused;
  std::vector<std::uint8_t> big(224 * 224 * 3);
  resize_crop_flip(padded.data(), w, h, stride, 3, CropBox{0, 0, w, h}, false, 224, 224, big.data(),
                   PixelLayout::hwc, reused);
  resize_crop_flip(packed.data(), w, h, w * 3, 3, CropBox{60, 10, 60, 80}, false, 32, 32, a.data(),
                   PixelLayout::hwc, fresh);
  resize_crop_flip(padded.data(), w, h, stride, 3, CropBox{60, 10, 60, 80}, false, 32, 32, b.data(),
                   PixelLayout::hwc, reused);
  EXPECT_EQ(a, b);
}

// RGB rows go through the two-pixels-per-vector horizontal pass, grey rows through the scalar
// one: both must give the same bytes, at even and odd output widths, flipped or not.
TEST(AugmentResize, EachChannelOfAnRgbResizeIsTheGreyResizeOfThatChannel) {
  const int w = 300, h = 200;
  const std::vector<std::uint8_t> rgb = test_image(w, h, 3);
  ResizeWorkspace ws;
  const CropRect boxes[] = {CropBox{13, 7, 211, 150}, CropRect{0.5, 1.25, 290.5, 180.75},
                            CropBox{100, 50, 40, 30}};
  for (const CropRect& box : boxes) {
    for (int ow : {224, 51, 11}) {
      for (bool flip : {false, true}) {
        const int oh = 37;
        std::vector<std::uint8_t> out(static_cast<std::size_t>(ow) * oh * 3);
        resize_crop_flip(rgb.data(), w, h, w * 3, 3, box, flip, ow, oh, out.data(),
                         PixelLayout::chw, ws);
        for (int c = 0; c < 3; ++c) {
          std::vector<std::uint8_t> plane(static_cast<std::size_t>(w) * h);
          for (std::size_t i = 0; i < plane.size(); ++i) plane[i] = rgb[i * 3 + c];
          std::vector<std::uint8_t> grey(static_cast<std::size_t>(ow) * oh);
          ResizeWorkspace grey_ws;
          resize_crop_flip(plane.data(), w, h, w, 1, box, flip, ow, oh, grey.data(),
                           PixelLayout::hwc, grey_ws);
          ASSERT_TRUE(std::equal(grey.begin(), grey.end(), out.begin() + c * grey.size()))
              << "box at " << box.x << "," << box.y << " out_w " << ow << " flip " << flip
              << " channel " << c;
        }
      }
    }
  }
}

TEST(AugmentResize, RejectsABoxOutsideTheImage) {
  const std::vector<std::uint8_t> img = test_image(10, 10, 3);
  std::vector<std::uint8_t> out(8 * 8 * 3);
  ResizeWorkspace ws;
  EXPECT_THROW(resize_crop_flip(img.data(), 10, 10, 30, 3, CropBox{5, 0, 6, 10}, false, 8, 8,
                                out.data(), PixelLayout::hwc, ws),
               Error);
  EXPECT_THROW(resize_crop_flip(img.data(), 10, 10, 30, 3, CropBox{0, 0, 0, 10}, false, 8, 8,
                                out.data(), PixelLayout::hwc, ws),
               Error);
  EXPECT_THROW(resize_crop_flip(img.data(), 10, 10, 30, 4, CropBox{0, 0, 10, 10}, false, 8, 8,
                                out.data(), PixelLayout::hwc, ws),
               Error);
}

}  // namespace
}  // namespace gb::data
