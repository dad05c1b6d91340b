// tests/unit/test_gpu_host_numeric.cpp: the host half of the GEMM check (gpu/host_numeric),
// on the CPU: the FP16/BF16/FP8 E4M3 converters (known codes, ties to even, saturation, every
// code round-tripped), the fill hash's ranges, the sampled-output validator (a right answer
// passes, one corrupted or NaN output fails), the TN/NN operand indexing and the sample picker. Built only with CUDA (the
// file lives in gb_gpu), runs without a GPU: no CUDA call is made.
#ifdef GPUBASE_WITH_CUDA
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "gpu/host_numeric.hpp"

namespace gb::gpu {
namespace {

// --- FP16 --------------------------------------------------------------------------------------

TEST(HalfBits, DecodesKnownCodes) {
  EXPECT_EQ(half_bits_to_float(0x3C00), 1.0f);
  EXPECT_EQ(half_bits_to_float(0xC000), -2.0f);
  EXPECT_EQ(half_bits_to_float(0x7BFF), 65504.0f);
  EXPECT_EQ(half_bits_to_float(0x0400), std::ldexp(1.0f, -14));  // smallest normal
  EXPECT_EQ(half_bits_to_float(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(half_bits_to_float(0x3555), 0.333251953125f);
  EXPECT_TRUE(std::isinf(half_bits_to_float(0x7C00)));
  EXPECT_TRUE(std::isnan(half_bits_to_float(0x7E00)));
  EXPECT_TRUE(std::signbit(half_bits_to_float(0x8000)));
}

TEST(HalfBits, EncodesToNearestTiesToEven) {
  EXPECT_EQ(float_to_half_bits(1.0f), 0x3C00);
  EXPECT_EQ(float_to_half_bits(1.0f + std::ldexp(1.0f, -11)), 0x3C00);      // tie -> even
  EXPECT_EQ(float_to_half_bits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);  // tie -> even
  EXPECT_EQ(float_to_half_bits(1.0f + std::ldexp(1.1f, -11)), 0x3C01);      // above the tie
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -25)), 0x0000);             // tie -> 0
  EXPECT_EQ(float_to_half_bits(std::ldexp(3.0f, -26)), 0x0001);
  EXPECT_EQ(float_to_half_bits(65519.0f), 0x7BFF);
  EXPECT_EQ(float_to_half_bits(65520.0f), 0x7C00);  // rounds past the largest finite: inf
  EXPECT_EQ(float_to_half_bits(-1e9f), 0xFC00);
  EXPECT_EQ(float_to_half_bits(-0.0f), 0x8000);
}

TEST(HalfBits, EveryFiniteCodeRoundTrips) {
  for (std::uint32_t code = 0; code < 0x10000; ++code) {
    const auto bits = static_cast<std::uint16_t>(code);
    const float f = half_bits_to_float(bits);
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_half_bits(f), bits) << std::hex << code;
  }
}

// --- BF16 --------------------------------------------------------------------------------------

TEST(Bf16Bits, DecodesAndEncodesKnownValues) {
  EXPECT_EQ(bf16_bits_to_float(0x3F80), 1.0f);
  EXPECT_EQ(bf16_bits_to_float(0xC040), -3.0f);
  EXPECT_EQ(float_to_bf16_bits(1.0f), 0x3F80);
  EXPECT_EQ(float_to_bf16_bits(1.0f + std::ldexp(1.0f, -8)), 0x3F80);      // tie -> even
  EXPECT_EQ(float_to_bf16_bits(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);  // tie -> even
  EXPECT_EQ(float_to_bf16_bits(1.0f + std::ldexp(1.0f, -9)), 0x3F80);
  EXPECT_TRUE(std::isnan(bf16_bits_to_float(float_to_bf16_bits(NAN))));
  EXPECT_EQ(float_to_bf16_bits(INFINITY), 0x7F80);
}

TEST(Bf16Bits, EveryFiniteCodeRoundTrips) {
  for (std::uint32_t code = 0; code < 0x10000; ++code) {
    const auto bits = static_cast<std::uint16_t>(code);
    const float f = bf16_bits_to_float(bits);
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_bf16_bits(f), bits) << std::hex << code;
  }
}

// --- FP8 E4M3 ----------------------------------------------------------------------------------

TEST(E4m3Bits, DecodesKnownCodes) {
  EXPECT_EQ(e4m3_bits_to_float(0x38), 1.0f);    // exponent 7 = bias
  EXPECT_EQ(e4m3_bits_to_float(0x7E), 448.0f);  // largest finite
  EXPECT_EQ(e4m3_bits_to_float(0xFE), -448.0f);
  EXPECT_EQ(e4m3_bits_to_float(0x08), std::ldexp(1.0f, -6));  // smallest normal
  EXPECT_EQ(e4m3_bits_to_float(0x01), std::ldexp(1.0f, -9));  // smallest subnormal
  EXPECT_EQ(e4m3_bits_to_float(0x3A), 1.25f);
  EXPECT_TRUE(std::isnan(e4m3_bits_to_float(0x7F)));
  EXPECT_TRUE(std::isnan(e4m3_bits_to_float(0xFF)));
}

TEST(E4m3Bits, EncodesToNearestTiesToEvenAndSaturates) {
  EXPECT_EQ(float_to_e4m3_bits(1.0f), 0x38);
  EXPECT_EQ(float_to_e4m3_bits(1.0625f), 0x38);  // halfway 1 and 1.125: tie -> even
  EXPECT_EQ(float_to_e4m3_bits(1.1875f), 0x3A);  // halfway 1.125 and 1.25: tie -> even
  EXPECT_EQ(float_to_e4m3_bits(1.07f), 0x39);
  EXPECT_EQ(float_to_e4m3_bits(std::ldexp(1.0f, -10)), 0x00);  // tie -> 0
  EXPECT_EQ(float_to_e4m3_bits(std::ldexp(3.0f, -11)), 0x01);
  EXPECT_EQ(float_to_e4m3_bits(std::ldexp(15.5f, -10)), 0x08);  // rounds up into the normals
  EXPECT_EQ(float_to_e4m3_bits(460.0f), 0x7E);
  EXPECT_EQ(float_to_e4m3_bits(1000.0f), 0x7E);  // saturates: no infinity in E4M3
  EXPECT_EQ(float_to_e4m3_bits(-INFINITY), 0xFE);
  EXPECT_EQ(float_to_e4m3_bits(NAN), 0x7F);
}

TEST(E4m3Bits, EveryFiniteCodeRoundTrips) {
  for (std::uint32_t code = 0; code < 0x100; ++code) {
    const auto bits = static_cast<std::uint8_t>(code);
    const float f = e4m3_bits_to_float(bits);
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_e4m3_bits(f), bits) << std::hex << code;
  }
}

// --- decoding and the fill hash ----------------------------------------------------------------

TEST(DecodeElements, ReadsEachTypeFromRawBytes) {
  const std::int8_t i8[] = {-128, 0, 127};
  EXPECT_EQ(decode_elements(ElementType::i8, i8, 3), (std::vector<double>{-128, 0, 127}));
  const std::uint16_t half[] = {0x3C00, 0xC000};
  EXPECT_EQ(decode_elements(ElementType::f16, half, 2), (std::vector<double>{1, -2}));
  const std::uint8_t fp8[] = {0x38, 0x7E};
  EXPECT_EQ(decode_elements(ElementType::e4m3, fp8, 2), (std::vector<double>{1, 448}));
  const std::int32_t i32[] = {-5, 1 << 30};
  EXPECT_EQ(decode_elements(ElementType::i32, i32, 2), (std::vector<double>{-5, 1 << 30}));
}

TEST(FillValue, FloatsAreUniformInMinusOneToOneAndSeedsDiffer) {
  double lo = 1, hi = -1, sum = 0;
  std::set<double> distinct;
  const int n = 100000;
  int same_as_other_seed = 0;
  for (int i = 0; i < n; ++i) {
    const double v = fill_value(ElementType::f32, 7, static_cast<std::uint64_t>(i));
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
    distinct.insert(v);
    if (v == fill_value(ElementType::f32, 8, static_cast<std::uint64_t>(i))) ++same_as_other_seed;
  }
  EXPECT_GE(lo, -1.0);
  EXPECT_LT(hi, 1.0);
  EXPECT_LT(lo, -0.99);
  EXPECT_GT(hi, 0.99);
  EXPECT_NEAR(sum / n, 0.0, 0.01);
  EXPECT_GT(distinct.size(), static_cast<std::size_t>(n * 0.99));
  EXPECT_LT(same_as_other_seed, 10);
}

TEST(FillValue, Int8CoversItsWholeRange) {
  std::set<double> seen;
  for (std::uint64_t i = 0; i < 20000; ++i) seen.insert(fill_value(ElementType::i8, 3, i));
  EXPECT_EQ(seen.size(), 256u);
  EXPECT_EQ(*seen.begin(), -128);
  EXPECT_EQ(*seen.rbegin(), 127);
}

TEST(FillValue, NarrowTypesAreTheF32ValueRounded) {
  for (std::uint64_t i = 0; i < 1000; ++i) {
    const float f = uniform_f32(fill_hash(5, i));
    EXPECT_EQ(fill_value(ElementType::bf16, 5, i), bf16_bits_to_float(float_to_bf16_bits(f)));
    EXPECT_NEAR(fill_value(ElementType::f16, 5, i), f, std::ldexp(1.0, -11));
    EXPECT_NEAR(fill_value(ElementType::e4m3, 5, i), f, std::ldexp(1.0, -4));
  }
}

// --- the GEMM validator ------------------------------------------------------------------------

struct SmallGemm {
  std::size_t rows = 5, cols = 4, k = 37;
  std::vector<double> a, b, d;  // exact products of small integers: representable exactly
  SmallGemm() {
    for (std::size_t i = 0; i < rows * k; ++i) a.push_back(static_cast<double>(i % 7) - 3);
    for (std::size_t i = 0; i < cols * k; ++i) b.push_back(static_cast<double>(i % 5) - 2);
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t c = 0; c < cols; ++c) {
        double s = 0;
        for (std::size_t l = 0; l < k; ++l) s += a[r * k + l] * b[c * k + l];
        d.push_back(s);
      }
  }
};

TEST(CheckGemmSamples, ExactAnswerPassesEvenAtZeroTolerance) {
  const SmallGemm g;
  const GemmCheck check = check_gemm_samples(g.a, g.b, g.d, g.k, 0.0);
  EXPECT_TRUE(check.ok()) << check.describe();
  EXPECT_EQ(check.samples, g.rows * g.cols);
  EXPECT_EQ(check.rel_err, 0.0);
}

TEST(CheckGemmSamples, OneCorruptedOutputFails) {
  SmallGemm g;
  g.d[7] += 40;
  const GemmCheck check = check_gemm_samples(g.a, g.b, g.d, g.k, 1e-2);
  EXPECT_FALSE(check.ok());
  EXPECT_GT(check.rel_err, 1e-2);
  EXPECT_EQ(check.max_abs_err, 40);
  EXPECT_NE(check.describe().find("rel err"), std::string::npos);
}

TEST(CheckGemmSamples, SmallRoundingErrorPassesWithinTolerance) {
  SmallGemm g;
  for (double& v : g.d) v *= 1 + 1e-4;
  EXPECT_TRUE(check_gemm_samples(g.a, g.b, g.d, g.k, 1e-3).ok());
  EXPECT_FALSE(check_gemm_samples(g.a, g.b, g.d, g.k, 1e-5).ok());
}

TEST(CheckGemmSamples, NanOutputFails) {
  SmallGemm g;
  g.d[0] = NAN;
  const GemmCheck check = check_gemm_samples(g.a, g.b, g.d, g.k, 1.0);
  EXPECT_FALSE(check.ok());
  EXPECT_EQ(check.nonfinite, 1u);
}

TEST(CheckGemmSamples, MismatchedSizesThrow) {
  const SmallGemm g;
  const std::vector<double> short_d(g.d.begin(), g.d.end() - 1);
  EXPECT_ANY_THROW(check_gemm_samples(g.a, g.b, short_d, g.k, 0.0));
  EXPECT_ANY_THROW(check_gemm_samples(g.a, g.b, g.d, g.k + 1, 0.0));
}

TEST(GemmTolerance, TightensWithPrecision) {
  EXPECT_EQ(gemm_tolerance(GemmPrecision::int8), 0.0);
  EXPECT_LT(gemm_tolerance(GemmPrecision::fp64), gemm_tolerance(GemmPrecision::fp32));
  EXPECT_LT(gemm_tolerance(GemmPrecision::fp32), gemm_tolerance(GemmPrecision::tf32));
  EXPECT_LE(gemm_tolerance(GemmPrecision::fp16), gemm_tolerance(GemmPrecision::bf16));
  EXPECT_LT(gemm_tolerance(GemmPrecision::bf16), gemm_tolerance(GemmPrecision::fp8));
}

// --- GEMM layouts ------------------------------------------------------------------------------

TEST(GemmLayouts, NamesAndWhichPrecisionsAllowNn) {
  EXPECT_EQ(layout_name(GemmLayout::tn), "TN");
  EXPECT_EQ(layout_name(GemmLayout::nn), "NN");
  for (const GemmPrecision p : kAllGemmPrecisions) {
    EXPECT_TRUE(layout_allowed(p, GemmLayout::tn)) << precision_key(p);
    EXPECT_EQ(layout_allowed(p, GemmLayout::nn),
              p != GemmPrecision::fp8 && p != GemmPrecision::int8)
        << precision_key(p);
  }
}

TEST(GemmLayouts, OpAOffsetsFollowTheStorageOrder) {
  // m = 3, k = 4. TN stores A as k x m (ld k): op(A)(r, l) at l + r * k. NN stores A as m x k
  // (ld m): op(A)(r, l) at r + l * m.
  EXPECT_EQ(op_a_offset(GemmLayout::tn, 3, 4, 0, 0), 0u);
  EXPECT_EQ(op_a_offset(GemmLayout::tn, 3, 4, 0, 3), 3u);
  EXPECT_EQ(op_a_offset(GemmLayout::tn, 3, 4, 2, 1), 9u);
  EXPECT_EQ(op_a_offset(GemmLayout::nn, 3, 4, 0, 3), 9u);
  EXPECT_EQ(op_a_offset(GemmLayout::nn, 3, 4, 2, 1), 5u);
  EXPECT_EQ(op_a_offset(GemmLayout::nn, 3, 4, 2, 3), 11u);
  // Both are bijections onto [0, m * k).
  for (const GemmLayout layout : {GemmLayout::tn, GemmLayout::nn}) {
    std::set<std::size_t> seen;
    for (std::int64_t r = 0; r < 3; ++r)
      for (std::int64_t l = 0; l < 4; ++l) seen.insert(op_a_offset(layout, 3, 4, r, l));
    EXPECT_EQ(seen.size(), 12u);
    EXPECT_EQ(*seen.rbegin(), 11u);
  }
}

TEST(GemmLayouts, GatheredRowsFeedTheValidator) {
  // op(A) = [[1, 2, 3], [4, 5, 6]] (m = 2, k = 3), stored both ways.
  const std::vector<double> tn = {1, 2, 3, 4, 5, 6};  // k x m, ld k: column r is row r of op(A)
  const std::vector<double> nn = {1, 4, 2, 5, 3, 6};  // m x k, ld m
  const std::vector<std::int64_t> rows = {1, 0};
  const std::vector<double> want = {4, 5, 6, 1, 2, 3};
  EXPECT_EQ(gather_op_a_rows(GemmLayout::tn, tn, 2, 3, rows), want);
  EXPECT_EQ(gather_op_a_rows(GemmLayout::nn, nn, 2, 3, rows), want);
  // The same stored bytes read in the other layout are another matrix: the check fails.
  const std::vector<double> b = {1, 10, 100};  // one column of B
  const std::vector<double> d = {654, 321};    // rows 1 and 0 of op(A) * b
  EXPECT_TRUE(check_gemm_samples(gather_op_a_rows(GemmLayout::nn, nn, 2, 3, rows), b, d, 3, 0)
                  .ok());
  EXPECT_FALSE(check_gemm_samples(gather_op_a_rows(GemmLayout::tn, nn, 2, 3, rows), b, d, 3, 1e-2)
                   .ok());
  EXPECT_ANY_THROW(gather_op_a_rows(GemmLayout::nn, nn, 2, 4, rows));
  EXPECT_ANY_THROW(gather_op_a_rows(GemmLayout::nn, nn, 2, 3, std::vector<std::int64_t>{2}));
}

// --- sample picking ----------------------------------------------------------------------------

TEST(SampleIndices, DistinctSortedInRangeWithBothEdges) {
  const auto idx = sample_indices(8192, 16, 42);
  ASSERT_EQ(idx.size(), 16u);
  EXPECT_EQ(idx.front(), 0);
  EXPECT_EQ(idx.back(), 8191);
  EXPECT_TRUE(std::is_sorted(idx.begin(), idx.end()));
  EXPECT_EQ(std::set<std::int64_t>(idx.begin(), idx.end()).size(), idx.size());
  EXPECT_EQ(idx, sample_indices(8192, 16, 42));
  EXPECT_NE(idx, sample_indices(8192, 16, 43));
}

TEST(SampleIndices, AllIndicesWhenAskedForAtLeastN) {
  EXPECT_EQ(sample_indices(5, 16, 1), (std::vector<std::int64_t>{0, 1, 2, 3, 4}));
  EXPECT_TRUE(sample_indices(0, 16, 1).empty());
}

}  // namespace
}  // namespace gb::gpu
#endif  // GPUBASE_WITH_CUDA
