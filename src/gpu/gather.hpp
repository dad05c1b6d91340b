// gpu/gather.hpp: rows of a device array picked by an index list, into a contiguous array:
// dst[i] = src[index[i]] for i < count, each row `row_bytes` long. The amp study shuffles a
// dataset held on the GPU this way once per epoch, so every step reads a contiguous batch.
// Napkin math: Fashion-MNIST in FP32 is 60,000 x 3,136 bytes = 188 MB read + written, ~0.1 ms.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace gb::gpu {

// Asynchronous on stream; row_bytes must be a multiple of 2 (4 is faster); every index must be
// below the number of rows in src (not checked on the device).
void gather_rows(const void* src, const std::int32_t* index, std::size_t count,
                 std::size_t row_bytes, void* dst, cudaStream_t stream);

}  // namespace gb::gpu
