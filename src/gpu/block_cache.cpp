// gpu/block_cache.cpp: see block_cache.hpp.
#include "gpu/block_cache.hpp"

#include <utility>

namespace gb::gpu {

BlockCache::BlockCache(RawAlloc alloc, RawFree free)
    : alloc_(std::move(alloc)), free_(std::move(free)) {}

BlockCache::~BlockCache() {
  release_kept();
  for (const auto& [block, size] : in_use_) free_(block);
}

void* BlockCache::take(std::size_t bytes) {
  if (bytes == 0) bytes = 1;
  {
    const std::lock_guard lock(mu_);
    const auto it = kept_.lower_bound(bytes);
    if (it != kept_.end() && it->first / kMaxWaste <= bytes) {
      void* block = it->second;
      in_use_.emplace(block, it->first);
      kept_.erase(it);
      ++stats_.reuses;
      ++stats_.in_use;
      --stats_.kept;
      return block;
    }
  }
  void* block = alloc_(bytes);  // outside the lock: a driver call
  if (!block) return nullptr;
  const std::lock_guard lock(mu_);
  in_use_.emplace(block, bytes);
  ++stats_.raw_allocations;
  ++stats_.in_use;
  stats_.bytes += bytes;
  return block;
}

bool BlockCache::give(void* block) {
  const std::lock_guard lock(mu_);
  const auto it = in_use_.find(block);
  if (it == in_use_.end()) return false;
  kept_.emplace(it->second, block);
  in_use_.erase(it);
  --stats_.in_use;
  ++stats_.kept;
  return true;
}

std::size_t BlockCache::release_kept() {
  std::multimap<std::size_t, void*> kept;
  {
    const std::lock_guard lock(mu_);
    kept.swap(kept_);
    for (const auto& [size, block] : kept) stats_.bytes -= size;
    stats_.kept = 0;
  }
  for (const auto& [size, block] : kept) free_(block);
  return kept.size();
}

BlockCache::Stats BlockCache::stats() const {
  const std::lock_guard lock(mu_);
  return stats_;
}

}  // namespace gb::gpu
