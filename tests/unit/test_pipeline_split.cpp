// tests/unit/test_pipeline_split.cpp: the CPU/GPU split's rule, share and per-sample work:
// which samples go to nvJPEG (a deterministic function of the dataset index that hits the asked
// share over the whole set and within a few samples over any batch-sized window), the share that
// balances two measured rates, and split_process sending each sample to the reader or to the CPU
// path, the CPU one behind a record that says so, with its stage times moved to stages 2 and 3.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include <cstring>
#include <string>
#include <vector>

#include "pipeline/process.hpp"
#include "pipeline/split.hpp"

namespace gb::pipeline {
namespace {

std::size_t sent(std::size_t from, std::size_t count, double share) {
  std::size_t n = 0;
  for (std::size_t i = from; i < from + count; ++i) n += split_to_gpu(i, share) ? 1 : 0;
  return n;
}

TEST(PipelineSplit, NoShareSendsNothingAndAWholeShareSendsEverything) {
  EXPECT_EQ(sent(0, 1000, 0), 0u);
  EXPECT_EQ(sent(0, 1000, -1), 0u);
  EXPECT_EQ(sent(0, 1000, 1), 1000u);
  EXPECT_EQ(sent(0, 1000, 2), 1000u);
}

TEST(PipelineSplit, HitsTheShareOverTheSetAndWithinAFewSamplesPerBatchWindow) {
  for (const double share : {0.05, 0.29, 0.5, 0.714, 0.95}) {
    SCOPED_TRACE(share);
    EXPECT_NEAR(static_cast<double>(sent(0, 100000, share)) / 100000, share, 1e-3);
    // Any 256 consecutive indices (a shuffled batch draws from all over, this is the worst case
    // of an unshuffled one): the golden-ratio sequence stays within a few samples of the share.
    for (std::size_t from = 0; from < 20000; from += 997) {
      const double got = static_cast<double>(sent(from, 256, share));
      EXPECT_NEAR(got, 256 * share, 4.0) << "from " << from;
    }
  }
}

TEST(PipelineSplit, TheRuleDependsOnTheIndexOnly) {
  for (std::size_t i = 0; i < 5000; i += 7) EXPECT_EQ(split_to_gpu(i, 0.6), split_to_gpu(i, 0.6));
  // A larger share sends a superset: raising it never takes a sample back from the GPU.
  for (std::size_t i = 0; i < 5000; ++i) {
    if (split_to_gpu(i, 0.3)) {
      EXPECT_TRUE(split_to_gpu(i, 0.7)) << i;
    }
  }
}

TEST(PipelineSplit, BalancedShareIsGpuRateOverBothRates) {
  // R_gpu / (R_gpu + R_cpu) keeps both paths busy; inputs whose share lies inside the 5-100 %
  // clamp, so each value is the formula's own. nvJPEG at 20,000 and 16 CPU workers at 8,000
  // images/s: 5/7 to the GPU, 28,000 together.
  const std::vector<std::pair<double, double>> rates = {
      {20000, 8000}, {8000, 20000}, {1000, 1000}, {600, 9400}, {23253, 7459}, {99, 1}};
  for (const auto& [gpu, cpu] : rates) {
    const double share = gpu / (gpu + cpu);
    ASSERT_GT(share, 0.05) << gpu << " " << cpu;  // inside the clamp
    ASSERT_LT(share, 1.0) << gpu << " " << cpu;
    EXPECT_DOUBLE_EQ(balanced_gpu_share(gpu, cpu), share) << gpu << " vs " << cpu;
  }
  EXPECT_DOUBLE_EQ(balanced_gpu_share(20000, 8000), 5.0 / 7.0);
  EXPECT_DOUBLE_EQ(balanced_gpu_share(1000, 1000), 0.5);
}

TEST(PipelineSplit, BalancedShareIsClampedToFiveToHundredPercent) {
  // Below 5 %: at least a trickle to the GPU, so the split still measures both paths.
  ASSERT_LT(100 / (100 + 1e9), 0.05);
  EXPECT_DOUBLE_EQ(balanced_gpu_share(100, 1e9), 0.05);
  ASSERT_LT(400.0 / (400 + 9600), 0.05);
  EXPECT_DOUBLE_EQ(balanced_gpu_share(400, 9600), 0.05);
  // A path that measured nothing: no GPU rate sends the minimum, no CPU rate everything.
  EXPECT_DOUBLE_EQ(balanced_gpu_share(0, 8000), 0.05);
  EXPECT_DOUBLE_EQ(balanced_gpu_share(-1, 8000), 0.05);
  EXPECT_DOUBLE_EQ(balanced_gpu_share(20000, 0), 1.0);
  EXPECT_DOUBLE_EQ(balanced_gpu_share(20000, -1), 1.0);
}

// Stand-ins for the two paths: the reader writes a record with jpeg_bytes = 7 and marks byte
// 64; the CPU path fills its pixels with the sample's index and reports 1 ms + 2 ms.
data::ProcessFn fake_reader() {
  return [](const data::SampleView&, data::Philox&, std::span<std::uint8_t> dst) {
    SlotRecord rec;
    rec.jpeg_bytes = 7;
    std::memcpy(dst.data(), &rec, sizeof rec);
    dst[kSlotRecordBytes] = 0xAB;
    data::SampleResult r;
    r.stage_s[0] = 0.5;
    r.stage_s[1] = 0.25;
    return r;
  };
}

data::ProcessFn fake_cpu(std::size_t* calls) {
  return [calls](const data::SampleView& s, data::Philox&, std::span<std::uint8_t> dst) {
    ++*calls;
    std::memset(dst.data(), static_cast<int>(s.index & 0xFF), dst.size());
    data::SampleResult r;
    r.stage_s[0] = 1e-3;
    r.stage_s[1] = 2e-3;
    return r;
  };
}

TEST(PipelineSplit, ProcessSendsEachSampleWhereTheRuleSays) {
  constexpr int kSize = 4;
  const std::size_t pixels = kSize * kSize * 3;
  std::size_t cpu_calls = 0;
  const data::ProcessFn process = split_process(fake_reader(), fake_cpu(&cpu_calls), kSize, 0.5);
  std::vector<std::uint8_t> slot(kSlotRecordBytes + pixels);
  data::Philox rng(1, 0, 0);
  std::size_t sent = 0;
  for (std::size_t i = 0; i < 40; ++i) {
    SCOPED_TRACE(i);
    std::fill(slot.begin(), slot.end(), std::uint8_t{0});
    data::SampleView v;
    v.index = i;
    const data::SampleResult r = process(v, rng, slot);
    ASSERT_TRUE(r.ok);
    SlotRecord rec;
    std::memcpy(&rec, slot.data(), sizeof rec);
    if (split_to_gpu(i, 0.5)) {
      ++sent;
      EXPECT_EQ(rec.decoded, 0);
      EXPECT_EQ(rec.jpeg_bytes, 7u);
      EXPECT_EQ(slot[kSlotRecordBytes], 0xAB);
      EXPECT_DOUBLE_EQ(r.stage_s[0], 0.5);  // header, copy
      EXPECT_DOUBLE_EQ(r.stage_s[2], 0.0);
    } else {
      EXPECT_EQ(rec.decoded, 1);
      EXPECT_EQ(rec.width, kSize);
      EXPECT_EQ(rec.height, kSize);
      EXPECT_EQ(slot[kSlotRecordBytes], static_cast<std::uint8_t>(i));
      EXPECT_EQ(slot.back(), static_cast<std::uint8_t>(i));
      EXPECT_DOUBLE_EQ(r.stage_s[0], 0.0);
      EXPECT_DOUBLE_EQ(r.stage_s[2], 1e-3);  // decode, augment after header, copy
      EXPECT_DOUBLE_EQ(r.stage_s[3], 2e-3);
    }
  }
  EXPECT_EQ(cpu_calls, 40 - sent);
  EXPECT_GT(sent, 10u);
  EXPECT_LT(sent, 30u);
}

TEST(PipelineSplit, ABadCpuSampleStaysBadWithItsReason) {
  const data::ProcessFn bad_cpu = [](const data::SampleView&, data::Philox&,
                                     std::span<std::uint8_t>) {
    return data::SampleResult::bad("truncated");
  };
  const data::ProcessFn process = split_process(fake_reader(), bad_cpu, 4, 0.0);  // all to CPU
  std::vector<std::uint8_t> slot(kSlotRecordBytes + 48);
  data::Philox rng(1, 0, 0);
  const data::SampleResult r = process(data::SampleView{}, rng, slot);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.reason, "truncated");
}

}  // namespace
}  // namespace gb::pipeline
