// data/loader_stats.cpp: the loader's small value types -- time totals, the derived rates of
// LoaderStats -- and the plain host slot allocator.
#include <algorithm>
#include <new>
#include <numeric>

#include "data/loader.hpp"

namespace gb::data {

void TimeTotal::add(double s) {
  total_s += s;
  max_s = std::max(max_s, s);
  ++count;
}

double LoaderStats::busy_s() const {
  return std::accumulate(worker_busy_s.begin(), worker_busy_s.end(), 0.0);
}

double LoaderStats::images_per_s() const {
  return wall_s > 0 ? static_cast<double>(samples) / wall_s : 0;
}

double LoaderStats::images_per_busy_core_s() const {
  const double busy = busy_s();
  return busy > 0 ? static_cast<double>(samples) / busy : 0;
}

double LoaderStats::worker_idle_share() const {
  if (wall_s <= 0 || workers == 0) return 0;
  return std::clamp(1.0 - busy_s() / (wall_s * workers), 0.0, 1.0);
}

namespace {
constexpr std::align_val_t kPage{4096};
}  // namespace

SlotAllocator host_slot_allocator() {
  return {[](std::size_t bytes) { return ::operator new(bytes, kPage); },
          [](void* p, std::size_t) { ::operator delete(p, kPage); }};
}

}  // namespace gb::data
