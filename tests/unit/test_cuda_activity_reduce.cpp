// The in-job reduction: CUPTI-like activity records -> per-interval aggregates. Times below
// are in ns on a grid of 100 ms intervals starting at T.
#include <gtest/gtest.h>

#include "cuda_activity/reduce.hpp"

namespace ca = gb::cuda_activity;

namespace {

constexpr std::uint64_t kMs = 1'000'000;
constexpr std::uint64_t kUs = 1'000;
constexpr std::uint64_t T = 1000 * 100 * kMs;  // a multiple of the interval
const char* const kGemm = "sm90_xmma_gemm_f16f16_f32_tn_n_tilesize128x128x64_gmma";
const char* const kAdd = "_ZN2at6native29vectorized_elementwise_kernelILi4EEEvv";

const ca::DeviceInterval* device(const ca::IntervalRecord& r, std::uint32_t d) {
  for (std::uint32_t i = 0; i < r.devices; ++i)
    if (r.dev[i].device == d) return &r.dev[i];
  return nullptr;
}

}  // namespace

TEST(CudaReduce, OverlappingKernelsOnTwoStreamsCountOnceInTheBusyTime) {
  ca::IntervalReducer red(1, 100 * kMs);
  red.add_kernel(0, T + 10 * kMs, T + 30 * kMs, kGemm);  // stream A
  red.add_kernel(0, T + 20 * kMs, T + 40 * kMs, kGemm);  // stream B, overlapping by 10 ms
  red.add_kernel(0, T + 60 * kMs, T + 70 * kMs, kAdd);
  const auto recs = red.close_until(T + 100 * kMs);
  ASSERT_EQ(recs.size(), 1u);
  const ca::DeviceInterval* d = device(recs[0], 0);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->busy_ns, 40 * kMs);    // 10..40 and 60..70
  EXPECT_EQ(d->kernel_ns, 50 * kMs);  // summed durations count the overlap twice
  EXPECT_EQ(d->kernels, 3u);
}

TEST(CudaReduce, AGapIsTheIdleTimeBetweenBusySpansCountedWhereTheGpuGotBusyAgain) {
  ca::IntervalReducer red(1, 100 * kMs);
  red.add_kernel(0, T + 10 * kMs, T + 20 * kMs, kAdd);
  red.add_kernel(0, T + 20 * kMs + 5 * kUs, T + 30 * kMs, kAdd);  // 5 µs gap
  red.add_kernel(0, T + 130 * kMs, T + 140 * kMs, kAdd);          // 100 ms gap, next interval
  const auto recs = red.close_until(T + 200 * kMs);
  ASSERT_EQ(recs.size(), 2u);
  const ca::DeviceInterval* a = device(recs[0], 0);
  const ca::DeviceInterval* b = device(recs[1], 0);
  EXPECT_EQ(a->gaps, 1u) << "no gap before the first span of the run";
  EXPECT_EQ(a->gap_ns, 5 * kUs);
  EXPECT_EQ(a->gap_hist[ca::duration_bin(5 * kUs)], 1u);
  EXPECT_EQ(b->gaps, 1u);
  EXPECT_EQ(b->gap_ns, 100 * kMs);
  EXPECT_EQ(b->gap_hist[ca::duration_bin(100 * kMs)], 1u);
}

TEST(CudaReduce, ASpanAcrossTheIntervalEdgeIsSplitWithoutAGap) {
  ca::IntervalReducer red(1, 100 * kMs);
  red.add_kernel(0, T + 80 * kMs, T + 130 * kMs, kGemm);
  const auto recs = red.close_until(T + 200 * kMs);
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(device(recs[0], 0)->busy_ns, 20 * kMs);
  EXPECT_EQ(device(recs[1], 0)->busy_ns, 30 * kMs);
  EXPECT_EQ(device(recs[1], 0)->gaps, 0u);
  EXPECT_EQ(device(recs[0], 0)->kernels, 1u) << "a kernel counts where it started";
  EXPECT_EQ(device(recs[1], 0)->kernels, 0u);
}

TEST(CudaReduce, TheIdleMaskMarksTheMillisecondsTheDeviceWasMostlyIdle) {
  ca::IntervalReducer red(1, 100 * kMs);
  red.add_kernel(0, T + 10 * kMs, T + 20 * kMs, kGemm);
  red.add_kernel(0, T + 50 * kMs, T + 50 * kMs + 400 * kUs, kAdd);  // 0.4 ms of ms 50: idle
  const auto recs = red.close_until(T + 100 * kMs);
  const ca::DeviceInterval* d = device(recs[0], 0);
  EXPECT_TRUE(ca::mask_bit(d->idle_mask, 5));
  EXPECT_FALSE(ca::mask_bit(d->idle_mask, 10));
  EXPECT_FALSE(ca::mask_bit(d->idle_mask, 19));
  EXPECT_TRUE(ca::mask_bit(d->idle_mask, 20));
  EXPECT_TRUE(ca::mask_bit(d->idle_mask, 50));
  EXPECT_TRUE(ca::mask_bit(d->idle_mask, 99));
  EXPECT_FALSE(ca::mask_bit(d->idle_mask, 100)) << "outside the 100 ms interval";
}

TEST(CudaReduce, AnIdleIntervalAfterTheFirstActivityIsStillWritten) {
  ca::IntervalReducer red(1, 100 * kMs);
  EXPECT_TRUE(red.close_until(T).empty()) << "nothing before the first activity";
  red.add_kernel(0, T + 10 * kMs, T + 20 * kMs, kGemm);
  const auto recs = red.close_until(T + 300 * kMs);
  ASSERT_EQ(recs.size(), 3u);
  const ca::DeviceInterval* idle = device(recs[2], 0);
  ASSERT_NE(idle, nullptr) << "the device stays listed while the process lives";
  EXPECT_EQ(idle->busy_ns, 0u);
  EXPECT_TRUE(ca::mask_bit(idle->idle_mask, 0));
}

TEST(CudaReduce, TinyKernelsAreCountedWithTheirTime) {
  ca::IntervalReducer red(1, 100 * kMs);
  for (int i = 0; i < 8; ++i)
    red.add_kernel(0, T + i * 20 * kUs, T + i * 20 * kUs + 4 * kUs, kAdd);
  red.add_kernel(0, T + 1 * kMs, T + 3 * kMs, kGemm);
  const auto recs = red.close_until(T + 100 * kMs);
  const ca::DeviceInterval* d = device(recs[0], 0);
  EXPECT_EQ(d->kernels, 9u);
  EXPECT_EQ(d->tiny_kernels, 8u);
  EXPECT_EQ(d->tiny_kernel_ns, 32 * kUs);
  EXPECT_EQ(d->kernel_hist[ca::duration_bin(4 * kUs)], 8u);
}

TEST(CudaReduce, TopKernelsAreOrderedByGpuTimeDemangledWithATensorCoreGuess) {
  ca::IntervalReducer red(1, 100 * kMs);
  for (int i = 0; i < 10; ++i) red.add_kernel(0, T + i * kMs, T + i * kMs + 50 * kUs, kAdd);
  red.add_kernel(0, T + 20 * kMs, T + 22 * kMs, kGemm);
  const auto recs = red.close_until(T + 100 * kMs);
  const ca::KernelTop* top = recs[0].top;
  EXPECT_STREQ(top[0].name, kGemm);
  EXPECT_EQ(top[0].ns, 2 * kMs);
  EXPECT_EQ(top[0].tensor_core_guess, 1u);
  EXPECT_EQ(std::string(top[1].name).rfind("void at::native::vectorized_elementwise_kernel", 0),
            0u)
      << top[1].name;
  EXPECT_EQ(top[1].count, 10u);
  EXPECT_EQ(top[1].tensor_core_guess, 0u);
  EXPECT_EQ(top[2].name[0], '\0');
}

TEST(CudaReduce, TensorCoreGuessFromCommonKernelNames) {
  EXPECT_TRUE(ca::tensor_core_name("ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_nn"));
  EXPECT_TRUE(ca::tensor_core_name("cutlass::Kernel<cutlass_80_tensorop_bf16_s16816gemm>"));
  EXPECT_TRUE(ca::tensor_core_name("sm80_xmma_fprop_implicit_gemm_f16f16_f16f32_f32"));
  // cuBLAS's Hopper GEMM of a BF16 matmul, as CUPTI named it on an H100.
  EXPECT_TRUE(ca::tensor_core_name("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"));
  EXPECT_TRUE(ca::tensor_core_name("void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64>>"));
  EXPECT_FALSE(ca::tensor_core_name("void at::native::vectorized_elementwise_kernel<4>"));
  EXPECT_FALSE(ca::tensor_core_name("volta_sgemm_128x64_nn"));
}

TEST(CudaReduce, CopiesAreSplitByDirectionAndHostMemoryKind) {
  ca::IntervalReducer red(1, 100 * kMs);
  red.add_copy(0, T + 1 * kMs, T + 2 * kMs, 50'000'000, ca::CopyKind::h2d_pinned);
  red.add_copy(0, T + 3 * kMs, T + 8 * kMs, 50'000'000, ca::CopyKind::h2d_pageable);
  red.add_copy(0, T + 9 * kMs, T + 9 * kMs + 10 * kUs, 4, ca::CopyKind::d2h_pageable);
  red.add_memset(0, T + 10 * kMs, T + 11 * kMs, 1000);
  const auto recs = red.close_until(T + 100 * kMs);
  const ca::DeviceInterval* d = device(recs[0], 0);
  const auto& c = d->copies;
  EXPECT_EQ(c[static_cast<int>(ca::CopyKind::h2d_pinned)].bytes, 50'000'000u);
  EXPECT_EQ(c[static_cast<int>(ca::CopyKind::h2d_pageable)].ns, 5 * kMs);
  EXPECT_EQ(c[static_cast<int>(ca::CopyKind::d2h_pageable)].count, 1u);
  EXPECT_EQ(d->memsets.bytes, 1000u);
  EXPECT_EQ(d->busy_ns, 1 * kMs + 5 * kMs + 10 * kUs + 1 * kMs);
}

TEST(CudaReduce, HostSyncsGiveTheBlockedTimeAndTheSyncMask) {
  ca::IntervalReducer red(1, 100 * kMs);
  red.add_kernel(0, T, T + 1 * kMs, kAdd);
  red.add_sync(T + 10 * kMs, T + 12 * kMs);
  red.add_sync(T + 50 * kMs, T + 50 * kMs + 100 * kUs);
  const auto recs = red.close_until(T + 100 * kMs);
  EXPECT_EQ(recs[0].syncs, 2u);
  EXPECT_EQ(recs[0].sync_ns, 2 * kMs + 100 * kUs);
  EXPECT_TRUE(ca::mask_bit(recs[0].sync_mask, 10));
  EXPECT_TRUE(ca::mask_bit(recs[0].sync_mask, 11));
  EXPECT_FALSE(ca::mask_bit(recs[0].sync_mask, 12));
  EXPECT_FALSE(ca::mask_bit(recs[0].sync_mask, 50)) << "0.1 ms of that millisecond";
}

TEST(CudaReduce, TwoDevicesAreKeptApart) {
  ca::IntervalReducer red(1, 100 * kMs);
  red.add_kernel(0, T + 10 * kMs, T + 20 * kMs, kGemm);
  red.add_kernel(1, T + 10 * kMs, T + 90 * kMs, kGemm);
  const auto recs = red.close_until(T + 100 * kMs);
  EXPECT_EQ(recs[0].devices, 2u);
  EXPECT_EQ(device(recs[0], 0)->busy_ns, 10 * kMs);
  EXPECT_EQ(device(recs[0], 1)->busy_ns, 80 * kMs);
}

TEST(CudaReduce, ARecordForAnIntervalAlreadyWrittenIsClippedAndCountedLate) {
  ca::IntervalReducer red(1, 100 * kMs);
  red.add_kernel(0, T + 10 * kMs, T + 20 * kMs, kAdd);
  ASSERT_EQ(red.close_until(T + 100 * kMs).size(), 1u);
  red.add_kernel(0, T + 90 * kMs, T + 110 * kMs, kAdd);  // arrives after its interval closed
  const auto recs = red.close_until(T + 200 * kMs);
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(device(recs[0], 0)->busy_ns, 10 * kMs) << "only the part inside the open interval";
  EXPECT_GE(recs[0].late_records, 1u);
  EXPECT_EQ(device(recs[0], 0)->kernels, 1u) << "counted in the oldest open interval";
}

TEST(CudaReduce, PendingSpansStayBoundedAndOverflowIsCounted) {
  // 64 spans at most: merged when full; disjoint spans beyond half of it are counted, not kept.
  ca::IntervalReducer red(1, 100 * kMs, 64);
  for (int i = 0; i < 1000; ++i)
    red.add_kernel(0, T + i * 20 * kUs, T + i * 20 * kUs + 5 * kUs, kAdd);
  const auto recs = red.close_until(T + 100 * kMs);
  EXPECT_GT(recs[0].overflow_spans, 0u);
  EXPECT_EQ(device(recs[0], 0)->kernels, 1000u) << "counts stay exact";
}

TEST(CudaReduce, CloseAllEndsTheLastIntervalShort) {
  ca::IntervalReducer red(1, 100 * kMs);
  red.add_kernel(0, T + 110 * kMs, T + 120 * kMs, kAdd);
  const auto recs = red.close_all(T + 150 * kMs);
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].t0_ns, T + 100 * kMs);
  EXPECT_EQ(recs[0].t1_ns, T + 150 * kMs);
  EXPECT_EQ(device(recs[0], 0)->busy_ns, 10 * kMs);
}

TEST(CudaReduce, DurationBinsAreQuarterOctaves) {
  EXPECT_EQ(ca::duration_bin(100), 0);
  EXPECT_EQ(ca::duration_bin(250), 1);
  EXPECT_EQ(ca::duration_bin(500), 5);
  EXPECT_LT(ca::duration_bin(9'999), ca::duration_bin(10'000) + 1);
  EXPECT_EQ(ca::duration_bin(UINT64_MAX), ca::kDurationBins - 1);
  for (int b = 1; b < 40; ++b) {
    EXPECT_EQ(ca::duration_bin(static_cast<std::uint64_t>(ca::bin_mid_ns(b))), b);
    EXPECT_LT(ca::bin_lower_ns(b), ca::bin_mid_ns(b));
  }
}

TEST(CudaReduce, NvtxRangesAreSummedPerNameInTheIntervalTheyEnd) {
  ca::IntervalReducer red(1, 100 * kMs);
  red.add_kernel(0, T, T + kMs, kGemm);
  // Two steps of "data" then "forward" (nested "conv" inside), one "data" across the edge.
  red.add_range_start(1, T + 10 * kMs, "", "data");
  red.add_range_end(1, T + 20 * kMs);
  red.add_range_start(2, T + 20 * kMs, "", "forward");
  red.add_range_start(3, T + 25 * kMs, "", "conv");
  red.add_range_end(3, T + 30 * kMs);
  red.add_range_end(2, T + 50 * kMs);
  red.add_range_start(4, T + 60 * kMs, "", "data");
  red.add_range_end(4, T + 65 * kMs);
  red.add_range_start(5, T + 90 * kMs, "", "data");
  red.add_range_end(5, T + 130 * kMs);  // ends in the second interval, counted there whole
  const auto recs = red.close_until(T + 200 * kMs);
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(recs[0].nvtx_ranges, 4u);
  EXPECT_STREQ(recs[0].nvtx[0].name, "forward");
  EXPECT_EQ(recs[0].nvtx[0].ns, 30 * kMs);
  EXPECT_STREQ(recs[0].nvtx[1].name, "data");
  EXPECT_EQ(recs[0].nvtx[1].ns, 15 * kMs);
  EXPECT_EQ(recs[0].nvtx[1].count, 2u);
  EXPECT_STREQ(recs[0].nvtx[2].name, "conv");
  EXPECT_EQ(recs[0].nvtx[3].name[0], '\0');
  EXPECT_EQ(recs[1].nvtx_ranges, 1u);
  EXPECT_STREQ(recs[1].nvtx[0].name, "data");
  EXPECT_EQ(recs[1].nvtx[0].ns, 40 * kMs);
}

TEST(CudaReduce, NvtxDomainsPrefixTheNameAndUnmatchedEndsAreIgnored) {
  ca::IntervalReducer red(1, 100 * kMs);
  red.add_kernel(0, T, T + kMs, kGemm);
  red.add_range_end(9, T + 5 * kMs);  // its start came before collection began
  red.add_range_start(1, T + 10 * kMs, "loader", "decode");
  red.add_range_end(1, T + 12 * kMs);
  const auto recs = red.close_until(T + 100 * kMs);
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].nvtx_ranges, 1u);
  EXPECT_STREQ(recs[0].nvtx[0].name, "loader/decode");
}

TEST(CudaReduce, OpenNvtxRangesAreBoundedAndOverflowIsCounted) {
  ca::IntervalReducer red(1, 100 * kMs);
  red.add_kernel(0, T, T + kMs, kGemm);
  for (std::uint64_t id = 0; id < ca::IntervalReducer::kMaxOpenRanges + 10; ++id)
    red.add_range_start(id, T + kMs, "", "never closed");
  const auto recs = red.close_until(T + 100 * kMs);
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].overflow_spans, 10u);
  EXPECT_EQ(recs[0].nvtx_ranges, 0u);
}
