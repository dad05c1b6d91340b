// tests/unit/test_gpu_block_cache.cpp: the block cache behind nvJPEG's pooled memory
// (gpu/block_cache): a given block is kept, not freed, and handed out again to a request it fits
// without wasting more than half of it; the raw free runs only when the kept blocks are released
// or the cache ends. Raw allocation here is the heap, counted. And GPUBASE_NVJPEG_MEMORY's parser.
// Built only with CUDA (the files live in gb_gpu), runs without a GPU.
#ifdef GPUBASE_WITH_CUDA
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <set>
#include <string>

#include "core/error.hpp"
#include "gpu/block_cache.hpp"
#include "gpu/nvjpeg.hpp"

namespace gb::gpu {
namespace {

struct Heap {
  std::set<void*> live;
  int frees = 0;
  bool fail = false;
  BlockCache make() {
    return BlockCache(
        [this](std::size_t n) -> void* {
          if (fail) return nullptr;
          void* p = std::malloc(n);
          live.insert(p);
          return p;
        },
        [this](void* p) {
          live.erase(p);
          ++frees;
          std::free(p);
        });
  }
};

TEST(BlockCache, AGivenBlockIsKeptAndHandedOutAgainWithoutAFree) {
  Heap heap;
  {
    BlockCache cache = heap.make();
    void* a = cache.take(1000);
    ASSERT_NE(a, nullptr);
    EXPECT_TRUE(cache.give(a));
    EXPECT_EQ(heap.frees, 0);
    EXPECT_EQ(cache.take(800), a);  // fits, wastes less than half
    const BlockCache::Stats s = cache.stats();
    EXPECT_EQ(s.raw_allocations, 1u);
    EXPECT_EQ(s.reuses, 1u);
    EXPECT_EQ(s.in_use, 1u);
    EXPECT_EQ(s.kept, 0u);
    EXPECT_EQ(s.bytes, 1000u);
  }
  EXPECT_EQ(heap.frees, 1);  // the destructor frees the block still in use
  EXPECT_TRUE(heap.live.empty());
}

TEST(BlockCache, TheSmallestFittingBlockServesAndALargeOneIsNotSpentOnASmallRequest) {
  Heap heap;
  BlockCache cache = heap.make();
  void* big = cache.take(4096);
  void* mid = cache.take(1024);
  cache.give(big);
  cache.give(mid);
  EXPECT_EQ(cache.take(1000), mid);   // 1024 fits best
  void* small = cache.take(100);      // 4096 would waste more than half: a new block
  EXPECT_NE(small, big);
  EXPECT_EQ(cache.take(3000), big);
  EXPECT_EQ(cache.stats().raw_allocations, 3u);
  EXPECT_EQ(heap.frees, 0);
}

TEST(BlockCache, ReleaseFreesOnlyTheKeptBlocksAndAForeignPointerIsRefused) {
  Heap heap;
  BlockCache cache = heap.make();
  void* a = cache.take(10);
  void* b = cache.take(20);
  cache.give(a);
  EXPECT_EQ(cache.release_kept(), 1u);
  EXPECT_EQ(heap.frees, 1);
  EXPECT_EQ(heap.live.count(b), 1u);
  int foreign = 0;
  EXPECT_FALSE(cache.give(&foreign));
  EXPECT_FALSE(cache.give(a));  // already freed, no longer one of ours
  EXPECT_EQ(cache.stats().bytes, 20u);
}

TEST(BlockCache, AFailedRawAllocationIsNullAndCountsNothing) {
  Heap heap;
  BlockCache cache = heap.make();
  heap.fail = true;
  EXPECT_EQ(cache.take(64), nullptr);
  EXPECT_EQ(cache.stats().raw_allocations, 0u);
  EXPECT_EQ(cache.stats().in_use, 0u);
  heap.fail = false;
  void* z = cache.take(0);  // a zero-byte request is one byte
  ASSERT_NE(z, nullptr);
  EXPECT_EQ(cache.stats().bytes, 1u);
}

// GPUBASE_NVJPEG_MEMORY picks nvJPEG's memory: unset, empty or pooled is the block caches, driver
// nvJPEG's own; anything else is a usage error naming the valid values.
TEST(NvjpegFlags, TheEnvironmentNamesCreateExFlagsAndRefusesAnUnknownName) {
  const char* saved = std::getenv("GPUBASE_NVJPEG_FLAGS");
  const std::string keep = saved ? saved : "";
  unsetenv("GPUBASE_NVJPEG_FLAGS");
  EXPECT_EQ(nvjpeg_flags_from_env(), 1u);  // the default: NVJPEG_FLAGS_HW_DECODE_NO_PIPELINE
  EXPECT_EQ(nvjpeg_flags_from_env(), kDefaultNvjpegFlags);
  setenv("GPUBASE_NVJPEG_FLAGS", "", 1);
  EXPECT_EQ(nvjpeg_flags_from_env(), kDefaultNvjpegFlags);
  setenv("GPUBASE_NVJPEG_FLAGS", "none", 1);
  EXPECT_EQ(nvjpeg_flags_from_env(), 0u);
  EXPECT_EQ(nvjpeg_flags_name(0), "none");
  setenv("GPUBASE_NVJPEG_FLAGS", "no_pipeline", 1);
  EXPECT_EQ(nvjpeg_flags_from_env(), 1u);  // NVJPEG_FLAGS_HW_DECODE_NO_PIPELINE
  setenv("GPUBASE_NVJPEG_FLAGS", "memory_pools,no_pipeline", 1);
  EXPECT_EQ(nvjpeg_flags_from_env(), 3u);  // | NVJPEG_FLAGS_ENABLE_MEMORY_POOLS
  EXPECT_EQ(nvjpeg_flags_name(3), "no_pipeline,memory_pools");
  setenv("GPUBASE_NVJPEG_FLAGS", "memory_pools,,", 1);
  EXPECT_EQ(nvjpeg_flags_from_env(), 2u);
  setenv("GPUBASE_NVJPEG_FLAGS", "memory_pools,fast", 1);
  try {
    (void)nvjpeg_flags_from_env();
    ADD_FAILURE() << "fast was taken";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
    EXPECT_NE(std::string(e.what()).find("'fast' is not no_pipeline, memory_pools or none"),
              std::string::npos)
        << e.what();
  }
  if (saved) {
    setenv("GPUBASE_NVJPEG_FLAGS", keep.c_str(), 1);
  } else {
    unsetenv("GPUBASE_NVJPEG_FLAGS");
  }
}

TEST(NvjpegMemory, TheEnvironmentPicksDriverOrPooledAndRefusesAnythingElse) {
  const char* saved = std::getenv("GPUBASE_NVJPEG_MEMORY");
  const std::string keep = saved ? saved : "";
  unsetenv("GPUBASE_NVJPEG_MEMORY");
  EXPECT_EQ(nvjpeg_memory_from_env(), NvjpegMemory::pooled);
  setenv("GPUBASE_NVJPEG_MEMORY", "", 1);
  EXPECT_EQ(nvjpeg_memory_from_env(), NvjpegMemory::pooled);
  setenv("GPUBASE_NVJPEG_MEMORY", "driver", 1);
  EXPECT_EQ(nvjpeg_memory_from_env(), NvjpegMemory::driver);
  setenv("GPUBASE_NVJPEG_MEMORY", "pooled", 1);
  EXPECT_EQ(nvjpeg_memory_from_env(), NvjpegMemory::pooled);
  EXPECT_EQ(to_string(NvjpegMemory::pooled), "pooled");
  setenv("GPUBASE_NVJPEG_MEMORY", "pool", 1);
  try {
    (void)nvjpeg_memory_from_env();
    ADD_FAILURE() << "pool was taken";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
    EXPECT_NE(std::string(e.what()).find("driver or pooled"), std::string::npos) << e.what();
  }
  if (saved) {
    setenv("GPUBASE_NVJPEG_MEMORY", keep.c_str(), 1);
  } else {
    unsetenv("GPUBASE_NVJPEG_MEMORY");
  }
}

}  // namespace
}  // namespace gb::gpu
#endif
