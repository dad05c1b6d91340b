// test_data_normalize.cpp: the CPU reference of the loader's normalization (the GPU kernel is
// checked against it in tests/gpu/test_normalize.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/error.hpp"
#include "core/float_bits.hpp"
#include "data/normalize.hpp"

namespace gb::data {
namespace {

TEST(Normalize, ImageNetValuesInBothLayouts) {
  // One image, 1 x 2 pixels, RGB: (0, 128, 255) and (255, 0, 128).
  const std::vector<std::uint8_t> src = {0, 128, 255, 255, 0, 128};
  const BatchShape s{1, 1, 2, 3};
  const Normalization n = imagenet_normalization();
  std::vector<float> nchw(6), nhwc(6);
  normalize_reference(src.data(), s, TensorLayout::nchw, ElementType::f32, n, nchw.data());
  normalize_reference(src.data(), s, TensorLayout::nhwc, ElementType::f32, n, nhwc.data());
  EXPECT_NEAR(nchw[0], (0 - 0.485 * 255) / (0.229 * 255), 1e-5);  // R of pixel 0
  EXPECT_NEAR(nchw[1], (255 - 0.485 * 255) / (0.229 * 255), 1e-5);  // R of pixel 1
  EXPECT_NEAR(nchw[2], (128 - 0.456 * 255) / (0.224 * 255), 1e-5);  // G of pixel 0
  EXPECT_NEAR(nhwc[1], nchw[2], 0);                                 // G of pixel 0
  EXPECT_NEAR(nhwc[3], nchw[1], 0);                                 // R of pixel 1
}

TEST(Normalize, HalfAndBfloatAreTheRoundedFloat) {
  const std::vector<std::uint8_t> src = {17, 200, 99};
  const BatchShape s{1, 1, 1, 3};
  const Normalization n = imagenet_normalization();
  std::vector<float> f(3);
  std::vector<std::uint16_t> h(3), b(3);
  normalize_reference(src.data(), s, TensorLayout::nchw, ElementType::f32, n, f.data());
  normalize_reference(src.data(), s, TensorLayout::nchw, ElementType::f16, n, h.data());
  normalize_reference(src.data(), s, TensorLayout::nchw, ElementType::bf16, n, b.data());
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(h[i], float_to_half_bits(f[i]));
    EXPECT_EQ(b[i], float_to_bf16_bits(f[i]));
    EXPECT_NEAR(half_bits_to_float(h[i]), f[i], 2e-3);
  }
}

TEST(Normalize, RejectsMoreThanFourChannels) {
  std::vector<std::uint8_t> src(5);
  std::vector<float> dst(5);
  EXPECT_THROW(normalize_reference(src.data(), BatchShape{1, 1, 1, 5}, TensorLayout::nchw,
                                   ElementType::f32, Normalization{}, dst.data()),
               std::exception);
}

TEST(Normalize, RejectsAnElementTypeOtherThanFp32Fp16Bf16) {
  std::vector<std::uint8_t> src(3);
  std::vector<double> dst(3);
  EXPECT_THROW(normalize_reference(src.data(), BatchShape{1, 1, 1, 3}, TensorLayout::nchw,
                                   ElementType::f64, Normalization{}, dst.data()),
               Error);
}

}  // namespace
}  // namespace gb::data
