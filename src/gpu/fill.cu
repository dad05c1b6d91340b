// gpu/fill.cu: the random-fill kernels and their launcher (see fill.hpp).
#include <algorithm>
#include <string>

#include "core/error.hpp"
#include "gpu/check.hpp"
#include "gpu/fill.cuh"
#include "gpu/fill.hpp"

namespace gb::gpu {

namespace {

constexpr int kThreads = 256;
// Enough blocks to fill every SM of any current GPU several times over; larger buffers loop.
constexpr std::size_t kMaxBlocks = 8192;

template <ElementType T>
__global__ void fill_uniform_kernel(void* __restrict__ dst, std::size_t count, std::uint64_t seed) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    store_uniform<T>(dst, i, fill_hash(seed, i));
  }
}

template <ElementType T>
void launch(void* dst, std::size_t count, std::uint64_t seed, cudaStream_t stream) {
  const std::size_t blocks = std::min(kMaxBlocks, (count + kThreads - 1) / kThreads);
  fill_uniform_kernel<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(dst, count, seed);
  GB_CHECK_LAUNCH();
}

}  // namespace

void fill_uniform(void* dst, ElementType t, std::size_t count, std::uint64_t seed,
                  cudaStream_t stream) {
  if (count == 0) return;
  if (dst == nullptr) throw Error(ErrorKind::runtime, "fill_uniform: null destination");
  switch (t) {
    case ElementType::f64: return launch<ElementType::f64>(dst, count, seed, stream);
    case ElementType::f32: return launch<ElementType::f32>(dst, count, seed, stream);
    case ElementType::f16: return launch<ElementType::f16>(dst, count, seed, stream);
    case ElementType::bf16: return launch<ElementType::bf16>(dst, count, seed, stream);
    case ElementType::e4m3: return launch<ElementType::e4m3>(dst, count, seed, stream);
    case ElementType::i8: return launch<ElementType::i8>(dst, count, seed, stream);
    case ElementType::i32: return launch<ElementType::i32>(dst, count, seed, stream);
  }
  throw Error(ErrorKind::runtime,
              "fill_uniform: unknown element type " + std::to_string(static_cast<int>(t)));
}

}  // namespace gb::gpu
