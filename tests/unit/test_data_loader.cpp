// test_data_loader.cpp: the loader's worker pool on a small in-memory dataset -- batches that
// are the same byte for byte with 1 and 4 workers, in-order delivery whatever order samples
// finish in, bad samples substituted and counted (or, strict, an error naming the sample),
// exceptions reaching next(), stop() and Ctrl-C mid-epoch, memory constant over epochs, and the
// look-ahead: the next epoch filled before start_epoch(), adopted byte for byte, discarded by any
// other start_epoch(), its errors kept out of the epoch still running.
//
// The process callback writes, for sample i, its index, its label, two rng draws and a checksum
// of its bytes: any change of order, rng keying or worker interference shows in the bytes.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/cancel.hpp"
#include "core/error.hpp"
#include "data/loader.hpp"
#include "test_thread_names.hpp"

namespace gb::data {
namespace {

constexpr std::size_t kSampleBytes = 24;

// Sample i: (i % 7) + 3 bytes, each a function of i, copied into the caller's scratch (as
// ImageFolder does); label i % 10. A bad sample's first byte is 0xBA (a good one's 0); an
// unreadable one throws gb::Error from read().
class MemoryDataset : public Dataset {
 public:
  explicit MemoryDataset(std::size_t n, std::set<std::size_t> bad = {},
                         std::set<std::size_t> unreadable = {})
      : n_(n),
        bad_(std::move(bad)),
        unreadable_(std::move(unreadable)),
        classes_(numeric_class_names(10)) {}

  std::string_view kind() const override { return "memory"; }
  std::string source() const override { return "memory"; }
  std::size_t size() const override { return n_; }
  SampleFormat format() const override { return SampleFormat::raw_u8; }
  const std::vector<std::string>& class_names() const override { return classes_; }
  std::int32_t label(std::size_t i) const override { return static_cast<std::int32_t>(i % 10); }
  std::string sample_name(std::size_t i) const override { return "mem#" + std::to_string(i); }

  Sample read(std::size_t i, std::vector<std::uint8_t>& scratch) const override {
    if (unreadable_.count(i) != 0)
      throw Error(ErrorKind::runtime, "mem#" + std::to_string(i) + ": cannot read");
    scratch.resize(i % 7 + 3);
    for (std::size_t k = 0; k < scratch.size(); ++k) {
      scratch[k] = static_cast<std::uint8_t>(i * 13 + k * 7);
    }
    scratch[0] = bad_.count(i) != 0 ? 0xBA : 0x00;
    return {scratch, label(i)};
  }

 private:
  std::size_t n_;
  std::set<std::size_t> bad_;
  std::set<std::size_t> unreadable_;
  std::vector<std::string> classes_;
};

SampleResult write_sample(const SampleView& s, Philox& rng, std::span<std::uint8_t> dst) {
  if (!s.bytes.empty() && s.bytes[0] == 0xBA) return SampleResult::bad("not an image");
  std::uint32_t sum = 0;
  for (std::uint8_t b : s.bytes) sum = sum * 31 + b;
  const std::uint64_t index = s.index;
  const std::uint32_t draw = rng.next_u32();
  const double u = rng.uniform();
  std::memcpy(dst.data(), &index, 8);
  std::memcpy(dst.data() + 8, &draw, 4);
  std::memcpy(dst.data() + 12, &u, 8);
  std::memcpy(dst.data() + 20, &sum, 4);
  SampleResult r;
  r.stage_s = {0.001, 0.002, 0, 0};
  return r;
}

// A pseudo-random sleep of up to max_us per sample, different per index.
void jitter(std::size_t index, int max_us) {
  const auto us = static_cast<int>((index * 2654435761u) % static_cast<unsigned>(max_us));
  std::this_thread::sleep_for(std::chrono::microseconds(us));
}

LoaderOptions small_options(unsigned workers) {
  LoaderOptions o;
  o.sampling = {.batch_size = 8, .seed = 42};
  o.sample_bytes = kSampleBytes;
  o.workers = workers;
  o.prefetch_depth = 3;
  return o;
}

struct Delivered {
  std::vector<std::uint8_t> data;
  std::vector<std::int32_t> labels;
  std::vector<std::size_t> indices;
  std::vector<std::size_t> numbers;
  std::size_t substituted = 0;
};

Delivered run_epoch(Loader& loader, std::uint32_t epoch) {
  Delivered d;
  loader.start_epoch(epoch);
  while (auto b = loader.next()) {
    d.data.insert(d.data.end(), b->data.begin(), b->data.end());
    d.labels.insert(d.labels.end(), b->labels.begin(), b->labels.end());
    d.indices.insert(d.indices.end(), b->indices.begin(), b->indices.end());
    d.numbers.push_back(b->number);
    d.substituted += b->substituted;
    loader.release(*b);
  }
  return d;
}

// Runs f on another thread; fails the test instead of hanging when it takes over `limit`.
template <class F>
void within(std::chrono::seconds limit, F f) {
  auto done = std::async(std::launch::async, f);
  ASSERT_EQ(done.wait_for(limit), std::future_status::ready) << "hung";
  done.get();
}

TEST(LoaderDeterminism, BatchesAreIdenticalForOneAndFourWorkers) {
  MemoryDataset ds(203);
  Loader one(ds, small_options(1), write_sample);
  auto jittered = [](const SampleView& s, Philox& rng, std::span<std::uint8_t> dst) {
    jitter(s.index, 300);
    return write_sample(s, rng, dst);
  };
  Loader four(ds, small_options(4), jittered);
  for (std::uint32_t epoch = 0; epoch < 2; ++epoch) {
    const Delivered a = run_epoch(one, epoch);
    const Delivered b = run_epoch(four, epoch);
    ASSERT_EQ(a.indices.size(), 203u);
    EXPECT_EQ(a.data, b.data) << "epoch " << epoch;
    EXPECT_EQ(a.labels, b.labels);
    EXPECT_EQ(a.indices, b.indices);
  }
}

TEST(LoaderDeterminism, AugmentDrawsDependOnSeedEpochAndIndexOnly) {
  MemoryDataset ds(40);
  Loader loader(ds, small_options(2), write_sample);
  const Delivered d = run_epoch(loader, 3);
  for (std::size_t k = 0; k < d.indices.size(); ++k) {
    Philox rng(42, 3, d.indices[k]);
    std::uint32_t draw = 0;
    std::memcpy(&draw, d.data.data() + k * kSampleBytes + 8, 4);
    EXPECT_EQ(draw, rng.next_u32()) << "position " << k;
  }
}

TEST(LoaderOrder, DeliversBatchesInOrderWhenSamplesTakeRandomTime) {
  MemoryDataset ds(100);
  auto slow = [](const SampleView& s, Philox& rng, std::span<std::uint8_t> dst) {
    jitter(s.index * 7 + 1, 2000);
    return write_sample(s, rng, dst);
  };
  Loader loader(ds, small_options(4), slow);
  loader.start_epoch(1);
  std::size_t expected = 0;
  while (auto b = loader.next()) {
    EXPECT_EQ(b->number, expected++);
    const auto want = loader.sampler().batch(b->number);
    EXPECT_EQ(std::vector<std::size_t>(b->indices.begin(), b->indices.end()),
              std::vector<std::size_t>(want.begin(), want.end()));
    for (std::size_t j = 0; j < b->size; ++j) {
      std::uint64_t written = 0;
      std::memcpy(&written, b->data.data() + j * kSampleBytes, 8);
      EXPECT_EQ(written, b->indices[j]);
      EXPECT_EQ(b->labels[j], static_cast<std::int32_t>(b->indices[j] % 10));
    }
    loader.release(*b);
  }
  EXPECT_EQ(expected, loader.num_batches());
  EXPECT_EQ(expected, 13u);  // 100 = 12 * 8 + 4
}

TEST(LoaderOrder, AnEpochDeliversEverySampleOnce) {
  MemoryDataset ds(50);
  Loader loader(ds, small_options(3), write_sample);
  const Delivered d = run_epoch(loader, 0);
  EXPECT_EQ(d.indices.size(), 50u);
  EXPECT_EQ(std::set<std::size_t>(d.indices.begin(), d.indices.end()).size(), 50u);
}

TEST(LoaderOrder, ShardsAndDropLastComeFromTheSampler) {
  MemoryDataset ds(50);
  LoaderOptions o = small_options(2);
  o.sampling.rank = 1;
  o.sampling.world_size = 3;
  o.sampling.drop_last = true;
  Loader loader(ds, o, write_sample);
  const Delivered d = run_epoch(loader, 2);
  Sampler expected(50, o.sampling);
  expected.set_epoch(2);
  ASSERT_EQ(d.indices.size(), 16u);  // floor(50 / 3) = 16 = 2 full batches
  EXPECT_TRUE(std::equal(d.indices.begin(), d.indices.end(), expected.indices().begin()));
}

TEST(LoaderBadData, BadSamplesAreReplacedByTheNextGoodOneAndCounted) {
  MemoryDataset ds(40, {5, 17, 18}, {30});
  LoaderOptions o = small_options(3);
  o.sampling.shuffle = false;
  Loader loader(ds, o, write_sample);
  const Delivered d = run_epoch(loader, 0);
  ASSERT_EQ(d.indices.size(), 40u);  // batches stay full
  EXPECT_EQ(d.indices[5], 6u);
  EXPECT_EQ(d.indices[17], 19u);
  EXPECT_EQ(d.indices[18], 19u);
  EXPECT_EQ(d.indices[30], 31u);
  EXPECT_EQ(d.labels[5], 6);
  EXPECT_EQ(d.substituted, 4u);
  const LoaderStats s = loader.stats();
  EXPECT_EQ(s.substituted, 4u);
  EXPECT_EQ(s.bad_samples, 4u);
  ASSERT_EQ(s.bad_examples.size(), 4u);
  std::set<std::string> examples(s.bad_examples.begin(), s.bad_examples.end());
  EXPECT_EQ(examples.count("mem#5: not an image"), 1u);
  EXPECT_EQ(examples.count("mem#30: mem#30: cannot read"), 1u);
}

TEST(LoaderBadData, SubstitutesAreDeterministicAndDistinctFromTheirOwnAppearance) {
  MemoryDataset ds(40, {17, 18});
  LoaderOptions o = small_options(1);
  o.sampling.shuffle = false;
  Loader one(ds, o, write_sample);
  o.workers = 4;
  Loader four(ds, o, write_sample);
  const Delivered a = run_epoch(one, 0);
  const Delivered b = run_epoch(four, 0);
  EXPECT_EQ(a.data, b.data);
  // Positions 17 and 18 both hold sample 19, with different draws from each other and from 19's.
  auto draw_at = [&a](std::size_t k) {
    std::uint32_t d = 0;
    std::memcpy(&d, a.data.data() + k * kSampleBytes + 8, 4);
    return d;
  };
  EXPECT_NE(draw_at(17), draw_at(18));
  EXPECT_NE(draw_at(17), draw_at(19));
  EXPECT_NE(draw_at(18), draw_at(19));
}

TEST(LoaderBadData, BadSamplesAreCountedOnceAcrossEpochs) {
  MemoryDataset ds(30, {3});
  Loader loader(ds, small_options(2), write_sample);
  for (std::uint32_t e = 0; e < 3; ++e) run_epoch(loader, e);
  const LoaderStats s = loader.stats();
  EXPECT_EQ(s.bad_samples, 1u);
  EXPECT_EQ(s.substituted, 3u);  // its position in every epoch
  EXPECT_EQ(s.samples, 90u);
}

TEST(LoaderBadData, StrictStopsWithAnErrorNamingTheSample) {
  MemoryDataset ds(40, {9});
  LoaderOptions o = small_options(2);
  o.strict = true;
  Loader loader(ds, o, write_sample);
  loader.start_epoch(0);
  try {
    while (auto b = loader.next()) loader.release(*b);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
    EXPECT_NE(std::string(e.what()).find("mem#9"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not an image"), std::string::npos) << e.what();
  }
  EXPECT_THROW(loader.next(), Error);  // the error stays until the next epoch
}

TEST(LoaderBadData, AllBadIsAnErrorNotAHang) {
  MemoryDataset ds(5, {0, 1, 2, 3, 4});
  Loader loader(ds, small_options(2), write_sample);
  within(std::chrono::seconds(10), [&] {
    loader.start_epoch(0);
    EXPECT_THROW(loader.next(), Error);
  });
}

TEST(LoaderErrors, ExceptionInProcessSurfacesInNextNamingTheSample) {
  MemoryDataset ds(64);
  auto throwing = [](const SampleView& s, Philox& rng, std::span<std::uint8_t> dst) {
    if (s.index == 30) throw std::runtime_error("decoder bug");
    return write_sample(s, rng, dst);
  };
  Loader loader(ds, small_options(4), throwing);
  within(std::chrono::seconds(10), [&] {
    loader.start_epoch(0);
    try {
      while (auto b = loader.next()) loader.release(*b);
      FAIL() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("decoder bug"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("mem#30"), std::string::npos) << e.what();
    }
  });
  // The next epoch runs again (the failing sample is still there, so it fails again).
  EXPECT_THROW(run_epoch(loader, 1), Error);
}

TEST(LoaderErrors, AGbErrorFromProcessKeepsItsKind) {
  MemoryDataset ds(16);
  auto throwing = [](const SampleView&, Philox&, std::span<std::uint8_t>) -> SampleResult {
    throw Error(ErrorKind::no_gpu, "no decoder");
  };
  Loader loader(ds, small_options(1), throwing);
  loader.start_epoch(0);
  try {
    loader.next();
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::no_gpu);
    EXPECT_NE(std::string(e.what()).find("no decoder"), std::string::npos) << e.what();
  }
}

TEST(LoaderErrors, NextWithEverySlotHeldThrowsInsteadOfWaitingForever) {
  MemoryDataset ds(64);
  Loader loader(ds, small_options(2), write_sample);
  loader.start_epoch(0);
  std::vector<Batch> held;
  for (int k = 0; k < 3; ++k) held.push_back(*loader.next());
  EXPECT_THROW(loader.next(), Error);
  loader.release(held[0]);
  EXPECT_THROW(loader.release(held[0]), Error);  // twice
  auto b = loader.next();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->number, 3u);
}

TEST(LoaderOrder, BatchesHeldAtTheEpochBoundaryCarryOverIntact) {
  // 64 samples, batch 8, 3 slots: hold the last two batches of epoch 0 (as copies in flight
  // would), start epoch 1, and take its batches while they are still held.
  MemoryDataset ds(64);
  Loader reference(ds, small_options(2), write_sample);
  const Delivered expected = run_epoch(reference, 1);

  Loader loader(ds, small_options(2), write_sample);
  loader.start_epoch(0);
  std::vector<Batch> held;
  while (auto b = loader.next()) {
    held.push_back(*b);
    if (held.size() > 2) {
      loader.release(held.front());
      held.erase(held.begin());
    }
  }
  ASSERT_EQ(held.size(), 2u);
  std::vector<std::vector<std::uint8_t>> before;
  for (const Batch& b : held) before.emplace_back(b.data.begin(), b.data.end());

  loader.start_epoch(1);  // two of three slots still held
  Delivered got;
  within(std::chrono::seconds(20), [&] {
    for (int k = 0; auto b = loader.next(); ++k) {
      got.data.insert(got.data.end(), b->data.begin(), b->data.end());
      got.indices.insert(got.indices.end(), b->indices.begin(), b->indices.end());
      got.numbers.push_back(b->number);
      loader.release(*b);
      if (k == 0) {  // the old batches were never overwritten; now they go back
        for (std::size_t i = 0; i < held.size(); ++i)
          EXPECT_TRUE(std::equal(before[i].begin(), before[i].end(), held[i].data.begin()));
        for (const Batch& h : held) loader.release(h);
        EXPECT_THROW(loader.release(held[0]), Error);  // twice
      }
    }
  });
  EXPECT_EQ(got.numbers, expected.numbers);
  EXPECT_EQ(got.indices, expected.indices);
  EXPECT_EQ(got.data, expected.data);
}

TEST(LoaderErrors, RejectsBadOptions) {
  MemoryDataset ds(10);
  LoaderOptions o = small_options(1);
  o.sample_bytes = 0;
  EXPECT_THROW(Loader(ds, o, write_sample), Error);
  o = small_options(0);
  EXPECT_THROW(Loader(ds, o, write_sample), Error);
  o = small_options(1);
  o.prefetch_depth = 0;
  EXPECT_THROW(Loader(ds, o, write_sample), Error);
  EXPECT_THROW(Loader(ds, small_options(1), ProcessFn{}), Error);
}

TEST(LoaderShutdown, StopMidEpochJoinsWorkersWhileBatchesAreInFlight) {
  MemoryDataset ds(2000);
  auto slow = [](const SampleView& s, Philox& rng, std::span<std::uint8_t> dst) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return write_sample(s, rng, dst);
  };
  within(std::chrono::seconds(10), [&] {
    Loader loader(ds, small_options(4), slow);
    loader.start_epoch(0);
    auto b = loader.next();  // held, never released
    ASSERT_TRUE(b.has_value());
    loader.stop();
    EXPECT_FALSE(loader.next().has_value());
    loader.stop();  // idempotent
  });
}

TEST(LoaderShutdown, DestructorJoinsWorkersMidEpoch) {
  MemoryDataset ds(2000);
  auto slow = [](const SampleView& s, Philox& rng, std::span<std::uint8_t> dst) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return write_sample(s, rng, dst);
  };
  within(std::chrono::seconds(10), [&] {
    Loader loader(ds, small_options(3), slow);
    loader.start_epoch(0);
    ASSERT_TRUE(loader.next().has_value());
  });
}

TEST(LoaderShutdown, CtrlCEndsTheEpochWithWhatWasDelivered) {
  MemoryDataset ds(400);
  Loader loader(ds, small_options(2), write_sample);
  within(std::chrono::seconds(10), [&] {
    loader.start_epoch(0);
    std::size_t delivered = 0;
    while (auto b = loader.next()) {
      ++delivered;
      loader.release(*b);
      if (delivered == 2) request_cancel();
    }
    reset_cancel();
    EXPECT_EQ(delivered, 2u);
    EXPECT_TRUE(loader.epoch_cancelled());
    EXPECT_EQ(loader.stats().epochs_cancelled, 1u);
  });
  reset_cancel();
  // The loader is usable again once the flag is cleared.
  const Delivered d = run_epoch(loader, 1);
  EXPECT_EQ(d.indices.size(), 400u);
  EXPECT_FALSE(loader.epoch_cancelled());
}

TEST(LoaderShutdown, StartEpochAbandonsAnUnfinishedOne) {
  MemoryDataset ds(200);
  Loader loader(ds, small_options(2), write_sample);
  loader.start_epoch(0);
  auto b = loader.next();
  ASSERT_TRUE(b.has_value());
  loader.release(*b);
  const Delivered d = run_epoch(loader, 1);
  EXPECT_EQ(d.indices.size(), 200u);
  EXPECT_EQ(d.numbers.front(), 0u);
}

TEST(LoaderMemoryUse, ConstantOverFiveEpochs) {
  MemoryDataset ds(300, {11});
  std::atomic<int> allocations{0};
  std::atomic<int> frees{0};
  SlotAllocator host = host_slot_allocator();
  SlotAllocator counting{[&](std::size_t bytes) {
                           ++allocations;
                           return host.allocate(bytes);
                         },
                         [&](void* p, std::size_t bytes) {
                           ++frees;
                           host.deallocate(p, bytes);
                         }};
  {
    Loader loader(ds, small_options(3), write_sample, counting);
    EXPECT_EQ(allocations.load(), 3);  // one per slot, at construction
    run_epoch(loader, 0);
    const LoaderMemory after_first = loader.memory();
    EXPECT_GE(after_first.slot_bytes, 3 * 8 * kSampleBytes);
    EXPECT_GT(after_first.scratch_bytes, 0u);
    // A worker's scratch grows to the largest sample it has read (9 bytes here; a vector may
    // double): which worker meets which sample depends on timing, so scratch is bounded, the
    // rest exact.
    const std::size_t scratch_bound = 3 * 2 * 9;
    for (std::uint32_t e = 1; e < 5; ++e) {
      run_epoch(loader, e);
      const LoaderMemory now = loader.memory();
      EXPECT_EQ(now.slot_bytes, after_first.slot_bytes) << "epoch " << e;
      EXPECT_EQ(now.index_bytes, after_first.index_bytes) << "epoch " << e;
      EXPECT_LE(now.scratch_bytes, scratch_bound) << "epoch " << e;
    }
    EXPECT_EQ(allocations.load(), 3);
  }
  EXPECT_EQ(frees.load(), 3);
}

TEST(LoaderMemoryUse, OneWorkerHoldsExactlyTheSameMemoryAfterTheFirstEpoch) {
  MemoryDataset ds(100);
  Loader loader(ds, small_options(1), write_sample);
  run_epoch(loader, 0);
  const LoaderMemory after_first = loader.memory();
  for (std::uint32_t e = 1; e < 5; ++e) {
    run_epoch(loader, e);
    EXPECT_EQ(loader.memory(), after_first) << "epoch " << e;
  }
}

TEST(LoaderStatsTotals, CountSamplesStagesAndWorkerTime) {
  MemoryDataset ds(96);
  Loader loader(ds, small_options(2), write_sample);
  run_epoch(loader, 0);
  const LoaderStats s = loader.stats();
  EXPECT_EQ(s.samples, 96u);
  EXPECT_EQ(s.batches, 12u);
  EXPECT_EQ(s.read.count, 96u);
  EXPECT_EQ(s.process.count, 96u);
  ASSERT_EQ(s.stages.size(), 2u);
  EXPECT_EQ(s.stages[0].name, "decode");
  EXPECT_NEAR(s.stages[0].time.total_s, 0.096, 1e-9);  // 1 ms reported per sample
  EXPECT_NEAR(s.stages[1].time.total_s, 0.192, 1e-9);
  EXPECT_EQ(s.batch_latency.count, 12u);
  EXPECT_EQ(s.consumer_wait.count, 12u);
  ASSERT_EQ(s.worker_busy_s.size(), 2u);
  EXPECT_GT(s.busy_s(), 0);
  EXPECT_GT(s.wall_s, 0);
  EXPECT_GT(s.images_per_s(), 0);
  EXPECT_GE(s.worker_idle_share(), 0);
  EXPECT_LE(s.worker_idle_share(), 1);

  loader.reset_stats();
  EXPECT_EQ(loader.stats().samples, 0u);
  EXPECT_EQ(loader.stats().stages.size(), 2u);
}

TEST(LoaderOrder, EmptyDatasetHasAnEmptyEpoch) {
  MemoryDataset ds(0);
  Loader loader(ds, small_options(2), write_sample);
  loader.start_epoch(0);
  EXPECT_FALSE(loader.next().has_value());
}

// ---- Look-ahead: workers begin epoch e + 1 once every position of e has been handed out.

// Polls `done` until it holds or `limit` passes; true when it held.
template <class F>
bool eventually(std::chrono::seconds limit, F done) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// 2 batches per epoch (16 samples, batch 8) and 4 slots: the two slots an epoch leaves idle are
// where the look-ahead puts the next epoch's batches.
LoaderOptions two_batch_options(unsigned workers) {
  LoaderOptions o = small_options(workers);
  o.prefetch_depth = 4;
  return o;
}

void append(Delivered& d, const Batch& b) {
  d.data.insert(d.data.end(), b.data.begin(), b.data.end());
  d.labels.insert(d.labels.end(), b.labels.begin(), b.labels.end());
  d.indices.insert(d.indices.end(), b.indices.begin(), b.indices.end());
  d.numbers.push_back(b.number);
  d.substituted += b.substituted;
}

// Epoch `epoch` from a loader that never ran another one (1 worker, 1 slot): no look-ahead
// can have touched it.
Delivered fresh_epoch(const Dataset& ds, LoaderOptions o, std::uint32_t epoch) {
  o.workers = 1;
  o.prefetch_depth = 1;
  Loader loader(ds, o, write_sample);
  return run_epoch(loader, epoch);
}

// Epochs first .. first+count-1 back to back as the GPU path takes them: a batch is released
// only once `lag` later ones have been taken, across the epoch boundary too, and the consumer
// pauses before each start_epoch() so the look-ahead gets going.
std::vector<Delivered> run_epochs_holding(Loader& loader, std::uint32_t first, std::uint32_t count,
                                          std::size_t lag) {
  std::vector<Delivered> out;
  std::deque<Batch> held;
  for (std::uint32_t e = first; e < first + count; ++e) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    loader.start_epoch(e);
    Delivered d;
    while (auto b = loader.next()) {
      append(d, *b);
      held.push_back(*b);
      while (held.size() > lag) {
        loader.release(held.front());
        held.pop_front();
      }
    }
    out.push_back(std::move(d));
  }
  for (const Batch& b : held) loader.release(b);
  return out;
}

// write_sample, counting finished calls in `calls`.
ProcessFn counting(std::atomic<int>& calls) {
  return [&calls](const SampleView& s, Philox& rng, std::span<std::uint8_t> dst) {
    const SampleResult r = write_sample(s, rng, dst);
    ++calls;
    return r;
  };
}

TEST(LoaderLookAhead, WorkersFillTheNextEpochBeforeStartEpochIsCalled) {
  MemoryDataset ds(16);
  std::atomic<int> calls{0};
  std::atomic<bool> gate_closed{false};
  // Counts finished calls; while the gate is closed, a call waits for it to open.
  auto counted = [&](const SampleView& s, Philox& rng, std::span<std::uint8_t> dst) {
    while (gate_closed.load()) std::this_thread::sleep_for(std::chrono::microseconds(200));
    const SampleResult r = write_sample(s, rng, dst);
    ++calls;
    return r;
  };
  Loader loader(ds, two_batch_options(2), counted);
  const Delivered epoch0 = run_epoch(loader, 0);
  ASSERT_EQ(epoch0.indices.size(), 16u);
  // next() has returned nothing; start_epoch(1) is not called yet, and epoch 1's 16 positions
  // get processed all the same (without look-ahead, calls would stay at 16).
  ASSERT_TRUE(eventually(std::chrono::seconds(10), [&] { return calls.load() >= 32; }))
      << calls.load() << " calls";
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(calls.load(), 32) << "one epoch ahead, never two";
  // The look-ahead's work is counted once start_epoch() adopts it, not before.
  EXPECT_EQ(loader.stats().read.count, 16u);
  EXPECT_EQ(loader.stats().process.count, 16u);

  // From here on process() would block: epoch 1 must be delivered without a single call.
  gate_closed = true;
  Delivered epoch1;
  within(std::chrono::seconds(10), [&] { epoch1 = run_epoch(loader, 1); });
  EXPECT_EQ(calls.load(), 32);
  gate_closed = false;  // epoch 2's look-ahead is waiting at the gate

  const Delivered expected = fresh_epoch(ds, two_batch_options(2), 1);
  EXPECT_EQ(epoch1.numbers, (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(epoch1.indices, expected.indices);
  EXPECT_EQ(epoch1.labels, expected.labels);
  EXPECT_EQ(epoch1.data, expected.data);
  // ... with epoch 1's Philox keys, not epoch 0's.
  for (std::size_t k = 0; k < epoch1.indices.size(); ++k) {
    Philox rng(42, 1, epoch1.indices[k]);
    std::uint32_t draw = 0;
    std::memcpy(&draw, epoch1.data.data() + k * kSampleBytes + 8, 4);
    EXPECT_EQ(draw, rng.next_u32()) << "position " << k;
  }

  const LoaderStats s = loader.stats();
  EXPECT_EQ(s.samples, 32u);
  EXPECT_EQ(s.batches, 4u);
  EXPECT_EQ(s.read.count, 32u);
  EXPECT_EQ(s.batch_latency.count, 4u);
  EXPECT_EQ(s.consumer_wait.count, 4u);
  EXPECT_GT(s.wall_s, 0);
  EXPECT_GE(s.worker_idle_share(), 0);
  EXPECT_LE(s.worker_idle_share(), 1);
}

TEST(LoaderLookAhead, AdoptedEpochsKeepTheClockRunningFromTheLastEpochsEnd) {
  // The consumer spends 15 ms on every batch; the look-ahead fills the next epoch meanwhile.
  // Starting each adopted epoch's clock at start_epoch() would leave out the time spent on
  // every epoch's last batch (2 x 15 ms here) while the workers were busy for the next epoch.
  MemoryDataset ds(16);
  std::atomic<int> calls{0};
  const ProcessFn counted = counting(calls);
  Loader loader(ds, two_batch_options(2), counted);
  using Clock = std::chrono::steady_clock;
  const Clock::time_point t0 = Clock::now();
  Clock::time_point last_delivered;
  for (std::uint32_t e = 0; e < 3; ++e) {
    // A position of epoch e processed already: the look-ahead is running, start_epoch() adopts.
    const int ahead = e == 0 ? 0 : 16 * static_cast<int>(e) + 1;
    ASSERT_TRUE(eventually(std::chrono::seconds(10), [&] { return calls.load() >= ahead; }));
    loader.start_epoch(e);
    while (auto b = loader.next()) {
      last_delivered = Clock::now();
      std::this_thread::sleep_for(std::chrono::milliseconds(15));
      loader.release(*b);
    }
  }
  const double span_s = std::chrono::duration<double>(last_delivered - t0).count();
  const LoaderStats s = loader.stats();
  EXPECT_LE(s.wall_s, span_s);
  EXPECT_GE(s.wall_s, span_s - 0.010) << "span " << span_s;
  EXPECT_EQ(s.samples, 48u);
  EXPECT_EQ(s.read.count, 48u);
}

TEST(LoaderLookAhead, EpochsAreIdenticalWhetherPrefetchedOrStartedFresh) {
  auto jittered = [](const SampleView& s, Philox& rng, std::span<std::uint8_t> dst) {
    jitter(s.index * 3 + 1, 400);
    return write_sample(s, rng, dst);
  };
  struct Case {
    const char* name;
    std::size_t samples;
    unsigned workers;
    std::size_t depth;
    std::uint32_t rank = 0;
    std::uint32_t world_size = 1;
  };
  const Case cases[] = {
      {"2 batches, 4 slots, 3 workers", 16, 3, 4},
      {"2 batches, 4 slots, 1 worker", 16, 1, 4},
      {"partial last batch (8 + 5)", 13, 3, 4},
      {"rank 2 of 3 (13 samples: 8 + 5)", 37, 3, 4, 2, 3},
      {"13 batches, 3 slots, 4 workers", 100, 4, 3},
      {"1 slot", 20, 3, 1},
  };
  for (const Case& c : cases) {
    LoaderOptions o = small_options(c.workers);
    o.prefetch_depth = c.depth;
    o.sampling.rank = c.rank;
    o.sampling.world_size = c.world_size;
    MemoryDataset ds(c.samples);
    std::vector<Delivered> expected;
    for (std::uint32_t e = 0; e < 4; ++e) expected.push_back(fresh_epoch(ds, o, e));
    // lag < depth: holding the last `lag` batches never blocks the ring.
    for (std::size_t lag = 0; lag < c.depth; ++lag) {
      Loader loader(ds, o, jittered);
      std::vector<Delivered> got;
      within(std::chrono::seconds(20), [&] { got = run_epochs_holding(loader, 0, 4, lag); });
      ASSERT_EQ(got.size(), 4u) << c.name;
      for (std::uint32_t e = 0; e < 4; ++e) {
        SCOPED_TRACE(std::string(c.name) + ", lag " + std::to_string(lag) + ", epoch " +
                     std::to_string(e));
        EXPECT_EQ(got[e].numbers, expected[e].numbers);
        EXPECT_EQ(got[e].indices, expected[e].indices);
        EXPECT_EQ(got[e].labels, expected[e].labels);
        EXPECT_EQ(got[e].data, expected[e].data);
      }
    }
  }
}

TEST(LoaderLookAhead, StartingAnotherEpochThanTheNextDiscardsTheLookAhead) {
  MemoryDataset ds(16, {5});
  std::atomic<int> calls{0};
  const ProcessFn counted = counting(calls);
  const LoaderOptions o = two_batch_options(3);
  Loader loader(ds, o, counted);
  run_epoch(loader, 0);
  // Epoch 1's look-ahead has run (15 good samples and one bad one per epoch)...
  ASSERT_TRUE(eventually(std::chrono::seconds(10), [&] { return calls.load() >= 32; }));
  // ... and is thrown away by start_epoch(5).
  const Delivered e5 = run_epoch(loader, 5);
  const Delivered e6 = run_epoch(loader, 6);  // the look-ahead of a fresh epoch, adopted
  for (auto [got, epoch] : {std::pair{&e5, 5u}, std::pair{&e6, 6u}}) {
    const Delivered expected = fresh_epoch(ds, o, epoch);
    EXPECT_EQ(got->indices, expected.indices) << "epoch " << epoch;
    EXPECT_EQ(got->labels, expected.labels) << "epoch " << epoch;
    EXPECT_EQ(got->data, expected.data) << "epoch " << epoch;
    EXPECT_EQ(got->substituted, 1u) << "epoch " << epoch;
  }
  const LoaderStats s = loader.stats();
  EXPECT_EQ(s.samples, 48u);
  EXPECT_EQ(s.bad_samples, 1u);
}

TEST(LoaderLookAhead, AbandoningAnEpochDiscardsTheLookAhead) {
  MemoryDataset ds(16);
  std::atomic<int> calls{0};
  const ProcessFn counted = counting(calls);
  const LoaderOptions o = two_batch_options(3);
  Loader loader(ds, o, counted);
  loader.start_epoch(0);
  auto b = loader.next();  // batch 1 of epoch 0 is never taken
  ASSERT_TRUE(b.has_value());
  loader.release(*b);
  ASSERT_TRUE(eventually(std::chrono::seconds(10), [&] { return calls.load() >= 32; }));
  const Delivered e1 = run_epoch(loader, 1);  // epoch 0 unfinished: its look-ahead is discarded
  const Delivered expected = fresh_epoch(ds, o, 1);
  EXPECT_EQ(e1.numbers, expected.numbers);
  EXPECT_EQ(e1.indices, expected.indices);
  EXPECT_EQ(e1.data, expected.data);
  EXPECT_EQ(loader.stats().samples, 24u);
}

TEST(LoaderLookAhead, AnErrorInTheLookAheadSurfacesOnlyOnceItsEpochStarts) {
  // Rank 0 of 2 meets half the samples each epoch: pick one that it meets in epoch 1's first
  // batch and not at all in epoch 0, so only the look-ahead can find it.
  LoaderOptions o = two_batch_options(2);
  o.sampling.world_size = 2;
  const std::size_t n = 32;  // 16 per rank: 2 batches
  Sampler epoch0(n, o.sampling);
  epoch0.set_epoch(0);
  Sampler epoch1(n, o.sampling);
  epoch1.set_epoch(1);
  std::size_t culprit = n;
  for (std::size_t i : epoch1.batch(0)) {
    if (std::find(epoch0.indices().begin(), epoch0.indices().end(), i) == epoch0.indices().end()) {
      culprit = i;
      break;
    }
  }
  ASSERT_LT(culprit, n) << "no sample of epoch 1's first batch is new to rank 0";
  const std::string name = "mem#" + std::to_string(culprit);

  // Strict with a bad sample, then an exception in process(): the same path for both.
  std::atomic<int> throws{0};
  auto throwing = [&](const SampleView& s, Philox& rng, std::span<std::uint8_t> dst) {
    if (s.index == culprit) {
      ++throws;
      throw std::runtime_error("decoder bug");
    }
    return write_sample(s, rng, dst);
  };
  o.strict = true;
  MemoryDataset bad_ds(n, {culprit});
  Loader strict(bad_ds, o, write_sample);
  o.strict = false;
  MemoryDataset good_ds(n);
  Loader buggy(good_ds, o, throwing);
  struct Case {
    const char* what;
    Loader& loader;
    std::function<bool()> found;  // the look-ahead has met the culprit
    const char* reason;
  };
  const Case cases[] = {
      {"strict", strict, [&] { return strict.stats().bad_samples == 1; }, "not an image"},
      {"exception", buggy, [&] { return throws.load() > 0; }, "decoder bug"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    within(std::chrono::seconds(10), [&] {
      std::size_t batches = 0;
      EXPECT_NO_THROW({
        c.loader.start_epoch(0);
        while (auto b = c.loader.next()) {
          ++batches;
          c.loader.release(*b);
        }
      });
      EXPECT_EQ(batches, 2u);
      ASSERT_TRUE(eventually(std::chrono::seconds(5), c.found));
      // Epoch 0 is over and stays clean.
      EXPECT_NO_THROW(EXPECT_FALSE(c.loader.next().has_value()));
      c.loader.start_epoch(1);
      try {
        while (auto b = c.loader.next()) c.loader.release(*b);
        ADD_FAILURE() << "no error";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find(c.reason), std::string::npos) << e.what();
      }
      EXPECT_THROW(c.loader.next(), Error);  // until the next start_epoch()
    });
  }
  EXPECT_EQ(strict.stats().bad_samples, 1u);
  EXPECT_EQ(strict.stats().samples, 16u);
}

TEST(LoaderLookAhead, MemoryStaysConstantAcrossEpochs) {
  MemoryDataset ds(16);
  const LoaderOptions o = two_batch_options(3);
  Loader loader(ds, o, write_sample);
  // 4 slots of 8 indices, two samplers of (16 order + 16 shard) indices, one bitmap word.
  const std::size_t index_bytes = (4 * 8 + 2 * (16 + 16) + 1) * 8;
  const std::size_t slot_bytes = loader.memory().slot_bytes;
  EXPECT_EQ(loader.memory().index_bytes, index_bytes);
  for (std::uint32_t e = 0; e < 8; e += 2) {
    const std::size_t lag = e % 4 == 0 ? 1 : 2;  // batches held across the boundary
    run_epochs_holding(loader, e, 2, lag);
    const LoaderMemory now = loader.memory();
    EXPECT_EQ(now.slot_bytes, slot_bytes) << "epoch " << e;
    EXPECT_EQ(now.index_bytes, index_bytes) << "epoch " << e;
    EXPECT_LE(now.scratch_bytes, 3u * 2 * 9) << "epoch " << e;
  }
}

// `top -H` and watch name the loader's threads: one "gb-load N" per worker.
TEST(LoaderThreads, EachWorkerIsNamed) {
  MemoryDataset ds(50);
  Loader loader(ds, small_options(3), write_sample);
  const std::set<std::string> want = {"gb-load 0", "gb-load 1", "gb-load 2"};
  auto all_named = [&] {
    const auto names = gb::test::thread_names();
    return std::all_of(want.begin(), want.end(), [&](const std::string& w) { return names.count(w); });
  };
  // A worker names itself as it starts.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!all_named() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_TRUE(all_named());
}

}  // namespace
}  // namespace gb::data
