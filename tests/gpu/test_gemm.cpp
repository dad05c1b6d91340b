// tests/gpu/test_gemm.cpp: the GEMM path on a real GPU (label "gpu"): the random fills match
// their host recomputation bit for bit, every cuBLASLt candidate of every precision computes the
// right answer against a full CPU reference in both layouts (TN and NN; FP8 and INT8 TN only),
// the validator catches corrupted and unwritten outputs and a product checked in the wrong
// layout, FP32 really runs without TF32 and TF32 really with it, and the probe section reports
// every precision.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "bench/probe.hpp"
#include "gpu/cuda_raii.hpp"
#include "gpu/fill.hpp"
#include "gpu/gemm_lt.hpp"
#include "gpu/host_numeric.hpp"

namespace gb::gpu {
namespace {

constexpr std::size_t kWorkspaceBytes = std::size_t{64} << 20;

bool have_gpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

#define GB_REQUIRE_GPU() \
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device"

struct Cc {
  int major = 0;
  int minor = 0;
};

Cc device_cc() {
  int dev = 0;
  Cc cc;
  GB_CHECK_CUDA(cudaGetDevice(&dev));
  GB_CHECK_CUDA(cudaDeviceGetAttribute(&cc.major, cudaDevAttrComputeCapabilityMajor, dev));
  GB_CHECK_CUDA(cudaDeviceGetAttribute(&cc.minor, cudaDevAttrComputeCapabilityMinor, dev));
  return cc;
}

std::vector<double> download(const DeviceBuffer& buf, ElementType t, std::size_t count,
                             cudaStream_t s) {
  std::vector<unsigned char> bytes(count * element_bytes(t));
  GB_CHECK_CUDA(cudaMemcpyAsync(bytes.data(), buf.data(), bytes.size(), cudaMemcpyDeviceToHost, s));
  GB_CHECK_CUDA(cudaStreamSynchronize(s));
  return decode_elements(t, bytes.data(), count);
}

// ---------------------------------------------------------------------------------------------
// Fills

class FillUniform : public ::testing::TestWithParam<ElementType> {};

TEST_P(FillUniform, MatchesTheHostRecomputationBitForBit) {
  GB_REQUIRE_GPU();
  const ElementType t = GetParam();
  const std::size_t count = (std::size_t{1} << 20) + 3;  // not a multiple of anything
  const std::uint64_t seed = 1234;
  const Stream stream = Stream::create();
  const DeviceBuffer buf(count * element_bytes(t));
  fill_uniform(buf.data(), t, count, seed, stream.get());
  const std::vector<double> got = download(buf, t, count, stream.get());
  std::size_t mismatches = 0;
  std::size_t first = count;
  for (std::size_t i = 0; i < count; ++i) {
    if (got[i] != fill_value(t, seed, i)) {
      if (mismatches++ == 0) first = i;
    }
  }
  EXPECT_EQ(mismatches, 0u) << "first mismatch at " << first << ": device " << got[first]
                            << ", host " << fill_value(t, seed, first);
}

TEST_P(FillUniform, SpansItsRangeAndIsNeitherZeroNorConstant) {
  GB_REQUIRE_GPU();
  const ElementType t = GetParam();
  const std::size_t count = std::size_t{1} << 20;
  const Stream stream = Stream::create();
  const DeviceBuffer buf(count * element_bytes(t));
  fill_uniform(buf.data(), t, count, 99, stream.get());
  const std::vector<double> v = download(buf, t, count, stream.get());

  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  double sum = 0;
  std::size_t zeros = 0;
  for (const double x : v) {
    sum += x;
    if (x == 0) ++zeros;
  }
  const double mean = sum / static_cast<double>(count);
  const std::set<double> distinct(v.begin(), v.end());
  EXPECT_GE(distinct.size(), 100u);
  EXPECT_LT(zeros, count / 100);
  switch (t) {
    case ElementType::i8:
      EXPECT_EQ(*lo, -128);
      EXPECT_EQ(*hi, 127);
      EXPECT_NEAR(mean, -0.5, 0.5);
      break;
    case ElementType::i32:
      EXPECT_LT(*lo, -1e9);
      EXPECT_GT(*hi, 1e9);
      break;
    default:  // floating point: uniform [-1, 1), rounding may reach 1.0 exactly
      EXPECT_GE(*lo, -1.0);
      EXPECT_LE(*hi, 1.0);
      EXPECT_LT(*lo, -0.9);
      EXPECT_GT(*hi, 0.9);
      EXPECT_NEAR(mean, 0.0, 0.01);
      break;
  }
}

// Test-name generators are named functions, not lambdas: a lambda's parameter inside
// INSTANTIATE_TEST_SUITE_P can shadow the macro's own `info` parameter (-Wshadow).
std::string fill_test_name(const ::testing::TestParamInfo<ElementType>& param_info) {
  return std::string(to_string(param_info.param));
}

INSTANTIATE_TEST_SUITE_P(AllTypes, FillUniform,
                         ::testing::Values(ElementType::f64, ElementType::f32, ElementType::f16,
                                           ElementType::bf16, ElementType::e4m3, ElementType::i8,
                                           ElementType::i32),
                         fill_test_name);

TEST(FillUniform, DifferentSeedsGiveDifferentData) {
  GB_REQUIRE_GPU();
  const std::size_t count = 4096;
  const Stream stream = Stream::create();
  const DeviceBuffer a(count * 4), b(count * 4);
  fill_uniform(a.data(), ElementType::f32, count, 1, stream.get());
  fill_uniform(b.data(), ElementType::f32, count, 2, stream.get());
  const auto va = download(a, ElementType::f32, count, stream.get());
  const auto vb = download(b, ElementType::f32, count, stream.get());
  std::size_t same = 0;
  for (std::size_t i = 0; i < count; ++i) same += va[i] == vb[i] ? 1 : 0;
  EXPECT_LT(same, count / 100);
}

// ---------------------------------------------------------------------------------------------
// GemmLt against the CPU

struct GemmSetup {
  CublasLtHandle handle = CublasLtHandle::create();
  Stream stream = Stream::create();
  DeviceBuffer workspace{kWorkspaceBytes};
};

// Inputs for one GemmLt, filled with seeds 11 and 12.
struct GemmData {
  DeviceBuffer a, b, d;
  GemmData(const GemmLt& g, cudaStream_t s) : a(g.a_bytes()), b(g.b_bytes()), d(g.d_bytes()) {
    fill_uniform(a.data(), g.types().ab, g.a_elements(), 11, s);
    fill_uniform(b.data(), g.types().ab, g.b_elements(), 12, s);
  }
};

std::vector<std::int64_t> all_indices(std::int64_t n) {
  return sample_indices(n, static_cast<std::size_t>(n), 0);
}

GemmOptions with_layout(GemmLayout layout) {
  GemmOptions options;
  options.layout = layout;
  return options;
}

using GemmParam = std::tuple<GemmPrecision, GemmShape, GemmLayout>;

class GemmLtMatchesCpuReference : public ::testing::TestWithParam<GemmParam> {};

// Every candidate the heuristic offers (up to 8, as the probe asks for per layout) is run and
// checked, in each layout the precision allows: candidate 0 on every output against the full
// CPU product, the others on 16 x 16 sampled outputs.
TEST_P(GemmLtMatchesCpuReference, ForEveryHeuristicCandidate) {
  GB_REQUIRE_GPU();
  const auto [p, shape, layout] = GetParam();
  const Cc cc = device_cc();
  if (const auto why = gemm_unsupported_reason(p, cc.major, cc.minor)) GTEST_SKIP() << *why;

  GemmSetup setup;
  const cudaStream_t s = setup.stream.get();
  const GemmLt gemm(setup.handle.get(), p, shape, with_layout(layout));
  ASSERT_EQ(gemm.layout(), layout);
  const std::vector<GemmAlgo> algos = gemm.algorithms(kWorkspaceBytes, 8);
  ASSERT_FALSE(algos.empty()) << "no cuBLASLt algorithm for " << describe_types(gemm.types())
                              << " " << layout_name(layout) << " at " << shape.to_string();
  GemmData data(gemm, s);

  int ran = 0;
  for (std::size_t i = 0; i < algos.size(); ++i) {
    GB_CHECK_CUDA(cudaMemsetAsync(data.d.data(), 0xFF, gemm.d_bytes(), s));
    const cublasStatus_t st = gemm.try_run(algos[i], data.a.data(), data.b.data(), data.d.data(),
                                           setup.workspace.data(), setup.workspace.bytes(), s);
    if (st != CUBLAS_STATUS_SUCCESS) continue;  // a candidate may refuse; the probe skips it too
    ++ran;
    const bool full = ran == 1;
    const auto rows = full ? all_indices(shape.m) : sample_indices(shape.m, 16, i);
    const auto cols = full ? all_indices(shape.n) : sample_indices(shape.n, 16, i + 100);
    const GemmCheck check =
        check_gemm_on_device(gemm, data.a.data(), data.b.data(), data.d.data(), rows, cols, s);
    EXPECT_TRUE(check.ok()) << describe_types(gemm.types()) << " " << layout_name(layout) << " "
                            << shape.to_string()
                            << " candidate #" << algos[i].heuristic_rank << " ("
                            << algos[i].describe() << "): " << check.describe();
    EXPECT_EQ(check.samples, rows.size() * cols.size());
  }
  EXPECT_GE(ran, 1) << "no candidate ran";
}

std::vector<GemmParam> gemm_params() {
  const GemmShape square_ish{256, 384, 512};
  const GemmShape long_k{96, 160, 1040};  // non-square, k > m, n; multiples of 16 (FP8/INT8)
  const GemmShape odd{123, 77, 301};      // no alignment at all: 16-bit and wider types only
  std::vector<GemmParam> params;
  for (const GemmPrecision p : kAllGemmPrecisions) {
    for (const GemmLayout layout : {GemmLayout::tn, GemmLayout::nn}) {
      if (!layout_allowed(p, layout)) continue;
      params.emplace_back(p, square_ish, layout);
      params.emplace_back(p, long_k, layout);
      if (p != GemmPrecision::fp8 && p != GemmPrecision::int8) params.emplace_back(p, odd, layout);
    }
  }
  return params;
}

std::string gemm_test_name(const ::testing::TestParamInfo<GemmParam>& param_info) {
  return std::string(precision_key(std::get<0>(param_info.param))) + "_" +
         std::get<1>(param_info.param).to_string() + "_" +
         std::string(layout_name(std::get<2>(param_info.param)));
}

INSTANTIATE_TEST_SUITE_P(AllPrecisions, GemmLtMatchesCpuReference,
                         ::testing::ValuesIn(gemm_params()), gemm_test_name);

// The layouts mean what gemm_lt.hpp says, checked without check_gemm_on_device: the whole D is
// compared with a product computed on the host straight from the fill's element formula and
// the storage order written out here (TN: A(k x m, ld k); NN: A(m x k, ld m); B(k x n, ld k);
// D(m x n, ld m)). FP64 so the only error is FP64 rounding.
TEST(GemmLt, LayoutsMatchAProductWrittenOutOnTheHost) {
  GB_REQUIRE_GPU();
  GemmSetup setup;
  const cudaStream_t s = setup.stream.get();
  const std::int64_t m = 40, n = 24, k = 56;
  for (const GemmLayout layout : {GemmLayout::tn, GemmLayout::nn}) {
    const GemmLt gemm(setup.handle.get(), GemmPrecision::fp64, GemmShape{m, n, k},
                      with_layout(layout));
    const auto algos = gemm.algorithms(kWorkspaceBytes, 1);
    ASSERT_FALSE(algos.empty()) << layout_name(layout);
    GemmData data(gemm, s);  // A with seed 11, B with seed 12
    gemm.run(algos[0], data.a.data(), data.b.data(), data.d.data(), setup.workspace.data(),
             setup.workspace.bytes(), s);
    const std::vector<double> d =
        download(data.d, ElementType::f64, static_cast<std::size_t>(m * n), s);
    double worst = 0;
    for (std::int64_t i = 0; i < m; ++i) {
      for (std::int64_t j = 0; j < n; ++j) {
        long double ref = 0;
        for (std::int64_t l = 0; l < k; ++l) {
          const std::int64_t a_at = layout == GemmLayout::tn ? l + i * k : i + l * m;
          ref += static_cast<long double>(
                     fill_value(ElementType::f64, 11, static_cast<std::uint64_t>(a_at))) *
                 fill_value(ElementType::f64, 12, static_cast<std::uint64_t>(l + j * k));
        }
        worst = std::max(worst, static_cast<double>(
                                    std::fabs(d[static_cast<std::size_t>(i + j * m)] - ref)));
      }
    }
    EXPECT_LT(worst, 1e-12) << layout_name(layout);
  }
}

TEST(GemmLt, Fp8AndInt8RefuseTheNnLayout) {
  GB_REQUIRE_GPU();
  const CublasLtHandle handle = CublasLtHandle::create();
  for (const GemmPrecision p : {GemmPrecision::fp8, GemmPrecision::int8}) {
    EXPECT_ANY_THROW(GemmLt(handle.get(), p, GemmShape{64, 64, 64}, with_layout(GemmLayout::nn)))
        << precision_key(p);
  }
}

TEST(GemmLt, HeuristicOffersAlgorithmsAtTheHeadlineShape) {
  GB_REQUIRE_GPU();
  const Cc cc = device_cc();
  const CublasLtHandle handle = CublasLtHandle::create();
  for (const GemmPrecision p : kAllGemmPrecisions) {
    if (gemm_unsupported_reason(p, cc.major, cc.minor)) continue;
    const GemmLt gemm(handle.get(), p, GemmShape{8192, 8192, 8192});
    EXPECT_FALSE(gemm.algorithms(kWorkspaceBytes, 8).empty())
        << describe_types(gemm.types()) << " has no TN algorithm at 8192^3";
  }
}

// FP32 (pedantic) must reach FP32 accuracy, which TF32's 10-bit inputs cannot (~4e-4), and TF32
// must be measurably less accurate than that: the probe's FP32 figure has no tensor cores in it
// and its TF32 figure does.
TEST(GemmLt, Fp32IsExactToFp32AndTf32IsNot) {
  GB_REQUIRE_GPU();
  const Cc cc = device_cc();
  if (gemm_unsupported_reason(GemmPrecision::tf32, cc.major, cc.minor)) GTEST_SKIP() << "no TF32";
  GemmSetup setup;
  const cudaStream_t s = setup.stream.get();
  const GemmShape shape{512, 512, 4096};
  double rel_err[2] = {0, 0};
  const GemmPrecision precisions[2] = {GemmPrecision::fp32, GemmPrecision::tf32};
  for (int i = 0; i < 2; ++i) {
    const GemmLt gemm(setup.handle.get(), precisions[i], shape);
    const auto algos = gemm.algorithms(kWorkspaceBytes, 1);
    ASSERT_FALSE(algos.empty());
    GemmData data(gemm, s);
    gemm.run(algos[0], data.a.data(), data.b.data(), data.d.data(), setup.workspace.data(),
             setup.workspace.bytes(), s);
    const auto rows = sample_indices(shape.m, 32, 1);
    const auto cols = sample_indices(shape.n, 32, 2);
    rel_err[i] =
        check_gemm_on_device(gemm, data.a.data(), data.b.data(), data.d.data(), rows, cols, s)
            .rel_err;
  }
  EXPECT_LT(rel_err[0], gemm_tolerance(GemmPrecision::fp32));
  EXPECT_GT(rel_err[1], 1e-5) << "TF32 as accurate as FP32: is NVIDIA_TF32_OVERRIDE=0 set?";
  EXPECT_LT(rel_err[1], gemm_tolerance(GemmPrecision::tf32));
}

// ---------------------------------------------------------------------------------------------
// The validator on device data

class GemmValidation : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
    if (const auto why =
            gemm_unsupported_reason(GemmPrecision::bf16, device_cc().major, device_cc().minor))
      GTEST_SKIP() << *why;
  }
  const GemmShape shape_{256, 384, 512};
  const std::vector<std::int64_t> rows_ = sample_indices(256, 16, 7);
  const std::vector<std::int64_t> cols_ = sample_indices(384, 16, 8);
};

TEST_F(GemmValidation, DetectsOneCorruptedOutput) {
  for (const GemmLayout layout : {GemmLayout::tn, GemmLayout::nn}) {
    SCOPED_TRACE(std::string(layout_name(layout)));
    GemmSetup setup;
    const cudaStream_t s = setup.stream.get();
    const GemmLt gemm(setup.handle.get(), GemmPrecision::bf16, shape_, with_layout(layout));
    const auto algos = gemm.algorithms(kWorkspaceBytes, 1);
    ASSERT_FALSE(algos.empty());
    GemmData data(gemm, s);
    gemm.run(algos[0], data.a.data(), data.b.data(), data.d.data(), setup.workspace.data(),
             setup.workspace.bytes(), s);
    const GemmCheck good =
        check_gemm_on_device(gemm, data.a.data(), data.b.data(), data.d.data(), rows_, cols_, s);
    ASSERT_TRUE(good.ok()) << good.describe();

    // One sampled output of 256 off by 1000 (outputs are ~|7|): far past the tolerance.
    const std::uint16_t wrong = float_to_bf16_bits(1000.0f);
    const std::size_t at = static_cast<std::size_t>(cols_[5] * shape_.m + rows_[3]);
    GB_CHECK_CUDA(cudaMemcpyAsync(data.d.as<std::uint16_t>() + at, &wrong, sizeof wrong,
                                  cudaMemcpyHostToDevice, s));
    const GemmCheck bad =
        check_gemm_on_device(gemm, data.a.data(), data.b.data(), data.d.data(), rows_, cols_, s);
    EXPECT_FALSE(bad.ok()) << bad.describe();
    EXPECT_GT(bad.rel_err, bad.tolerance);
  }
}

// A product computed in one layout and checked as the other fails: the validator reads A the
// way the layout says, it does not pass whatever it is given.
TEST_F(GemmValidation, DetectsTheWrongLayout) {
  GemmSetup setup;
  const cudaStream_t s = setup.stream.get();
  const GemmShape square{256, 256, 256};  // both layouts read A in bounds
  const GemmLt tn(setup.handle.get(), GemmPrecision::bf16, square, with_layout(GemmLayout::tn));
  const GemmLt nn(setup.handle.get(), GemmPrecision::bf16, square, with_layout(GemmLayout::nn));
  const std::vector<std::int64_t> rows = sample_indices(256, 16, 7);
  const std::vector<std::int64_t> cols = sample_indices(256, 16, 8);
  for (const GemmLt* ran : {&tn, &nn}) {
    const GemmLt* other = ran == &tn ? &nn : &tn;
    SCOPED_TRACE(std::string("ran ") + std::string(layout_name(ran->layout())));
    const auto algos = ran->algorithms(kWorkspaceBytes, 1);
    ASSERT_FALSE(algos.empty());
    GemmData data(*ran, s);
    ran->run(algos[0], data.a.data(), data.b.data(), data.d.data(), setup.workspace.data(),
             setup.workspace.bytes(), s);
    const GemmCheck right =
        check_gemm_on_device(*ran, data.a.data(), data.b.data(), data.d.data(), rows, cols, s);
    EXPECT_TRUE(right.ok()) << right.describe();
    const GemmCheck wrong =
        check_gemm_on_device(*other, data.a.data(), data.b.data(), data.d.data(), rows, cols, s);
    EXPECT_FALSE(wrong.ok()) << wrong.describe();
    EXPECT_GT(wrong.rel_err, 0.1) << wrong.describe();
  }
}

TEST_F(GemmValidation, DetectsAnOutputTheGemmNeverWrote) {
  GemmSetup setup;
  const cudaStream_t s = setup.stream.get();
  const GemmLt gemm(setup.handle.get(), GemmPrecision::bf16, shape_);
  GemmData data(gemm, s);
  GB_CHECK_CUDA(cudaMemsetAsync(data.d.data(), 0xFF, gemm.d_bytes(), s));  // NaN everywhere
  const GemmCheck check =
      check_gemm_on_device(gemm, data.a.data(), data.b.data(), data.d.data(), rows_, cols_, s);
  EXPECT_FALSE(check.ok());
  EXPECT_EQ(check.nonfinite, check.samples);
}

// ---------------------------------------------------------------------------------------------
// The probe section end to end (quick mode: 8192^3 per precision, ~4 s on an H200)

TEST(ProbeGemm, QuickRunReportsEveryPrecisionWithCheckedFigures) {
  GB_REQUIRE_GPU();
  bench::ProbeContext ctx;
  ctx.options.quick = true;
  GB_CHECK_CUDA(cudaGetDevice(&ctx.device.index));
  const Cc cc = device_cc();
  ctx.device.cc_major = cc.major;
  ctx.device.cc_minor = cc.minor;
  int value = 0;
  GB_CHECK_CUDA(cudaDeviceGetAttribute(&value, cudaDevAttrMultiProcessorCount, ctx.device.index));
  ctx.device.sm_count = value;
  GB_CHECK_CUDA(cudaDeviceGetAttribute(&value, cudaDevAttrClockRate, ctx.device.index));
  ctx.device.sm_clock_max_mhz = value / 1000.0;
  GB_CHECK_CUDA(cudaDeviceGetAttribute(&value, cudaDevAttrL2CacheSize, ctx.device.index));
  ctx.device.l2_bytes = value;
  ctx.nvml_missing_reason = "not loaded in this test";

  std::vector<std::string> progress;
  bench::ResultSink sink([&](const std::string& line) { progress.push_back(line); });
  bench::probe_gemm(ctx, sink);

  // Quick mode: the burst figure only, no probe.gemm.<p>.sustained.tflops.
  ASSERT_EQ(sink.results().size(), std::size(kAllGemmPrecisions));
  for (const Result& r : sink.results())
    EXPECT_EQ(r.key.find(".sustained."), std::string::npos) << r.key;
  EXPECT_EQ(progress.size(), sink.results().size());
  for (const GemmPrecision p : kAllGemmPrecisions) {
    const std::string key = "probe.gemm." + std::string(precision_key(p)) + ".tflops";
    const auto it = std::find_if(sink.results().begin(), sink.results().end(),
                                 [&](const Result& r) { return r.key == key; });
    ASSERT_NE(it, sink.results().end()) << key;
    if (gemm_unsupported_reason(p, cc.major, cc.minor)) {
      EXPECT_EQ(it->status, Status::skipped) << key;
      continue;
    }
    EXPECT_NE(it->status, Status::fail) << key << ": " << it->reason;
    EXPECT_NE(it->status, Status::skipped) << key << ": " << it->reason;
    ASSERT_TRUE(it->value.has_value()) << key << ": " << it->reason;
    EXPECT_GT(*it->value, 0) << key;
    EXPECT_GE(it->samples.size(), 10u) << key;
    EXPECT_TRUE(it->text_param("validation").has_value()) << key;
    EXPECT_TRUE(it->text_param("protocol").has_value()) << key;
    const auto layout = it->text_param("layout");
    ASSERT_TRUE(layout.has_value()) << key;
    EXPECT_TRUE(layout->starts_with("TN") || layout->starts_with("NN")) << key << ": " << *layout;
    if (!layout_allowed(p, GemmLayout::nn)) {
      EXPECT_TRUE(layout->starts_with("TN")) << key;
    }
    if (flops_per_sm_per_clock(cc.major, cc.minor, p)) {
      EXPECT_NE(it->find_reference("clock_adjusted"), nullptr) << key;
    }
  }
}

}  // namespace
}  // namespace gb::gpu
