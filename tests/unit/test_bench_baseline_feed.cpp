// tests/unit/test_bench_baseline_feed.cpp: what feeds the baseline's training run
// (bench/baseline.hpp choose_training_feed): of the nvJPEG path, the CPU path at the loader
// sweep's knee and the CPU/GPU split, the first that keeps up with the model alone (1.0x), else
// the fastest; the figures as the H200 measured them (bench/NOTES.md b8: knee 16 workers at 7,343
// images/s, ResNet-50 BF16 7,050).
#include <gtest/gtest.h>

#include <string>

#include "bench/baseline.hpp"

namespace {

using gb::bench::choose_training_feed;
using gb::bench::FeedInputs;
using gb::pipeline::DecodeMode;

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

TEST(BaselineFeed, AKneeSlowerThanTheModelGivesTheSplit) {
  const auto f = choose_training_feed(h200_sweep(), 8500.0);
  EXPECT_EQ(f.decode, DecodeMode::both);
  EXPECT_EQ(f.workers, 0u);  // the pipeline's default for the split
  EXPECT_TRUE(says(f.why, "CPU/GPU split")) << f.why;
  EXPECT_TRUE(says(f.why, "neither path alone keeps up")) << f.why;
  EXPECT_TRUE(says(f.why, "the CPU knee 0.94x the model's 8,500 images/s alone")) << f.why;
}

TEST(BaselineFeed, AnNvjpegPathThatKeepsUpFeedsBeforeTheKnee) {
  FeedInputs in = h200_sweep();
  in.knee_images_per_s = 7343;
  in.gpu_images_per_s = 15000;
  const auto f = choose_training_feed(in, 7050.0);
  EXPECT_EQ(f.decode, DecodeMode::gpu);
  EXPECT_EQ(f.workers, 0u);
  EXPECT_TRUE(says(f.why, "the nvJPEG path (15,000 images/s")) << f.why;
  EXPECT_TRUE(says(f.why, "2.13x the model's 7,050 images/s alone")) << f.why;
  EXPECT_TRUE(says(f.why, "leaves the CPU cores free")) << f.why;
}

TEST(BaselineFeed, AnNvjpegPathBelowTheModelLeavesItToTheKnee) {
  FeedInputs in = h200_sweep();
  in.knee_images_per_s = 7343;
  in.gpu_images_per_s = 6000;
  const auto f = choose_training_feed(in, 7050.0);
  EXPECT_EQ(f.decode, DecodeMode::cpu);
  EXPECT_EQ(f.workers, 16u);
  EXPECT_TRUE(says(f.why, "the nvJPEG path alone is 0.85x")) << f.why;
}

TEST(BaselineFeed, NothingKeepsUpAndNoSplitGivesTheFaster) {
  FeedInputs in = h200_sweep();
  in.split_images_per_s.reset();
  in.gpu_images_per_s = 6000;
  in.knee_images_per_s = 5000;
  const auto f = choose_training_feed(in, 7050.0);
  EXPECT_EQ(f.decode, DecodeMode::gpu);
  EXPECT_TRUE(says(f.why, "the fastest measured; nothing keeps up")) << f.why;
  in.knee_images_per_s = 6500;
  EXPECT_EQ(choose_training_feed(in, 7050.0).decode, DecodeMode::cpu);
}

TEST(BaselineFeed, AKneeBarelyFasterThanTheModelFeedsIt) {
  // The H200's full baseline: the knee 1.04x the model fed it with 0.43 % data wait, where
  // the split fed 81 % of it.
  FeedInputs in = h200_sweep();
  in.knee_images_per_s = 7343;
  const auto f = choose_training_feed(in, 7050.0);
  EXPECT_EQ(f.decode, DecodeMode::cpu);
  EXPECT_EQ(f.workers, 16u);
  EXPECT_TRUE(says(f.why, "1.04x the model's 7,050 images/s alone")) << f.why;
}

TEST(BaselineFeed, AKneeWithHeadroomFeedsWithTheKneesWorkers) {
  const auto f = choose_training_feed(h200_sweep(), 2280.0);  // ResNet-50 TF32
  EXPECT_EQ(f.decode, DecodeMode::cpu);
  EXPECT_EQ(f.workers, 16u);
  EXPECT_TRUE(says(f.why, "16 CPU workers, the knee")) << f.why;
  EXPECT_TRUE(says(f.why, "at least 1.0x")) << f.why;
}

TEST(BaselineFeed, ExactlyTheHeadroomIsEnough) {
  FeedInputs in = h200_sweep();
  in.knee_images_per_s = 1000;
  EXPECT_EQ(choose_training_feed(in, 1000.0).decode, DecodeMode::cpu);
  in.knee_images_per_s = 999;
  EXPECT_EQ(choose_training_feed(in, 1000.0).decode, DecodeMode::both);
}

TEST(BaselineFeed, WithoutTheSplitTheKneeFeedsAndTheRunSaysWhy) {
  FeedInputs in = h200_sweep();
  in.split_images_per_s.reset();
  in.nvjpeg_missing = "libnvjpeg not found";
  const auto f = choose_training_feed(in, 8500.0);
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
