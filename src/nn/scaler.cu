// nn/scaler.cu: see scaler.hpp.
#include "gpu/check.hpp"
#include "nn/dtype.cuh"
#include "nn/scaler.hpp"

namespace gb::nn {
namespace {

template <typename T>
__global__ void nonfinite_kernel(const T* __restrict__ lp, std::size_t n_lp,
                                 const float* __restrict__ g32, std::size_t n32,
                                 ScalerState* state) {
  bool bad = false;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t start = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  for (std::size_t i = start; i < n_lp; i += stride) bad |= !isfinite(to_f32(lp[i]));
  for (std::size_t i = start; i < n32; i += stride) bad |= !isfinite(g32[i]);
  if (__syncthreads_or(bad) && threadIdx.x == 0) state->found_inf = 1;
}

__global__ void update_kernel(ScalerState* s, ScalerConfig c, StepRecord* record) {
  const bool found = s->found_inf != 0;
  if (found) {
    s->scale *= c.backoff;
    s->growth_tracker = 0;
    s->skipped += 1;
  } else {
    s->growth_tracker += 1;
    if (s->growth_tracker >= c.interval) {
      const float grown = s->scale * c.growth;
      if (isfinite(grown)) s->scale = grown;
      s->growth_tracker = 0;
    }
  }
  s->steps += 1;
  s->found_inf = 0;
  if (record) record->skipped = found ? 1 : 0;
}

}  // namespace

void check_nonfinite(const void* grads_lp, std::size_t n_lp, ElementType lp_dtype,
                     const float* grads32, std::size_t n32, ScalerState* state,
                     cudaStream_t stream) {
  const std::size_t n = n_lp > n32 ? n_lp : n32;
  if (n == 0) return;
  constexpr unsigned block = 256;
  const unsigned grid = grid_for(n, block, 132u * 8u);  // a few waves; each thread strides
  dispatch_dtype(lp_dtype, [&](auto tag) {
    using T = decltype(tag);
    nonfinite_kernel<T><<<grid, block, 0, stream>>>(static_cast<const T*>(grads_lp), n_lp,
                                                     grads32, n32, state);
  });
  GB_CHECK_LAUNCH();
}

void scaler_update(ScalerState* state, const ScalerConfig& config, StepRecord* record,
                   cudaStream_t stream) {
  update_kernel<<<1, 1, 0, stream>>>(state, config, record);
  GB_CHECK_LAUNCH();
}

}  // namespace gb::nn
