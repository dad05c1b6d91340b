// gpu/sized_slots.hpp: which of a few library states, each set up for one batch size, a call of
// size n uses. nvJPEG's batched state is initialised for one batch size; a call with another
// size initialises it again, and the hardware backend may then free and allocate its buffers
// (cudaFree waits for the whole device: the training step in flight). The CPU/GPU split sends a
// varying number of images to nvJPEG per batch, so one state per slot was initialised again in
// almost every batch. SizedSlots keeps up to `capacity` states, one per size, the least
// recently used one set up again when a new size needs a place.
//
//   SizedSlots slots(8);
//   const SizedSlots::Pick p = slots.pick(n);      // p.index: which state; p.initialise: set it
//   if (p.added) states.push_back(make());         // up for n first; p.added: a new place
//   if (p.initialise) init(states[p.index], n);
//   ... on a failed call: slots.forget(p.index);   // the state must be set up again
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace gb::gpu {

class SizedSlots {
 public:
  explicit SizedSlots(std::size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}

  struct Pick {
    std::size_t index = 0;    // 0 .. size() - 1
    bool initialise = false;  // the state at index must be (re)initialised for n first
    bool added = false;       // index is new (== size() - 1): its state does not exist yet
  };

  Pick pick(int n) {
    ++tick_;
    std::size_t forgotten = slots_.size();
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      if (slots_[i].size == n) {
        slots_[i].used = tick_;
        return {i, false, false};
      }
      if (slots_[i].size == kNone && forgotten == slots_.size()) forgotten = i;
    }
    ++inits_;
    if (forgotten < slots_.size()) {
      slots_[forgotten] = {n, tick_};
      return {forgotten, true, false};
    }
    if (slots_.size() < capacity_) {
      slots_.push_back({n, tick_});
      return {slots_.size() - 1, true, true};
    }
    std::size_t lru = 0;
    for (std::size_t i = 1; i < slots_.size(); ++i)
      if (slots_[i].used < slots_[lru].used) lru = i;
    slots_[lru] = {n, tick_};
    return {lru, true, false};
  }

  // The state at `index` holds no valid set-up any more (a failed call): the next size without
  // a place of its own takes it first.
  void forget(std::size_t index) {
    if (index < slots_.size()) slots_[index].size = kNone;
  }

  std::size_t size() const { return slots_.size(); }
  std::size_t capacity() const { return capacity_; }
  // Set-ups so far (picks with initialise): one per size used, more when sizes outnumber places.
  std::size_t initialisations() const { return inits_; }

 private:
  static constexpr int kNone = -1;
  struct Slot {
    int size = kNone;
    std::uint64_t used = 0;
  };
  std::size_t capacity_;
  std::vector<Slot> slots_;
  std::uint64_t tick_ = 0;
  std::size_t inits_ = 0;
};

}  // namespace gb::gpu
