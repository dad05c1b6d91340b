// nn/sgd.cu: see sgd.hpp.
#include "gpu/check.hpp"
#include "nn/dtype.cuh"
#include "nn/sgd.hpp"

namespace gb::nn {
namespace {

template <typename T>
__global__ void sgd_kernel(float* __restrict__ w, float* __restrict__ m,
                           const float* __restrict__ g32, const T* __restrict__ glp,
                           T* __restrict__ wlp, std::size_t n, std::size_t n_lp,
                           const SgdHyper* __restrict__ hyper,
                           const ScalerState* __restrict__ scaler) {
  float inv_scale = 1.f;
  if (scaler) {
    if (scaler->found_inf) return;
    inv_scale = 1.f / scaler->scale;
  }
  const float lr = hyper->lr, mu = hyper->momentum, wd = hyper->weight_decay;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const bool lp = i < n_lp;
    float g = (lp ? to_f32(glp[i]) : g32[i - n_lp]) * inv_scale;
    const float wi = w[i];
    g += wd * wi;
    const float mi = mu * m[i] + g;
    const float wn = wi - lr * mi;
    m[i] = mi;
    w[i] = wn;
    if (lp) wlp[i] = from_f32<T>(wn);
  }
}

__global__ void set_hyper_kernel(SgdHyper* dst, SgdHyper value) { *dst = value; }

}  // namespace

void set_sgd_hyper(SgdHyper* dst, SgdHyper value, cudaStream_t stream) {
  set_hyper_kernel<<<1, 1, 0, stream>>>(dst, value);
  GB_CHECK_LAUNCH();
}

void sgd_step(const SgdBuffers& b, const SgdHyper* hyper, const ScalerState* scaler,
              cudaStream_t stream) {
  if (b.n == 0) return;
  constexpr unsigned block = 256;
  const unsigned grid = grid_for(b.n, block, 132u * 16u);
  dispatch_dtype(b.lp_dtype, [&](auto tag) {
    using T = decltype(tag);
    sgd_kernel<T><<<grid, block, 0, stream>>>(b.master, b.momentum, b.grad32,
                                               static_cast<const T*>(b.grad_lp),
                                               static_cast<T*>(b.weight_lp), b.n, b.n_lp, hyper,
                                               scaler);
  });
  GB_CHECK_LAUNCH();
}

}  // namespace gb::nn
