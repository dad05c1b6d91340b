// test_gpu_sized_slots.cpp: the choice of nvJPEG batched state per batch size
// (gpu/sized_slots.hpp), without a GPU.
#include <gtest/gtest.h>

#include "gpu/sized_slots.hpp"

namespace gb::gpu {
namespace {

TEST(SizedSlots, OneSetUpPerSizeWhileThereIsRoom) {
  SizedSlots slots(4);
  const auto a = slots.pick(194);
  EXPECT_TRUE(a.initialise);
  EXPECT_TRUE(a.added);
  EXPECT_EQ(a.index, 0u);
  const auto b = slots.pick(195);
  EXPECT_TRUE(b.initialise);
  EXPECT_TRUE(b.added);
  EXPECT_EQ(b.index, 1u);
  // The split's counts come back: no set-up, the same place as before.
  for (int round = 0; round < 10; ++round) {
    const auto again = slots.pick(round % 2 ? 194 : 195);
    EXPECT_FALSE(again.initialise);
    EXPECT_FALSE(again.added);
    EXPECT_EQ(again.index, round % 2 ? 0u : 1u);
  }
  EXPECT_EQ(slots.initialisations(), 2u);
  EXPECT_EQ(slots.size(), 2u);
}

TEST(SizedSlots, ANewSizeWhenFullTakesTheLeastRecentlyUsedPlace) {
  SizedSlots slots(2);
  slots.pick(10);  // place 0
  slots.pick(20);  // place 1
  slots.pick(10);  // place 0 used last: 20 is the older one
  const auto c = slots.pick(30);
  EXPECT_EQ(c.index, 1u);
  EXPECT_TRUE(c.initialise);
  EXPECT_FALSE(c.added);
  EXPECT_EQ(slots.size(), 2u);
  // 20 lost its place: it is set up again, in the place of 10 (now the older one).
  const auto d = slots.pick(20);
  EXPECT_EQ(d.index, 0u);
  EXPECT_TRUE(d.initialise);
  EXPECT_EQ(slots.initialisations(), 4u);
}

TEST(SizedSlots, AForgottenPlaceIsSetUpAgainBeforeANewOneIsMade) {
  SizedSlots slots(8);
  slots.pick(256);
  slots.pick(128);
  slots.forget(0);  // a failed batched call on the state set up for 256
  const auto again = slots.pick(256);
  EXPECT_EQ(again.index, 0u);
  EXPECT_TRUE(again.initialise);
  EXPECT_FALSE(again.added);
  EXPECT_EQ(slots.size(), 2u);
  EXPECT_FALSE(slots.pick(128).initialise);
  slots.forget(7);  // no such place: nothing happens
  EXPECT_EQ(slots.size(), 2u);
}

TEST(SizedSlots, AZeroCapacityStillHoldsOneState) {
  SizedSlots slots(0);
  EXPECT_EQ(slots.capacity(), 1u);
  EXPECT_TRUE(slots.pick(5).added);
  const auto b = slots.pick(6);
  EXPECT_EQ(b.index, 0u);
  EXPECT_TRUE(b.initialise);
  EXPECT_FALSE(slots.pick(6).initialise);
}

}  // namespace
}  // namespace gb::gpu
