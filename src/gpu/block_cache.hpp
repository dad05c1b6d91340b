// gpu/block_cache.hpp: memory blocks kept for reuse instead of freed, for an allocator whose
// free must not run: cudaFree and cudaFreeHost synchronise the whole device, so a library that
// frees and allocates again in the middle of a training step (nvJPEG growing its buffers for a
// larger batch) makes its call wait for every kernel queued on the card. Plain C++: the raw
// allocation and free are functions handed in (CUDA's, or a test's).
//
//   BlockCache cache([](std::size_t n) { void* p = nullptr;
//                                        return cudaMalloc(&p, n) == cudaSuccess ? p : nullptr; },
//                    [](void* p) { cudaFree(p); });
//   void* p = cache.take(1 << 20);   // a kept block that fits, else a new one
//   cache.give(p);                   // kept, not freed
//
// take() hands out the smallest kept block of at least the size asked and at most kMaxWaste
// times it (a large block is not spent on a small request); else it allocates. give() keeps the
// block. The raw free runs only in release_kept() and the destructor.
// Thread-safe.
#pragma once
#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <unordered_map>

namespace gb::gpu {

class BlockCache {
 public:
  using RawAlloc = std::function<void*(std::size_t)>;  // nullptr when out of memory
  using RawFree = std::function<void(void*)>;
  static constexpr std::size_t kMaxWaste = 2;

  BlockCache(RawAlloc alloc, RawFree free);
  ~BlockCache();
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;

  // A block of at least `bytes` (1 for 0), or nullptr when the raw allocation fails.
  void* take(std::size_t bytes);
  // Keeps a block take() handed out; false for a pointer that is not one in use.
  bool give(void* block);
  // Frees every kept block (blocks in use are not touched); returns how many were freed.
  std::size_t release_kept();

  struct Stats {
    std::size_t raw_allocations = 0;  // blocks allocated
    std::size_t reuses = 0;           // take()s served by a kept block
    std::size_t in_use = 0;           // blocks handed out and not given back
    std::size_t kept = 0;             // blocks kept for reuse
    std::size_t bytes = 0;            // all blocks, in use and kept
  };
  Stats stats() const;

 private:
  RawAlloc alloc_;
  RawFree free_;
  mutable std::mutex mu_;
  std::unordered_map<void*, std::size_t> in_use_;  // block -> its size
  std::multimap<std::size_t, void*> kept_;         // size -> block
  Stats stats_;
};

}  // namespace gb::gpu
