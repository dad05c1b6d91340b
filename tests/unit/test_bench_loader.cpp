// test_bench_loader.cpp: the `gpubase loader` suite on a tiny synthetic JPEG set (24 images at a
// fifth of ImageNet's size, 64 px output, batch 8, 0.3 s per point): every sweep point and the
// summary results are reported with sane values, the knee and oversubscription are computed as
// documented, a corrupt JPEG is counted as bad, IDX data is refused, and Ctrl-C mid-sweep keeps
// the points measured.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bench/loader.hpp"
#include "core/cancel.hpp"
#include "core/error.hpp"
#include "data/open.hpp"
#include "data/synth.hpp"
#include "test_data_util.hpp"

namespace gb::bench {
namespace {

void make_synth_set(const std::filesystem::path& dir) {
  data::SynthOptions o;
  o.output = dir;
  o.images = 24;
  o.classes = 3;
  o.size_scale = 0.2;
  o.threads = 2;
  data::synth_dataset(o);
}

LoaderBenchOptions quick_options(std::vector<unsigned> workers) {
  LoaderBenchOptions o;
  o.batch_size = 8;
  o.image_size = 64;
  o.workers = std::move(workers);
  o.prefetch_depth = 2;
  o.seconds_per_point = 0.3;
  return o;
}

const Result* find(const std::vector<Result>& results, const std::string& key) {
  for (const Result& r : results)
    if (r.key == key) return &r;
  return nullptr;
}

LoaderPoint point(unsigned workers, double images_per_s) {
  LoaderPoint p;
  p.workers = workers;
  p.images_per_s = images_per_s;
  p.batch_images_per_s = {images_per_s};
  p.images_per_busy_core_s = images_per_s / workers;
  return p;
}

TEST(BenchLoader, ReportsEveryPointTheBestThePerCoreRateAndTheKnee) {
  test::TempDir dir;
  make_synth_set(dir / "set");
  const auto dataset = data::open_dataset({.path = dir / "set"});
  ResultSink sink;
  const LoaderBenchOutcome outcome = run_loader_bench(*dataset, quick_options({1, 2}), sink);
  const std::vector<Result>& results = sink.results();

  ASSERT_EQ(outcome.points.size(), 2u);
  EXPECT_FALSE(outcome.interrupted);
  for (const char* key : {"loader.cpu.w1.images_per_s", "loader.cpu.w2.images_per_s",
                          "loader.cpu.best.images_per_s", "loader.cpu.per_core.images_per_s"}) {
    const Result* r = find(results, key);
    ASSERT_NE(r, nullptr) << key;
    ASSERT_TRUE(r->value) << key;
    EXPECT_GT(*r->value, 0) << key;
    EXPECT_EQ(r->status, Status::info) << key;
  }
  EXPECT_GE(find(results, "loader.cpu.w1.images_per_s")->samples.size(), 1u);
  EXPECT_EQ(find(results, "loader.cpu.per_core.images_per_s")->number_param("workers"), 1);
  EXPECT_EQ(find(results, "loader.cpu.per_core.images_per_s")->number_param("target_images_per_s"), 800);

  const Result* knee = find(results, "loader.cpu.knee.workers");
  ASSERT_NE(knee, nullptr);
  EXPECT_TRUE(*knee->value == 1 || *knee->value == 2);
  EXPECT_NE(knee->text_param("sweep")->find("1: "), std::string::npos);

  EXPECT_GT(*find(results, "loader.stage.decode.ms")->value, 0);
  EXPECT_GT(*find(results, "loader.stage.augment.ms")->value, 0);
  EXPECT_GE(*find(results, "loader.stage.read.ms")->value, 0);
  EXPECT_EQ(*find(results, "loader.bad_samples")->value, 0);

  const Result* wait = find(results, "loader.data_wait_share.pct");
  ASSERT_NE(wait, nullptr);
  EXPECT_EQ(wait->status, Status::skipped);
  EXPECT_NE(wait->reason.find("needs a GPU step"), std::string::npos);

  for (const LoaderPoint& p : outcome.points) {
    EXPECT_GT(p.images, 0u);
    EXPECT_GE(p.worker_idle_share, 0);
    EXPECT_LE(p.worker_idle_share, 1);
  }
}

TEST(BenchLoader, CountsACorruptJpegAsBadAndKeepsGoing) {
  test::TempDir dir;
  make_synth_set(dir / "set");
  // A JPEG start-of-image marker (so the scan takes it) followed by no valid JPEG.
  std::vector<std::uint8_t> corrupt = {0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10};
  corrupt.resize(400, 0x5A);
  test::write_bytes(dir / "set" / data::synth_class_name(0) / "broken.jpg", corrupt);
  const auto dataset = data::open_dataset({.path = dir / "set"});
  ASSERT_EQ(dataset->size(), 25u);

  ResultSink sink;
  run_loader_bench(*dataset, quick_options({1}), sink);
  const Result* bad = find(sink.results(), "loader.bad_samples");
  ASSERT_NE(bad, nullptr);
  EXPECT_EQ(*bad->value, 1);
  EXPECT_NE(bad->reason.find("broken.jpg"), std::string::npos) << bad->reason;
  EXPECT_GT(*find(sink.results(), "loader.cpu.w1.images_per_s")->value, 0);
}

TEST(BenchLoader, SubstitutesABadSampleOncePerEpochTimed) {
  test::TempDir dir;
  make_synth_set(dir / "set");
  test::write_bytes(dir / "set" / data::synth_class_name(1) / "truncated.jpg",
                    {0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 0x4A, 0x46});
  const auto dataset = data::open_dataset({.path = dir / "set"});
  const double n = static_cast<double>(dataset->size());

  ResultSink sink;
  LoaderBenchOptions o = quick_options({1});
  o.seconds_per_point = 1.0;  // several epochs of 25 samples
  run_loader_bench(*dataset, o, sink);
  const Result* point = find(sink.results(), "loader.cpu.w1.images_per_s");
  ASSERT_NE(point, nullptr);
  const double timed = *point->find_param("images_timed")->number;
  const double substituted = *point->find_param("substituted")->number;
  ASSERT_GT(timed, 2 * n) << "too few epochs timed to check";
  // One bad position per epoch: the timed window holds timed / n epochs, give or take the two
  // partial epochs at its ends.
  EXPECT_NEAR(substituted, timed / n, 2.0);
  EXPECT_EQ(*point->find_param("bad_samples")->number, 1);
}

TEST(BenchLoader, RefusesIdxDataWithAClearUsageError) {
  test::TempDir dir;
  std::vector<std::uint8_t> images = {0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 2};
  for (int i = 0; i < 8; ++i) images.push_back(static_cast<std::uint8_t>(i * 30));
  test::write_bytes(dir / "train-images-idx3-ubyte", images);
  test::write_bytes(dir / "train-labels-idx1-ubyte", {0, 0, 8, 1, 0, 0, 0, 2, 0, 1});
  const auto dataset = data::open_dataset({.path = dir.path()});
  ResultSink sink;
  try {
    run_loader_bench(*dataset, quick_options({1}), sink);
    FAIL() << "IDX data was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
    EXPECT_NE(std::string(e.what()).find("loader benchmark needs JPEG samples"), std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(sink.results().empty());
}

TEST(BenchLoader, CtrlCMidSweepKeepsThePointsMeasured) {
  test::TempDir dir;
  make_synth_set(dir / "set");
  const auto dataset = data::open_dataset({.path = dir / "set"});
  // The first point's progress line is where a user's Ctrl-C lands.
  ResultSink sink([](const std::string&) { request_cancel(); });
  const LoaderBenchOutcome outcome = run_loader_bench(*dataset, quick_options({1, 2}), sink);
  reset_cancel();

  EXPECT_TRUE(outcome.interrupted);
  ASSERT_EQ(outcome.points.size(), 1u);
  EXPECT_NE(find(sink.results(), "loader.cpu.w1.images_per_s"), nullptr);
  EXPECT_EQ(find(sink.results(), "loader.cpu.w2.images_per_s"), nullptr);
  EXPECT_NE(find(sink.results(), "loader.cpu.best.images_per_s"), nullptr);
}

TEST(BenchLoader, DefaultSweepDoublesUpToTheUsableCoresAndIncludesThem) {
  EXPECT_EQ(default_worker_sweep(1), (std::vector<unsigned>{1}));
  EXPECT_EQ(default_worker_sweep(2), (std::vector<unsigned>{1, 2}));
  EXPECT_EQ(default_worker_sweep(6), (std::vector<unsigned>{1, 2, 4, 6}));
  EXPECT_EQ(default_worker_sweep(16), (std::vector<unsigned>{1, 2, 4, 8, 16}));
}

TEST(BenchLoader, KneeIsTheFewestWorkersWithinThreePercentOfTheBest) {
  const auto results =
      loader_results({point(1, 800), point(2, 1500), point(4, 2950), point(8, 3000)});
  EXPECT_EQ(*find(results, "loader.cpu.knee.workers")->value, 4);
  EXPECT_EQ(*find(results, "loader.cpu.best.images_per_s")->value, 3000);
  EXPECT_EQ(find(results, "loader.cpu.best.images_per_s")->number_param("workers"), 8);
  EXPECT_EQ(find(results, "loader.cpu.oversubscribed"), nullptr);
}

TEST(BenchLoader, NotesWhenMoreWorkersGotSlower) {
  const auto results = loader_results({point(1, 800), point(2, 1600), point(4, 1200)});
  const Result* note = find(results, "loader.cpu.oversubscribed");
  ASSERT_NE(note, nullptr);
  EXPECT_EQ(note->status, Status::info);
  EXPECT_NEAR(*note->value, 25, 1e-9);
  EXPECT_NE(note->reason.find("4 workers: 1,200 images/s"), std::string::npos) << note->reason;
}

}  // namespace
}  // namespace gb::bench
