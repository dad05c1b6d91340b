// tests/unit/test_pipeline_process.cpp: the input pipeline's host side without a GPU: the CPU
// path's per-sample work is JpegDecoder::decode_augment with the loader's Philox stream (and a
// bad JPEG is a bad sample with the decoder's reason), next_batch() runs on across epochs with
// the epoch counted, a slot's record and payload are where the layout says, and
// make_input_pipeline() refuses a dataset without JPEGs and bad options as usage errors, and
// says why it cannot run in a build or on a machine without a GPU.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "data/decode.hpp"
#include "data/loader.hpp"
#include "pipeline/input_pipeline.hpp"
#include "pipeline/process.hpp"
#include "test_data_util.hpp"

namespace gb::pipeline {
namespace {

// n small JPEGs (or, with raw, raw pixels), labels i % 3, in memory.
class MemoryImages : public data::Dataset {
 public:
  MemoryImages(std::size_t n, bool raw = false) : raw_(raw) {
    for (std::size_t i = 0; i < n; ++i)
      jpegs_.push_back(
          test::small_jpeg(40 + static_cast<int>(i % 4) * 8, 32, static_cast<unsigned>(i + 1)));
  }
  std::string_view kind() const override { return "memory"; }
  std::string source() const override { return "memory"; }
  std::size_t size() const override { return jpegs_.size(); }
  data::SampleFormat format() const override {
    return raw_ ? data::SampleFormat::raw_u8 : data::SampleFormat::jpeg;
  }
  std::optional<data::RawShape> raw_shape() const override {
    if (!raw_) return std::nullopt;
    return data::RawShape{2, 2, 3};
  }
  const std::vector<std::string>& class_names() const override { return names_; }
  std::int32_t label(std::size_t i) const override { return static_cast<std::int32_t>(i % 3); }
  data::Sample read(std::size_t i, std::vector<std::uint8_t>& scratch) const override {
    scratch = jpegs_[i];
    return {scratch, label(i)};
  }
  std::string sample_name(std::size_t i) const override { return "#" + std::to_string(i); }

  const std::vector<std::uint8_t>& jpeg(std::size_t i) const { return jpegs_[i]; }

 private:
  bool raw_;
  std::vector<std::vector<std::uint8_t>> jpegs_;
  std::vector<std::string> names_{"a", "b", "c"};
};

TEST(PipelineProcess, CpuWorkIsDecodeAugmentOnTheLoadersStream) {
  const MemoryImages ds(4);
  constexpr int kSize = 24;
  const data::ProcessFn process = jpeg_train_process(2, kSize);
  data::AugmentOptions augment;
  augment.out_w = augment.out_h = kSize;
  augment.layout = data::PixelLayout::hwc;
  for (std::size_t i = 0; i < ds.size(); ++i) {
    SCOPED_TRACE(i);
    std::vector<std::uint8_t> got(kSize * kSize * 3), want(got.size());
    data::Philox rng_a(5, 1, i), rng_b(5, 1, i);
    data::SampleView v;
    v.bytes = ds.jpeg(i);
    v.index = i;
    v.worker = static_cast<unsigned>(i % 2);
    const data::SampleResult r = process(v, rng_a, got);
    ASSERT_TRUE(r.ok) << r.reason;
    EXPECT_GE(r.stage_s[0], 0.0);
    data::JpegDecoder decoder;
    data::DecodeScratch scratch;
    decoder.decode_augment(ds.jpeg(i), rng_b, augment, want.data(), scratch);
    EXPECT_EQ(got, want);
  }
}

TEST(PipelineProcess, ABadJpegIsABadSampleWithTheDecodersReason) {
  const data::ProcessFn process = jpeg_train_process(1, 16);
  std::vector<std::uint8_t> junk = test::bytes_of("not a jpeg at all");
  std::vector<std::uint8_t> dst(16 * 16 * 3);
  data::Philox rng(0, 0, 0);
  data::SampleView v;
  v.bytes = junk;
  const data::SampleResult r = process(v, rng, dst);
  EXPECT_FALSE(r.ok);
  EXPECT_FALSE(r.reason.empty());
}

TEST(PipelineProcess, NextBatchRunsOnAcrossEpochs) {
  const MemoryImages ds(10);
  data::LoaderOptions lo;
  lo.sampling.batch_size = 4;  // 3 batches an epoch, the last of 2
  lo.sample_bytes = 16 * 16 * 3;
  lo.workers = 2;
  lo.prefetch_depth = 2;
  data::Loader loader(ds, lo, jpeg_train_process(2, 16));
  std::uint32_t epoch = 0;
  loader.start_epoch(epoch);
  std::vector<std::uint32_t> epochs;
  std::size_t images = 0;
  for (int k = 0; k < 8; ++k) {
    const auto b = next_batch(loader, epoch);
    ASSERT_TRUE(b);
    EXPECT_EQ(b->epoch, epoch);
    epochs.push_back(b->epoch);
    images += b->size;
    loader.release(*b);
  }
  EXPECT_EQ(epochs, (std::vector<std::uint32_t>{0, 0, 0, 1, 1, 1, 2, 2}));
  EXPECT_EQ(images, 10u + 10u + 8u);
  loader.stop();
}

TEST(PipelineProcess, SlotRecordAndPayloadFollowTheLayout) {
  constexpr std::size_t kSampleBytes = kSlotRecordBytes + 16;
  std::vector<std::uint8_t> slot(2 * kSampleBytes, 0);
  SlotRecord rec;
  rec.jpeg_bytes = 12;
  rec.width = 3;
  rec.decoded = 1;
  std::memcpy(slot.data() + kSampleBytes, &rec, sizeof rec);
  slot[kSampleBytes + kSlotRecordBytes] = 0x5A;
  data::Batch b;
  b.size = 2;
  b.data = slot;
  EXPECT_EQ(slot_record(b, 1, kSampleBytes).jpeg_bytes, 12u);
  EXPECT_EQ(slot_record(b, 1, kSampleBytes).width, 3);
  EXPECT_EQ(slot_record(b, 1, kSampleBytes).decoded, 1);
  EXPECT_EQ(slot_record(b, 0, kSampleBytes).jpeg_bytes, 0u);
  EXPECT_EQ(*slot_payload(b, 1, kSampleBytes), 0x5A);
}

TEST(PipelineFactory, ADatasetWithoutJpegsIsAUsageError) {
  const MemoryImages raw(4, /*raw=*/true);
  std::string why_not;
  try {
    make_input_pipeline(raw, PipelineOptions{}, why_not);
    ADD_FAILURE() << "accepted raw samples";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
    EXPECT_NE(std::string(e.what()).find("JPEG"), std::string::npos) << e.what();
  }
}

TEST(PipelineFactory, BadOptionsAreUsageErrorsBeforeTheGpuIsLookedFor) {
  const MemoryImages ds(4);
  PipelineOptions o;
  o.decode = DecodeMode::both;  // no share
  std::string why_not;
  try {
    make_input_pipeline(ds, o, why_not);
    ADD_FAILURE() << "accepted --decode both without a share";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
  }
  EXPECT_TRUE(why_not.empty());
}

TEST(PipelineFactory, WithoutAGpuThereIsNoPipelineAndTheReasonSaysWhy) {
  const MemoryImages ds(8);
  std::string why_not;
  PipelineOptions o;
  o.batch = 4;
  o.image_size = 16;
  o.workers = 1;
  const auto in = make_input_pipeline(ds, o, why_not);
  if (in) GTEST_SKIP() << "this machine has a GPU: the pipeline runs (tests/gpu cover it)";
#ifdef GPUBASE_WITH_CUDA
  EXPECT_NE(why_not.find("no GPU found"), std::string::npos) << why_not;
#else
  EXPECT_NE(why_not.find("built without CUDA"), std::string::npos) << why_not;
#endif
}

}  // namespace
}  // namespace gb::pipeline
