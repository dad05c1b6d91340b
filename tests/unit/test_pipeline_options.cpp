// tests/unit/test_pipeline_options.cpp: the input pipeline's options without a GPU: the decode
// mode's names (and the usage error naming the option for any other), validation of every
// option with a usage error naming what is wrong, the workers a mode defaults to, the loader
// options of the CPU path and the tensor size.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/error.hpp"
#include "pipeline/options.hpp"

namespace gb::pipeline {
namespace {

// The usage error's message, or "" when `f` did not throw one.
template <typename F>
std::string usage_error(F f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage) << e.what();
    return e.what();
  }
  return "";
}

TEST(PipelineOptions, DecodeModesParseAndPrint) {
  EXPECT_EQ(parse_decode_mode("cpu"), DecodeMode::cpu);
  EXPECT_EQ(parse_decode_mode("gpu"), DecodeMode::gpu);
  EXPECT_EQ(parse_decode_mode("both"), DecodeMode::both);
  EXPECT_FALSE(parse_decode_mode("nvjpeg").has_value());
  EXPECT_FALSE(parse_decode_mode("CPU").has_value());
  for (const DecodeMode m : {DecodeMode::cpu, DecodeMode::gpu, DecodeMode::both})
    EXPECT_EQ(parse_decode_mode(to_string(m)), m);
}

TEST(PipelineOptions, AnUnknownDecodeModeIsAUsageErrorNamingTheOption) {
  EXPECT_EQ(decode_mode_from("both", "--decode"), DecodeMode::both);
  const std::string what = usage_error([] { decode_mode_from("bogus", "--decode"); });
  EXPECT_NE(what.find("--decode"), std::string::npos) << what;
  EXPECT_NE(what.find("'bogus'"), std::string::npos) << what;
  EXPECT_NE(what.find("cpu, gpu or both"), std::string::npos) << what;
}

TEST(PipelineOptions, TheDefaultsAreValid) {
  EXPECT_NO_THROW(validate(PipelineOptions{}));
  PipelineOptions o;
  o.decode = DecodeMode::gpu;
  EXPECT_NO_THROW(validate(o));
  o.decode = DecodeMode::both;
  o.gpu_share = 1.0;
  EXPECT_NO_THROW(validate(o));
}

TEST(PipelineOptions, BadSizesAreUsageErrors) {
  auto with = [](auto change) {
    PipelineOptions o;
    change(o);
    return usage_error([&] { validate(o); });
  };
  EXPECT_NE(with([](PipelineOptions& o) { o.batch = 0; }).find("--batch"), std::string::npos);
  EXPECT_NE(with([](PipelineOptions& o) { o.image_size = 0; }).find("--size"), std::string::npos);
  EXPECT_NE(with([](PipelineOptions& o) { o.image_size = -3; }).find("--size"), std::string::npos);
  EXPECT_NE(with([](PipelineOptions& o) { o.prefetch = 0; }).find("--prefetch"), std::string::npos);
  EXPECT_NE(with([](PipelineOptions& o) { o.max_jpeg_bytes = 0; }).find("--gpu-max-jpeg-kb"),
            std::string::npos);
  EXPECT_NE(with([](PipelineOptions& o) { o.device = -1; }).find("--device"), std::string::npos);
  EXPECT_NE(with([](PipelineOptions& o) { o.nvjpeg_backend = "fast"; }).find("--nvjpeg-backend"),
            std::string::npos);
  EXPECT_NE(with([](PipelineOptions& o) { o.norm.stddev[1] = 0; }).find("standard deviation"),
            std::string::npos);
}

TEST(PipelineOptions, TheSplitNeedsAShareInZeroToOneAndOnlyTheSplitTakesOne) {
  PipelineOptions o;
  o.decode = DecodeMode::both;
  EXPECT_NE(usage_error([&] { validate(o); }).find("--gpu-share"), std::string::npos);
  for (const double bad : {0.0, -0.5, 1.01, std::nan("")}) {
    SCOPED_TRACE(bad);
    o.gpu_share = bad;
    EXPECT_NE(usage_error([&] { validate(o); }).find("(0, 1]"), std::string::npos);
  }
  o.gpu_share = 0.3;
  EXPECT_NO_THROW(validate(o));
  o.decode = DecodeMode::gpu;
  EXPECT_NE(usage_error([&] { validate(o); }).find("--decode both"), std::string::npos);
  o.decode = DecodeMode::cpu;
  EXPECT_NE(usage_error([&] { validate(o); }).find("--decode both"), std::string::npos);
}

TEST(PipelineOptions, WorkersDefaultPerMode) {
  EXPECT_EQ(default_workers(DecodeMode::cpu, 16), 15u);
  EXPECT_EQ(default_workers(DecodeMode::both, 16), 15u);
  EXPECT_EQ(default_workers(DecodeMode::gpu, 16), 4u);
  EXPECT_EQ(default_workers(DecodeMode::gpu, 2), 2u);
  for (const DecodeMode m : {DecodeMode::cpu, DecodeMode::gpu, DecodeMode::both}) {
    EXPECT_EQ(default_workers(m, 1), 1u);
    EXPECT_EQ(default_workers(m, 0), 1u);
  }
  PipelineOptions o;
  o.workers = 7;
  EXPECT_EQ(resolved_workers(o), 7u);
  o.workers = 0;
  EXPECT_GE(resolved_workers(o), 1u);
}

TEST(PipelineOptions, CpuLoaderOptionsCarryTheBatchSeedAndPixels) {
  PipelineOptions o;
  o.batch = 32;
  o.image_size = 64;
  o.seed = 9;
  o.prefetch = 3;
  o.strict = true;
  o.drop_last = true;
  const data::LoaderOptions lo = cpu_loader_options(o, 5);
  EXPECT_EQ(lo.sampling.batch_size, 32u);
  EXPECT_EQ(lo.sampling.seed, 9u);
  EXPECT_TRUE(lo.sampling.drop_last);
  EXPECT_EQ(lo.sample_bytes, 64u * 64u * 3u);
  EXPECT_EQ(lo.workers, 5u);
  EXPECT_EQ(lo.prefetch_depth, 3u);
  EXPECT_TRUE(lo.strict);
}

TEST(PipelineOptions, TensorBytesFollowTheElementType) {
  PipelineOptions o;
  o.image_size = 224;
  o.dtype = ElementType::bf16;
  EXPECT_EQ(tensor_bytes(o, 256), 256u * 224 * 224 * 3 * 2);
  o.dtype = ElementType::f32;
  EXPECT_EQ(tensor_bytes(o, 1), 224u * 224 * 3 * 4);
}

}  // namespace
}  // namespace gb::pipeline
