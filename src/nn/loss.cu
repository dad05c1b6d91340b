// nn/loss.cu: see loss.hpp.
#include "gpu/check.hpp"
#include "nn/dtype.cuh"
#include "nn/loss.hpp"

namespace gb::nn {
namespace {

constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;

template <typename T>
__global__ void __launch_bounds__(kThreads)
    xent_kernel(const T* __restrict__ x, const std::int32_t* __restrict__ labels,
                T* __restrict__ dx, int rows, int classes, const float* __restrict__ scale_ptr,
                StepRecord* __restrict__ record) {
  __shared__ float warp_loss[kWarps];
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const float scale = scale_ptr ? *scale_ptr : 1.f;
  const float grad_mul = scale / static_cast<float>(rows);
  float loss = 0.f;
  for (int r = warp; r < rows; r += kWarps) {
    const T* row = x + static_cast<std::size_t>(r) * classes;
    float mx = -INFINITY;
    for (int j = lane; j < classes; j += 32) mx = fmaxf(mx, to_f32(row[j]));
    for (int o = 16; o > 0; o /= 2) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    float sum = 0.f;
    for (int j = lane; j < classes; j += 32) sum += expf(to_f32(row[j]) - mx);
    for (int o = 16; o > 0; o /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    const int label = labels[r];
    const float inv_sum = 1.f / sum;
    T* drow = dx + static_cast<std::size_t>(r) * classes;
    for (int j = lane; j < classes; j += 32) {
      const float p = expf(to_f32(row[j]) - mx) * inv_sum;
      drow[j] = from_f32<T>((p - (j == label ? 1.f : 0.f)) * grad_mul);
    }
    if (lane == 0) loss += logf(sum) + mx - to_f32(row[label]);
  }
  if (lane == 0) warp_loss[warp] = loss;
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0.f;
    for (int w = 0; w < kWarps; ++w) total += warp_loss[w];
    record->loss = total / static_cast<float>(rows);
    record->scale = scale;
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    correct_kernel(const T* __restrict__ x, const std::int32_t* __restrict__ labels, int rows,
                   int classes, std::uint32_t* correct) {
  __shared__ unsigned warp_count[kWarps];
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  unsigned count = 0;
  for (int r = warp; r < rows; r += kWarps) {
    const T* row = x + static_cast<std::size_t>(r) * classes;
    float best = -INFINITY;
    int arg = classes;
    for (int j = lane; j < classes; j += 32) {
      const float v = to_f32(row[j]);
      if (v > best) best = v, arg = j;  // lanes visit j in increasing order: first max kept
    }
    for (int o = 16; o > 0; o /= 2) {
      const float ob = __shfl_xor_sync(0xffffffffu, best, o);
      const int oa = __shfl_xor_sync(0xffffffffu, arg, o);
      if (ob > best || (ob == best && oa < arg)) best = ob, arg = oa;
    }
    if (lane == 0 && arg == labels[r]) ++count;
  }
  if (lane == 0) warp_count[warp] = count;
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned total = 0;
    for (int w = 0; w < kWarps; ++w) total += warp_count[w];
    *correct = total;
  }
}

}  // namespace

void softmax_cross_entropy(const void* logits, const std::int32_t* labels, void* dlogits, int rows,
                           int classes, ElementType t, const float* scale, StepRecord* record,
                           cudaStream_t stream) {
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    xent_kernel<T><<<1, kThreads, 0, stream>>>(static_cast<const T*>(logits), labels,
                                                static_cast<T*>(dlogits), rows, classes, scale,
                                                record);
  });
  GB_CHECK_LAUNCH();
}

void count_correct(const void* logits, const std::int32_t* labels, int rows, int classes,
                   ElementType t, std::uint32_t* correct, cudaStream_t stream) {
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    correct_kernel<T><<<1, kThreads, 0, stream>>>(static_cast<const T*>(logits), labels, rows,
                                                   classes, correct);
  });
  GB_CHECK_LAUNCH();
}

}  // namespace gb::nn
