// test_data_loader.cpp: the loader's worker pool on a small in-memory dataset -- batches that
// are the same byte for byte with 1 and 4 workers, in-order delivery whatever order samples
// finish in, bad samples substituted and counted (or, strict, an error naming the sample),
// exceptions reaching next(), stop() and Ctrl-C mid-epoch, and memory constant over epochs.
//
// The process callback writes, for sample i, its index, its label, two rng draws and a checksum
// of its bytes: any change of order, rng keying or worker interference shows in the bytes.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <future>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/cancel.hpp"
#include "core/error.hpp"
#include "data/loader.hpp"

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

}  // namespace
}  // namespace gb::data
