// gpu/gather.cu: the row gather of gpu/gather.hpp, one thread per word.
#include "gpu/check.hpp"
#include "gpu/gather.hpp"

namespace gb::gpu {

namespace {

template <typename Word>
__global__ void gather_kernel(const Word* __restrict__ src, const std::int32_t* __restrict__ index,
                              std::size_t count, std::size_t row_words, Word* __restrict__ dst) {
  const std::size_t total = count * row_words;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const std::size_t row = i / row_words, col = i % row_words;
    dst[i] = src[static_cast<std::size_t>(index[row]) * row_words + col];
  }
}

template <typename Word>
void launch(const void* src, const std::int32_t* index, std::size_t count, std::size_t row_bytes,
            void* dst, cudaStream_t stream) {
  const std::size_t words = row_bytes / sizeof(Word);
  const std::size_t total = count * words;
  const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>((total + 255) / 256, 65535));
  gather_kernel<Word><<<blocks, 256, 0, stream>>>(static_cast<const Word*>(src), index, count,
                                                  words, static_cast<Word*>(dst));
  GB_CHECK_CUDA(cudaGetLastError());
}

}  // namespace

void gather_rows(const void* src, const std::int32_t* index, std::size_t count,
                 std::size_t row_bytes, void* dst, cudaStream_t stream) {
  if (count == 0 || row_bytes == 0) return;
  if (row_bytes % 4 == 0)
    launch<std::uint32_t>(src, index, count, row_bytes, dst, stream);
  else
    launch<std::uint16_t>(src, index, count, row_bytes, dst, stream);
}

}  // namespace gb::gpu
