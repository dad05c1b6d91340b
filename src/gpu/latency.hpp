// gpu/latency.hpp: the empty kernel the launch-latency probe times, launched one at a time,
// back to back, or captured into a CUDA graph. Kernels live in latency.cu; this header is plain
// C++ for the host code that times them (bench/gpu/probe_latency.cpp).
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>

#include "gpu/cuda_raii.hpp"

namespace gb::gpu {

// One empty kernel, <<<1, 1>>>, on `stream`: all its cost is launch overhead.
void launch_empty_kernel(cudaStream_t stream);
// `count` empty kernels back to back on `stream`.
void launch_empty_kernels(int count, cudaStream_t stream);
// Records `count` empty kernels into a graph through stream capture on `stream` (which must not
// be the legacy default stream). The graph is a chain of `count` kernel nodes.
CudaGraph capture_empty_kernels(int count, cudaStream_t stream);
// Number of nodes in a graph (to check what a capture recorded).
std::size_t graph_node_count(const CudaGraph& graph);

}  // namespace gb::gpu
