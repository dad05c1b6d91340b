// tests/gpu/test_membw.cpp: every bandwidth kernel against a CPU reference on small sizes,
// including sizes that are not a multiple of the 4-element vector (the scalar tail) and grids
// that are larger or smaller than the work, for every write/copy KernelVariant (grid-stride and
// one-shot tiled, unroll 4 and 8, normal and streaming hints); the pattern helpers; the memcpy
// helpers.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "gpu/cuda_raii.hpp"
#include "gpu/membw.hpp"

namespace gb::gpu {
namespace {

bool has_gpu() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

#define REQUIRE_GPU() \
  if (!has_gpu()) GTEST_SKIP() << "no CUDA device"

// Element counts around the vector width and the grid-stride unroll boundaries.
const std::size_t kSizes[] = {0, 1, 2, 3, 4, 5, 7, 8, 31, 1000, 4097, 65539, (1u << 20) + 3};
// A tiny grid (many iterations per thread), an odd one, and one with more threads than work.
const LaunchShape kShapes[] = {{1, 32}, {7, 96}, {264, 256}};
// The shapes a variant is tested with: kShapes plus the one-shot tiled grid for n (exactly one
// tile per block for a tiled variant; a grid-stride variant must cope with it too).
std::vector<LaunchShape> shapes_for(std::size_t n, const KernelVariant& v) {
  std::vector<LaunchShape> out(std::begin(kShapes), std::end(kShapes));
  out.push_back({tiled_grid_blocks(n, 128, v.unroll), 128});
  return out;
}

std::string describe(const KernelVariant& v, LaunchShape shape, std::size_t n) {
  return variant_name(v) + ", " + std::to_string(shape.blocks) + " x " +
         std::to_string(shape.threads) + ", n = " + std::to_string(n);
}

constexpr std::size_t kCanary = 8;  // elements after the end that must stay untouched
constexpr std::uint32_t kCanaryValue = 0xDEADBEEFu;

template <typename T>
std::vector<T> download(const DeviceBuffer& d, std::size_t n) {
  std::vector<T> h(n);
  GB_CHECK_CUDA(cudaMemcpy(h.data(), d.data(), n * sizeof(T), cudaMemcpyDeviceToHost));
  return h;
}

template <typename T>
DeviceBuffer upload(const std::vector<T>& h) {
  DeviceBuffer d(h.size() * sizeof(T));
  GB_CHECK_CUDA(cudaMemcpy(d.data(), h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
  // From pageable memory cudaMemcpy may return before the DMA has landed, and the tests' streams
  // are non-blocking (no ordering with the legacy stream): wait for it. (Seen on the H200 with
  // another test using the GPU: the last word of a buffer still unwritten when read.)
  GB_CHECK_CUDA(cudaDeviceSynchronize());
  return d;
}

std::vector<std::uint32_t> random_u32(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::uint32_t> v(n);
  for (auto& x : v) x = rng();
  return v;
}

std::vector<std::uint32_t> with_canary(std::vector<std::uint32_t> v) {
  v.insert(v.end(), kCanary, kCanaryValue);
  return v;
}

void expect_canary(const std::vector<std::uint32_t>& v, std::size_t n) {
  for (std::size_t i = n; i < n + kCanary; ++i)
    EXPECT_EQ(v[i], kCanaryValue) << "wrote past the end at " << i << " (n = " << n << ")";
}

TEST(MembwPattern, ClosedFormSumMatchesHostSum) {
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{3},
                              std::size_t{1000}, std::size_t{65537}, std::size_t{1} << 20}) {
    for (const std::uint32_t seed : {0u, 1u, 0x12345678u}) {
      std::uint32_t sum = 0;
      for (std::size_t i = 0; i < n; ++i) sum += pattern_u32(i, seed);
      EXPECT_EQ(expected_pattern_sum(n, seed), sum) << "n = " << n << ", seed = " << seed;
    }
  }
}

TEST(MembwPattern, FloatPatternIsSmallIntegers) {
  for (std::size_t i = 0; i < 100000; ++i) {
    const float v = pattern_f32(i, 7);
    EXPECT_EQ(v, static_cast<float>(static_cast<int>(v)));
    EXPECT_GE(v, -32768.0f);
    EXPECT_LE(v, 32767.0f);
  }
}

TEST(MembwFill, MatchesHostPatterns) {
  REQUIRE_GPU();
  const std::size_t n = 100003;
  DeviceBuffer u(n * 4), f(n * 4);
  fill_pattern_u32(u.as<std::uint32_t>(), n, 99, nullptr);
  fill_pattern_f32(f.as<float>(), n, 98, nullptr);
  GB_CHECK_CUDA(cudaDeviceSynchronize());
  const auto hu = download<std::uint32_t>(u, n);
  const auto hf = download<float>(f, n);
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(hu[i], pattern_u32(i, 99)) << i;
    ASSERT_EQ(hf[i], pattern_f32(i, 98)) << i;
  }
}

TEST(MembwRead, PartialSumsAddUpToTheHostSum) {
  REQUIRE_GPU();
  for (const std::size_t n : kSizes) {
    const auto host = random_u32(n, static_cast<unsigned>(n));
    std::uint32_t want = 0;
    for (const auto v : host) want += v;
    const DeviceBuffer src = upload(with_canary(host));
    for (const LaunchShape shape : kShapes) {
      DeviceBuffer partial(static_cast<std::size_t>(shape.blocks) * 4);
      launch_read(src.as<std::uint32_t>(), n, partial.as<std::uint32_t>(), shape, nullptr);
      GB_CHECK_CUDA(cudaDeviceSynchronize());
      std::uint32_t got = 0;
      for (const auto v : download<std::uint32_t>(partial, shape.blocks)) got += v;
      EXPECT_EQ(got, want) << "n = " << n << ", " << shape.blocks << " x " << shape.threads;
    }
  }
}

TEST(MembwRead, DeviceChecksumMatchesClosedForm) {
  REQUIRE_GPU();
  for (const std::size_t n : kSizes) {
    DeviceBuffer d(std::max<std::size_t>(n, 1) * 4);
    fill_pattern_u32(d.as<std::uint32_t>(), n, 5, nullptr);
    EXPECT_EQ(device_checksum_u32(d.as<std::uint32_t>(), n, nullptr), expected_pattern_sum(n, 5))
        << "n = " << n;
  }
}

TEST(MembwWrite, WritesThePatternAndNothingPastTheEnd) {
  REQUIRE_GPU();
  for (const KernelVariant& v : kernel_variants(MemKernel::write)) {
    for (const std::size_t n : kSizes) {
      for (const LaunchShape shape : shapes_for(n, v)) {
        DeviceBuffer dst = upload(with_canary(std::vector<std::uint32_t>(n, 0)));
        launch_write(dst.as<std::uint32_t>(), n, 1234, shape, nullptr, v);
        GB_CHECK_CUDA(cudaDeviceSynchronize());
        const auto h = download<std::uint32_t>(dst, n + kCanary);
        for (std::size_t i = 0; i < n; ++i)
          ASSERT_EQ(h[i], pattern_u32(i, 1234)) << describe(v, shape, n) << ", i = " << i;
        expect_canary(h, n);
      }
    }
  }
}

TEST(MembwCopy, CopiesEveryElementAndNothingPastTheEnd) {
  REQUIRE_GPU();
  for (const KernelVariant& v : kernel_variants(MemKernel::copy)) {
    for (const std::size_t n : kSizes) {
      const auto host = random_u32(n, 17);
      const DeviceBuffer src = upload(with_canary(host));
      for (const LaunchShape shape : shapes_for(n, v)) {
        DeviceBuffer dst = upload(with_canary(std::vector<std::uint32_t>(n, 0)));
        launch_copy(src.as<std::uint32_t>(), dst.as<std::uint32_t>(), n, shape, nullptr, v);
        GB_CHECK_CUDA(cudaDeviceSynchronize());
        const auto h = download<std::uint32_t>(dst, n + kCanary);
        for (std::size_t i = 0; i < n; ++i)
          ASSERT_EQ(h[i], host[i]) << describe(v, shape, n) << ", i = " << i;
        expect_canary(h, n);
      }
    }
  }
}

TEST(MembwVariants, ListIsDistinctWithTheDefaultFirst) {
  for (const MemKernel k : {MemKernel::write, MemKernel::copy}) {
    const std::vector<KernelVariant> vs = kernel_variants(k);
    ASSERT_GE(vs.size(), 2u);
    EXPECT_EQ(vs.front(), KernelVariant{});
    std::set<std::string> names;
    bool has_tiled = false, has_streaming = false;
    for (const KernelVariant& v : vs) {
      EXPECT_TRUE(names.insert(variant_name(v)).second) << variant_name(v);
      has_tiled = has_tiled || v.access == MemAccess::tiled;
      has_streaming = has_streaming || v.hint == CacheHint::streaming;
    }
    EXPECT_TRUE(has_tiled);
    EXPECT_TRUE(has_streaming);
  }
  for (const MemKernel k : {MemKernel::read, MemKernel::triad})
    EXPECT_EQ(kernel_variants(k), std::vector<KernelVariant>{KernelVariant{}});
  EXPECT_EQ(variant_name({MemAccess::tiled, 8, CacheHint::streaming}), "tiled/u8/streaming");
  EXPECT_EQ(variant_name({}), "grid_stride/u4/normal");
}

TEST(MembwVariants, TiledGridCoversTheBufferWithOneTilePerBlock) {
  EXPECT_EQ(tiled_grid_blocks(0, 256, 4), 1);  // at least one block (the tail needs it)
  EXPECT_EQ(tiled_grid_blocks(3, 256, 4), 1);
  EXPECT_EQ(tiled_grid_blocks(4 * 1024, 256, 4), 1);
  EXPECT_EQ(tiled_grid_blocks(4 * 1024 + 4, 256, 4), 2);
  EXPECT_EQ(tiled_grid_blocks(4 * 1024 + 3, 256, 4), 1);  // the extra 3 are tail elements
  // 2 GiB of 4-byte elements, 128 threads x 4 vectors of 16 bytes = 8 KiB per tile.
  EXPECT_EQ(tiled_grid_blocks((std::size_t{2} << 30) / 4, 128, 4), 262144);
}

TEST(MembwTriad, MatchesHostTriadExactly) {
  REQUIRE_GPU();
  const float s = 3.0f;
  for (const std::size_t n : kSizes) {
    std::vector<float> b(n + kCanary), c(n + kCanary);
    for (std::size_t i = 0; i < n + kCanary; ++i) {
      b[i] = pattern_f32(i, 1);
      c[i] = pattern_f32(i, 2);
    }
    const DeviceBuffer db = upload(b), dc = upload(c);
    for (const LaunchShape shape : kShapes) {
      DeviceBuffer da = upload(with_canary(std::vector<std::uint32_t>(n, 0)));
      launch_triad(da.as<float>(), db.as<float>(), dc.as<float>(), s, n, shape, nullptr);
      GB_CHECK_CUDA(cudaDeviceSynchronize());
      const auto a = download<float>(da, n);
      for (std::size_t i = 0; i < n; ++i)
        ASSERT_EQ(a[i], b[i] + s * c[i]) << "n = " << n << ", i = " << i;
      expect_canary(download<std::uint32_t>(da, n + kCanary), n);
    }
  }
}

TEST(MembwGather, PicksTheIndexedElements) {
  REQUIRE_GPU();
  const auto host = random_u32(1000, 3);
  const DeviceBuffer src = upload(host);
  const std::vector<std::uint64_t> idx = {0, 999, 500, 3, 3, 998};
  const DeviceBuffer didx = upload(idx);
  DeviceBuffer out(idx.size() * 4);
  gather_u32(src.as<std::uint32_t>(), didx.as<std::uint64_t>(), idx.size(), out.as<std::uint32_t>(),
             nullptr);
  GB_CHECK_CUDA(cudaDeviceSynchronize());
  const auto got = download<std::uint32_t>(out, idx.size());
  for (std::size_t k = 0; k < idx.size(); ++k) EXPECT_EQ(got[k], host[idx[k]]);
}

TEST(MembwLaunch, RejectsMisalignedPointersAndBadShapes) {
  REQUIRE_GPU();
  DeviceBuffer d(64 * 4), partial(4);
  std::uint32_t* p = d.as<std::uint32_t>();
  EXPECT_THROW(launch_copy(p + 1, p + 32, 8, {1, 32}, nullptr), Error);
  EXPECT_THROW(launch_write(p + 2, 8, 0, {1, 32}, nullptr), Error);
  EXPECT_THROW(launch_read(p, 8, partial.as<std::uint32_t>(), {0, 32}, nullptr), Error);
  EXPECT_THROW(launch_read(p, 8, partial.as<std::uint32_t>(), {1, 48}, nullptr), Error);
  EXPECT_THROW(launch_read(p, 8, partial.as<std::uint32_t>(), {1, 2048}, nullptr), Error);
}

TEST(MembwLaunch, EveryKernelFitsOnAnSm) {
  REQUIRE_GPU();
  for (const MemKernel k : {MemKernel::read, MemKernel::write, MemKernel::copy, MemKernel::triad})
    for (const KernelVariant& v : kernel_variants(k))
      for (const int threads : {128, 256, 1024})
        EXPECT_GE(blocks_per_sm(k, threads, v), 1) << variant_name(v) << ", " << threads;
}

TEST(MembwLaunch, RejectsUnsupportedVariants) {
  REQUIRE_GPU();
  DeviceBuffer d(64 * 4);
  std::uint32_t* p = d.as<std::uint32_t>();
  const KernelVariant odd{MemAccess::grid_stride, 3, CacheHint::normal};
  const KernelVariant tiled{MemAccess::tiled, 4, CacheHint::normal};
  EXPECT_THROW(launch_copy(p, p + 32, 8, {1, 32}, nullptr, odd), Error);
  EXPECT_THROW(launch_write(p, 8, 0, {1, 32}, nullptr, odd), Error);
  EXPECT_THROW(blocks_per_sm(MemKernel::read, 256, tiled), Error);
  EXPECT_THROW(blocks_per_sm(MemKernel::triad, 256, tiled), Error);
}

TEST(MembwMemcpy, RepeatedCopiesRoundTripThroughPinnedMemory) {
  REQUIRE_GPU();
  const std::size_t n = (1 << 16) + 3;
  const Stream stream = Stream::create();
  PinnedBuffer in(n * 4), out(n * 4);
  const auto host = random_u32(n, 11);
  std::copy(host.begin(), host.end(), in.as<std::uint32_t>());
  std::fill_n(out.as<std::uint32_t>(), n, 0u);
  DeviceBuffer d(n * 4);
  memcpy_repeated(d.data(), in.data(), n * 4, 3, cudaMemcpyHostToDevice, stream.get());
  memcpy_repeated(out.data(), d.data(), n * 4, 2, cudaMemcpyDeviceToHost, stream.get());
  stream.synchronize();
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out.as<std::uint32_t>()[i], host[i]) << i;
}

TEST(MembwMemcpy, BidirectionalMovesBothWaysAndJoinsOnTheFirstStream) {
  REQUIRE_GPU();
  const std::size_t n = (1 << 18) + 1;
  const Stream s1 = Stream::create(), s2 = Stream::create();
  PinnedBuffer host_src(n * 4), host_dst(n * 4);
  const auto up = random_u32(n, 21);
  const auto down = random_u32(n, 22);
  std::copy(up.begin(), up.end(), host_src.as<std::uint32_t>());
  std::fill_n(host_dst.as<std::uint32_t>(), n, 0u);
  DeviceBuffer dev_dst(n * 4);
  const DeviceBuffer dev_src = upload(down);
  memcpy_bidirectional(dev_dst.data(), host_src.data(), host_dst.data(), dev_src.data(), n * 4, 2,
                       s1.get(), s2.get());
  s1.synchronize();  // must cover the D2H copies on s2 too
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(host_dst.as<std::uint32_t>()[i], down[i]) << i;
  EXPECT_EQ(download<std::uint32_t>(dev_dst, n), up);
}

}  // namespace
}  // namespace gb::gpu
