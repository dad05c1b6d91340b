// tests/gpu/test_resize_crop.cpp: the GPU decode path's resize-crop-flip-normalize kernel
// (gpu/resize_crop.hpp) against the CPU path (data::resize_crop_flip, then data::normalized) on
// the same RGB image, crop and flip: upscales, downscales, a > 2x downscale (antialiased), odd
// sizes, both flips, NCHW and NHWC, several images in one batch.
//
// Tolerance: the CPU rounds to uint8 between its two fixed-point passes, the GPU sums in float
// in one pass; both round the result to a uint8 level before normalizing. The intermediate
// rounding moves the CPU's value by at most half a level, so the two levels differ by at most 1:
// asserted as max |difference| <= 1 level (fp32 output, read back in pixel units), and PSNR >=
// 50 dB over the image.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "data/augment.hpp"
#include "data/normalize.hpp"
#include "gpu/cuda_raii.hpp"
#include "gpu/resize_crop.hpp"

namespace gb::gpu {
namespace {

bool has_gpu() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

// A photo-like RGB image: gradients, a few frequencies and grain (not flat, not white noise).
std::vector<std::uint8_t> test_image(int w, int h, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> grain(0, 6);
  std::vector<std::uint8_t> px(static_cast<std::size_t>(w) * h * 3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c) {
        const double v = 128 + 60 * std::sin(x * (0.03 + 0.02 * c) + y * 0.05) +
                         40 * std::cos(y * 0.11 - x * 0.07 * (c + 1)) + 30.0 * x / w -
                         20.0 * y / h + grain(gen);
        px[(static_cast<std::size_t>(y) * w + x) * 3 + c] =
            static_cast<std::uint8_t>(std::clamp(std::lround(v), 0L, 255L));
      }
  return px;
}

struct Case {
  data::CropBox box;
  bool flip;
};

struct Comparison {
  double max_abs = 0;
  double psnr_db = 0;
};

// Runs the kernel on `cases` (one batch, all out_w x out_h) and compares each image with the CPU.
Comparison compare(const std::vector<std::uint8_t>& img, int w, int h,
                   const std::vector<Case>& cases, int out_w, int out_h, bool nchw) {
  const data::Normalization norm = data::imagenet_normalization();
  DeviceBuffer d_img(img.size());
  GB_CHECK_CUDA(cudaMemcpy(d_img.data(), img.data(), img.size(), cudaMemcpyHostToDevice));
  std::vector<ResizeCropItem> items;
  for (const Case& c : cases) {
    ResizeCropItem it;
    it.src = d_img.as<std::uint8_t>();
    it.width = w;
    it.height = h;
    it.pitch = w * 3;
    it.crop_x = static_cast<float>(c.box.x);
    it.crop_y = static_cast<float>(c.box.y);
    it.crop_w = static_cast<float>(c.box.width);
    it.crop_h = static_cast<float>(c.box.height);
    it.flip = c.flip ? 1 : 0;
    items.push_back(it);
  }
  DeviceBuffer d_items(items.size() * sizeof(ResizeCropItem));
  GB_CHECK_CUDA(cudaMemcpy(d_items.data(), items.data(), d_items.bytes(), cudaMemcpyHostToDevice));
  const int n = static_cast<int>(cases.size());
  const std::size_t plane = static_cast<std::size_t>(out_w) * out_h;
  DeviceBuffer d_out(n * plane * 3 * sizeof(float));
  resize_crop_normalize(d_items.as<ResizeCropItem>(), NormalizeShape{n, out_h, out_w, 3, nchw},
                        ElementType::f32, norm.mean.data(), norm.stddev.data(), d_out.data(),
                        nullptr);
  std::vector<float> got(n * plane * 3);
  GB_CHECK_CUDA(cudaMemcpy(got.data(), d_out.data(), d_out.bytes(), cudaMemcpyDeviceToHost));

  Comparison cmp;
  double sq = 0;
  data::ResizeWorkspace ws;
  std::vector<std::uint8_t> want(plane * 3);
  for (int i = 0; i < n; ++i) {
    data::resize_crop_flip(img.data(), w, h, w * 3, 3, data::CropRect(cases[i].box), cases[i].flip,
                           out_w, out_h, want.data(), data::PixelLayout::hwc, ws);
    for (std::size_t p = 0; p < plane; ++p)
      for (int c = 0; c < 3; ++c) {
        const std::size_t at = nchw ? (static_cast<std::size_t>(i) * 3 + c) * plane + p
                                    : (static_cast<std::size_t>(i) * plane + p) * 3 + c;
        const double level = static_cast<double>(got[at]) * norm.stddev[c] + norm.mean[c];
        const double d = level - want[p * 3 + c];
        cmp.max_abs = std::max(cmp.max_abs, std::fabs(d));
        sq += d * d;
      }
  }
  const double mse = sq / static_cast<double>(n * plane * 3);
  cmp.psnr_db = mse > 0 ? 10 * std::log10(255.0 * 255.0 / mse) : 99;
  return cmp;
}

constexpr double kMaxLevels = 1.0 + 1e-3;  // one level, plus float slack of the read-back
constexpr double kMinPsnrDb = 50;

TEST(ResizeCropKernel, MatchesTheCpuPathOnRandomResizedCropBoxes) {
  if (!has_gpu()) GTEST_SKIP() << "no CUDA device";
  const int w = 500, h = 375;
  const auto img = test_image(w, h, 1);
  // The boxes of a real epoch: the CPU path's own draws.
  std::vector<Case> cases;
  for (std::uint64_t s = 0; s < 16; ++s) {
    data::Philox rng(7, 0, s);
    const data::CropBox box = data::random_resized_crop(w, h, rng);
    cases.push_back({box, data::random_flip(rng)});
  }
  for (const bool nchw : {true, false}) {
    const Comparison c = compare(img, w, h, cases, 224, 224, nchw);
    EXPECT_LE(c.max_abs, kMaxLevels) << (nchw ? "NCHW" : "NHWC");
    EXPECT_GE(c.psnr_db, kMinPsnrDb) << (nchw ? "NCHW" : "NHWC");
  }
}

TEST(ResizeCropKernel, UpscalesASmallCropLikeTheCpu) {
  if (!has_gpu()) GTEST_SKIP() << "no CUDA device";
  const auto img = test_image(120, 90, 2);
  const Comparison c =
      compare(img, 120, 90, {{{10, 7, 37, 29}, false}, {{0, 0, 120, 90}, true}}, 224, 224, true);
  EXPECT_LE(c.max_abs, kMaxLevels);
  EXPECT_GE(c.psnr_db, kMinPsnrDb);
}

TEST(ResizeCropKernel, AntialiasesALargeDownscaleLikeTheCpu) {
  if (!has_gpu()) GTEST_SKIP() << "no CUDA device";
  const int w = 1600, h = 1200;
  const auto img = test_image(w, h, 3);
  // 7x and 25x downscales: the triangle spans 7 and 25 source pixels each side.
  const Comparison c = compare(
      img, w, h, {{{100, 50, 1400, 1100}, false}, {{0, 0, 1600, 1200}, true}}, 64, 48, true);
  EXPECT_LE(c.max_abs, kMaxLevels);
  EXPECT_GE(c.psnr_db, kMinPsnrDb);
}

TEST(ResizeCropKernel, OddSizesAndEdgeBoxes) {
  if (!has_gpu()) GTEST_SKIP() << "no CUDA device";
  const int w = 333, h = 501;
  const auto img = test_image(w, h, 4);
  const Comparison c = compare(img, w, h,
                               {{{0, 0, 1, 1}, false},
                                {{332, 500, 1, 1}, true},
                                {{300, 1, 33, 500}, true},
                                {{5, 400, 91, 37}, false}},
                               31, 17, false);
  EXPECT_LE(c.max_abs, kMaxLevels);
  EXPECT_GE(c.psnr_db, kMinPsnrDb);
}

TEST(ResizeCropKernel, AnInvalidImageIsWrittenAsZeros) {
  if (!has_gpu()) GTEST_SKIP() << "no CUDA device";
  ResizeCropItem it;
  it.valid = 0;
  DeviceBuffer d_items(sizeof it);
  GB_CHECK_CUDA(cudaMemcpy(d_items.data(), &it, sizeof it, cudaMemcpyHostToDevice));
  const std::size_t elements = 8 * 8 * 3;
  DeviceBuffer d_out(elements * sizeof(float));
  GB_CHECK_CUDA(cudaMemset(d_out.data(), 0xff, d_out.bytes()));
  const float mean[4] = {1, 2, 3, 0}, sd[4] = {1, 1, 1, 1};
  resize_crop_normalize(d_items.as<ResizeCropItem>(), NormalizeShape{1, 8, 8, 3, true},
                        ElementType::f32, mean, sd, d_out.data(), nullptr);
  std::vector<float> got(elements);
  GB_CHECK_CUDA(cudaMemcpy(got.data(), d_out.data(), d_out.bytes(), cudaMemcpyDeviceToHost));
  for (const float v : got) EXPECT_EQ(v, 0.0f);
}

TEST(ResizeCropKernel, Bf16OutputRoundsTheFp32Values) {
  if (!has_gpu()) GTEST_SKIP() << "no CUDA device";
  const int w = 64, h = 48;
  const auto img = test_image(w, h, 5);
  DeviceBuffer d_img(img.size());
  GB_CHECK_CUDA(cudaMemcpy(d_img.data(), img.data(), img.size(), cudaMemcpyHostToDevice));
  ResizeCropItem it;
  it.src = d_img.as<std::uint8_t>();
  it.width = w;
  it.height = h;
  it.pitch = w * 3;
  it.crop_w = static_cast<float>(w);
  it.crop_h = static_cast<float>(h);
  DeviceBuffer d_items(sizeof it);
  GB_CHECK_CUDA(cudaMemcpy(d_items.data(), &it, sizeof it, cudaMemcpyHostToDevice));
  const data::Normalization norm = data::imagenet_normalization();
  const std::size_t elements = 32 * 32 * 3;
  DeviceBuffer d_f32(elements * 4), d_bf16(elements * 2);
  for (const auto& [type, buf] : {std::pair<ElementType, void*>{ElementType::f32, d_f32.data()},
                                  {ElementType::bf16, d_bf16.data()}})
    resize_crop_normalize(d_items.as<ResizeCropItem>(), NormalizeShape{1, 32, 32, 3, true}, type,
                          norm.mean.data(), norm.stddev.data(), buf, nullptr);
  std::vector<float> f32(elements);
  std::vector<std::uint16_t> bf16(elements);
  GB_CHECK_CUDA(cudaMemcpy(f32.data(), d_f32.data(), d_f32.bytes(), cudaMemcpyDeviceToHost));
  GB_CHECK_CUDA(cudaMemcpy(bf16.data(), d_bf16.data(), d_bf16.bytes(), cudaMemcpyDeviceToHost));
  for (std::size_t i = 0; i < elements; ++i) {
    std::uint32_t bits = static_cast<std::uint32_t>(bf16[i]) << 16;
    float v = 0;
    std::memcpy(&v, &bits, sizeof v);
    EXPECT_NEAR(v, f32[i], std::fabs(f32[i]) / 128 + 1e-6) << i;  // bf16: 8 significant bits
  }
}

}  // namespace
}  // namespace gb::gpu
