// tests/gpu/test_normalize.cpp: the loader's normalization kernel against the CPU reference
// (data/normalize.hpp) bit for bit, for every layout and output type, odd shapes, 1 to 4
// channels.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "data/normalize.hpp"
#include "gpu/cuda_raii.hpp"
#include "gpu/normalize.hpp"

namespace gb::gpu {
namespace {

bool has_gpu() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

TEST(NormalizeKernel, MatchesTheCpuReferenceBitForBit) {
  if (!has_gpu()) GTEST_SKIP() << "no CUDA device";
  const data::BatchShape shapes[] = {{1, 1, 1, 3}, {3, 7, 5, 3}, {2, 31, 33, 1}, {4, 16, 9, 4},
                                     {8, 224, 224, 3}};
  std::mt19937 gen(7);
  for (const data::BatchShape& s : shapes) {
    std::vector<std::uint8_t> src(s.elements());
    for (auto& v : src) v = static_cast<std::uint8_t>(gen());
    DeviceBuffer d_src(src.size());
    GB_CHECK_CUDA(cudaMemcpy(d_src.data(), src.data(), src.size(), cudaMemcpyHostToDevice));
    const data::Normalization norm = data::imagenet_normalization();
    for (const auto layout : {data::TensorLayout::nchw, data::TensorLayout::nhwc})
      for (const auto type : {ElementType::f32, ElementType::f16, ElementType::bf16}) {
        const std::size_t bytes = s.elements() * element_bytes(type);
        std::vector<std::uint8_t> want(bytes), got(bytes);
        data::normalize_reference(src.data(), s, layout, type, norm, want.data());
        DeviceBuffer d_dst(bytes);
        normalize_batch(d_src.as<std::uint8_t>(),
                        NormalizeShape{s.n, s.h, s.w, s.c, layout == data::TensorLayout::nchw},
                        type, norm.mean.data(), norm.stddev.data(), d_dst.data(),
                        nullptr);
        GB_CHECK_CUDA(cudaMemcpy(got.data(), d_dst.data(), bytes, cudaMemcpyDeviceToHost));
        EXPECT_EQ(std::memcmp(want.data(), got.data(), bytes), 0)
            << s.n << "x" << s.h << "x" << s.w << "x" << s.c << " " << data::to_string(layout)
            << " " << gb::to_string(type);
      }
  }
}

TEST(NormalizeKernel, RejectsMoreThanFourChannels) {
  if (!has_gpu()) GTEST_SKIP() << "no CUDA device";
  const float m[4] = {0, 0, 0, 0}, sd[4] = {1, 1, 1, 1};
  EXPECT_THROW(normalize_batch(nullptr, NormalizeShape{1, 1, 1, 5, true}, ElementType::f32, m,
                               sd, nullptr, nullptr),
               std::exception);
}

}  // namespace
}  // namespace gb::gpu
