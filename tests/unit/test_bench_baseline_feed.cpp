// tests/unit/test_bench_baseline_feed.cpp: what feeds the baseline's training run
// (bench/baseline.hpp choose_training_feed): the CPU path at the loader sweep's knee when it
// keeps up with the model alone (1.0x), else whichever of the knee, the nvJPEG path and the
// CPU/GPU split is expected to feed the most under training, an nvJPEG-fed step being the
// model's step plus the batch's host stage unless the nvJPEG path's decode overlapped a busy GPU
// in the loader stage; a knee that would keep more than kKneeCpuBudgetPct of the cores busy at
// the model's rate gives way to an overlapping split or nvJPEG path that keeps up. The figures
// as an H100 and an H200 measured them (bench/NOTES.md b8, b10, b12).
#include <gtest/gtest.h>

#include <string>

#include "bench/baseline.hpp"
#include "bench/loader.hpp"

namespace {

using gb::bench::choose_training_feed;
using gb::bench::FeedInputs;
using gb::pipeline::DecodeMode;

// A sweep without host-stage figures: the knee at 8,012 images/s, the split at 13,500.
FeedInputs h200_sweep() {
  FeedInputs in;
  in.knee_workers = 16;
  in.knee_images_per_s = 8012;
  in.split_images_per_s = 13500;
  return in;
}

bool says(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The H100's quick baseline (b10): knee 16 workers at 8,606 images/s, the nvJPEG path 22,463
// with 11.7 ms of host stage per batch of 256, ResNet-50 BF16 alone 6,044. Fed by the nvJPEG
// path the training ran 4,809 images/s; the expectation below says 4,736.
FeedInputs h100_quick() {
  FeedInputs in;
  in.knee_workers = 16;
  in.knee_images_per_s = 8606;
  in.gpu_images_per_s = 22463;
  in.gpu_host_us_per_image = 45.7;
  in.split_images_per_s = 27243;
  in.split_host_us_per_image = 34.4;
  return in;
}

TEST(BaselineFeed, AKneeThatKeepsUpFeedsAndTheNvjpegPathsSayWhatTheyWouldFeed) {
  const auto f = choose_training_feed(h100_quick(), 6044.0);
  EXPECT_EQ(f.decode, DecodeMode::cpu);
  EXPECT_EQ(f.workers, 16u);
  EXPECT_TRUE(says(f.why, "16 CPU workers, the knee of the loader sweep (8,606 images/s)")) << f.why;
  EXPECT_TRUE(says(f.why, "1.42x the model's 6,044 images/s alone, it keeps up")) << f.why;
  EXPECT_TRUE(says(f.why, "the nvJPEG path would feed about 4,736 images/s (0.78x")) << f.why;
  EXPECT_TRUE(says(f.why, "45.7 us an image")) << f.why;
  EXPECT_TRUE(says(f.why, "the split would feed about 5,004 images/s (0.83x")) << f.why;
}

TEST(BaselineFeed, TheHostStageBringsTheExpectationToTheMeasuredStep) {
  // The H200's full baseline (b8): the split's host stage 8.8 ms a batch of 256, the model alone
  // 7,050 (36.3 ms a step); the split fed 5,703 (44.9 ms a step). Expected: 256 / 45.1 ms.
  FeedInputs in;
  in.knee_workers = 16;
  in.knee_images_per_s = 5000;  // a host whose knee cannot keep up
  in.split_images_per_s = 27243;
  in.split_host_us_per_image = 8.8e3 / 256;
  const auto f = choose_training_feed(in, 7050.0);
  EXPECT_EQ(f.decode, DecodeMode::both);
  EXPECT_TRUE(says(f.why, "it would feed about 5,675 images/s (0.80x")) << f.why;
  EXPECT_TRUE(says(f.why, "the most expected; the CPU knee 0.71x")) << f.why;
}

TEST(BaselineFeed, AKneeBarelyFasterThanTheModelFeedsIt) {
  // The H200's full baseline: the knee 1.04x the model fed it with 0.43 % data wait, where
  // the split fed 81 % of it.
  FeedInputs in = h100_quick();
  in.knee_images_per_s = 7343;
  const auto f = choose_training_feed(in, 7050.0);
  EXPECT_EQ(f.decode, DecodeMode::cpu);
  EXPECT_EQ(f.workers, 16u);
  EXPECT_TRUE(says(f.why, "1.04x the model's 7,050 images/s alone")) << f.why;
}

TEST(BaselineFeed, AKneeJustBelowTheModelStillBeatsAnNvjpegPathThatWaitsForItsHostStage) {
  FeedInputs in = h100_quick();
  in.knee_images_per_s = 6900;
  const auto f = choose_training_feed(in, 7050.0);
  EXPECT_EQ(f.decode, DecodeMode::cpu);
  EXPECT_TRUE(says(f.why, "0.98x the model's 7,050 images/s alone, below 1.0x and still the most "
                          "expected")) << f.why;
}

TEST(BaselineFeed, ASlowKneeGivesTheNvjpegPathWhenItIsExpectedToFeedMore) {
  FeedInputs in = h100_quick();
  in.split_images_per_s.reset();
  in.split_host_us_per_image.reset();
  in.knee_images_per_s = 2000;  // a host with few cores
  const auto f = choose_training_feed(in, 6044.0);
  EXPECT_EQ(f.decode, DecodeMode::gpu);
  EXPECT_EQ(f.workers, 0u);
  EXPECT_TRUE(says(f.why, "the nvJPEG path (22,463 images/s in the loader stage)")) << f.why;
  EXPECT_TRUE(says(f.why, "the CPU knee 0.33x")) << f.why;
}

TEST(BaselineFeed, WithoutAHostStageFigureTheLoaderRateCappedAtTheModelCounts) {
  FeedInputs in;
  in.knee_workers = 16;
  in.knee_images_per_s = 8012;
  in.split_images_per_s = 13500;
  const auto f = choose_training_feed(in, 8500.0);
  EXPECT_EQ(f.decode, DecodeMode::both);
  EXPECT_EQ(f.workers, 0u);  // the pipeline's default for the split
  EXPECT_TRUE(says(f.why, "it would feed about 8,500 images/s (1.00x)")) << f.why;
}

TEST(BaselineFeed, AKneeWithHeadroomFeedsWithTheKneesWorkers) {
  const auto f = choose_training_feed(h100_quick(), 2280.0);  // ResNet-50 TF32
  EXPECT_EQ(f.decode, DecodeMode::cpu);
  EXPECT_EQ(f.workers, 16u);
  EXPECT_TRUE(says(f.why, "16 CPU workers, the knee")) << f.why;
}

TEST(BaselineFeed, ExactlyTheHeadroomIsEnough) {
  FeedInputs in;
  in.knee_workers = 16;
  in.split_images_per_s = 13500;
  in.knee_images_per_s = 1000;
  EXPECT_EQ(choose_training_feed(in, 1000.0).decode, DecodeMode::cpu);
  in.knee_images_per_s = 999;
  EXPECT_EQ(choose_training_feed(in, 1000.0).decode, DecodeMode::both);
}

TEST(BaselineFeed, WithoutNvjpegTheKneeFeedsAndTheRunSaysWhy) {
  FeedInputs in;
  in.knee_workers = 16;
  in.knee_images_per_s = 8012;
  in.nvjpeg_missing = "libnvjpeg not found";
  auto f = choose_training_feed(in, 7050.0);
  EXPECT_EQ(f.decode, DecodeMode::cpu);
  EXPECT_TRUE(says(f.why, "no nvJPEG path (libnvjpeg not found)")) << f.why;
  f = choose_training_feed(in, 8500.0);  // nothing keeps up: the knee, the only one
  EXPECT_EQ(f.decode, DecodeMode::cpu);
  EXPECT_EQ(f.workers, 16u);
  EXPECT_TRUE(says(f.why, "no nvJPEG path (libnvjpeg not found)")) << f.why;
}

TEST(BaselineFeed, UnknownModelRateTakesTheFastest) {
  EXPECT_EQ(choose_training_feed(h200_sweep(), std::nullopt).decode, DecodeMode::both);
  FeedInputs fast_gpu = h200_sweep();
  fast_gpu.gpu_images_per_s = 14000;
  EXPECT_EQ(choose_training_feed(fast_gpu, std::nullopt).decode, DecodeMode::gpu);
  FeedInputs slow_split = h200_sweep();
  slow_split.split_images_per_s = 5000;
  const auto f = choose_training_feed(slow_split, std::nullopt);
  EXPECT_EQ(f.decode, DecodeMode::cpu);
  EXPECT_EQ(f.workers, 16u);
}

TEST(BaselineFeed, StarveAlwaysGivesOneCpuWorker) {
  FeedInputs in = h200_sweep();
  in.starve = true;
  const auto f = choose_training_feed(in, 7020.0);
  EXPECT_EQ(f.decode, DecodeMode::cpu);
  EXPECT_EQ(f.workers, 1u);
  EXPECT_TRUE(says(f.why, "--starve")) << f.why;
}

TEST(BaselineFeed, NoKneeFallsBackToTheSplitOrTheDefault) {
  FeedInputs in;
  in.split_images_per_s = 9000;
  EXPECT_EQ(choose_training_feed(in, 7020.0).decode, DecodeMode::both);
  in.split_images_per_s.reset();
  const auto f = choose_training_feed(in, 7020.0);
  EXPECT_EQ(f.decode, DecodeMode::cpu);
  EXPECT_EQ(f.workers, 0u);
  EXPECT_TRUE(says(f.why, "default workers")) << f.why;
}

}  // namespace

namespace {

// The loader stage with the nvJPEG path beside a busy GPU: the GPU waited `wait_pct` of the time
// beside one-block steps three times the path's own batch time. The H100 (b12, 16 cores): knee
// 9,164 images/s at 16 workers, the nvJPEG path 19,878 (hardware decoder unpipelined), the split
// 26,769; ResNet-50 BF16 alone 6,035.
FeedInputs h100_beside(double wait_pct) {
  FeedInputs in;
  in.knee_workers = 16;
  in.knee_images_per_s = 9164;
  in.gpu_images_per_s = 19878;
  in.gpu_host_us_per_image = 13.0e3 / 256;
  in.split_images_per_s = 26769;
  in.split_host_us_per_image = 9.0e3 / 256;
  in.usable_cores = 16;
  in.gpu_wait_beside_step_pct = wait_pct;
  return in;
}

// An H200's figures (b8: knee 8,012 at 16 workers on 16 cores, the model ~7,050) with the same
// nvJPEG paths: at the model's rate the knee's workers would keep ~88 % of the cores busy.
FeedInputs h200_beside(double wait_pct) {
  FeedInputs in = h100_beside(wait_pct);
  in.knee_images_per_s = 8012;
  return in;
}

}  // namespace

TEST(BaselineFeed, AKneeWithinTheCpuBudgetFeedsEvenWhenTheNvjpegDecodeOverlaps) {
  const auto f = choose_training_feed(h100_beside(0.8), 6035.0);
  EXPECT_EQ(f.decode, DecodeMode::cpu);
  EXPECT_EQ(f.workers, 16u);
  EXPECT_TRUE(says(f.why, "1.52x the model's 6,035 images/s alone, it keeps up, its workers "
                          "would keep 66 % of the 16 cores busy at the model's rate"))
      << f.why;
  // The nvJPEG paths are capped at the model's rate, not held back by their host stage.
  EXPECT_TRUE(says(f.why, "the nvJPEG path would feed about 6,035 images/s (1.00x: its decode "
                          "overlapped a busy GPU in the loader stage)"))
      << f.why;
}

TEST(BaselineFeed, AKneeThatWouldDrownTheCpuGivesWayToAnOverlappingSplit) {
  const auto f = choose_training_feed(h200_beside(0.8), 7050.0);
  EXPECT_EQ(f.decode, DecodeMode::both);
  EXPECT_EQ(f.workers, 0u);
  EXPECT_TRUE(says(f.why, "the CPU/GPU split (nvJPEG + CPU workers, 26,769 images/s")) << f.why;
  EXPECT_TRUE(says(f.why, "it would feed about 7,050 images/s (1.00x")) << f.why;
  EXPECT_TRUE(says(f.why, "it keeps up with the CPU and the JPEG engines sharing the work; the "
                          "CPU knee 1.14x the model's 7,050 images/s alone, its workers would "
                          "keep 88 % of the 16 cores busy at the model's rate, over 70 %"))
      << f.why;
}

TEST(BaselineFeed, WithoutASplitTheOverlappingNvjpegPathTakesOverFromADrowningKnee) {
  FeedInputs in = h200_beside(0.8);
  in.split_images_per_s.reset();
  in.split_host_us_per_image.reset();
  const auto f = choose_training_feed(in, 7050.0);
  EXPECT_EQ(f.decode, DecodeMode::gpu);
  EXPECT_TRUE(says(f.why, "it keeps up and leaves the CPU cores free")) << f.why;
}

TEST(BaselineFeed, ADrowningKneeStillFeedsWhenTheNvjpegDecodeTakesTurnsWithTheStep) {
  // 24 % waiting beside steps three times its batch: the decode and the step took turns, so
  // the nvJPEG paths would feed less than the model; the knee keeps up, at a CPU cost.
  const auto f = choose_training_feed(h200_beside(24.0), 7050.0);
  EXPECT_EQ(f.decode, DecodeMode::cpu);
  EXPECT_EQ(f.workers, 16u);
  EXPECT_TRUE(says(f.why, "its workers would keep 88 % of the 16 cores busy")) << f.why;
  EXPECT_TRUE(says(f.why, "the decode of each batch and the step take turns")) << f.why;
}

TEST(BaselineFeed, AnOverlappingNvjpegPathSlowerThanTheModelLeavesADrowningKneeToFeed) {
  FeedInputs in = h200_beside(2.0);
  in.gpu_images_per_s = 5000;  // a card with slow engines: below the model even when it overlaps
  in.split_images_per_s = 6500;
  const auto f = choose_training_feed(in, 7050.0);
  EXPECT_EQ(f.decode, DecodeMode::cpu);
  EXPECT_EQ(f.workers, 16u);
  EXPECT_TRUE(says(f.why, "the nvJPEG path would feed about 5,000 images/s (0.71x")) << f.why;
}

TEST(BaselineFeed, JustUnderTheOverlapLineCountsAsOverlappingAndAtItAsTakingTurns) {
  EXPECT_EQ(
      choose_training_feed(h200_beside(gb::bench::kOverlapWaitPct - 0.01), 7050.0).decode,
      DecodeMode::both);
  EXPECT_EQ(choose_training_feed(h200_beside(gb::bench::kOverlapWaitPct), 7050.0).decode,
            DecodeMode::cpu);
}

TEST(BaselineFeed, WithoutTheCoreCountTheKneeThatKeepsUpFeeds) {
  FeedInputs in = h200_beside(0.8);
  in.usable_cores.reset();
  const auto f = choose_training_feed(in, 7050.0);
  EXPECT_EQ(f.decode, DecodeMode::cpu);
  EXPECT_FALSE(says(f.why, "cores busy")) << f.why;
}
