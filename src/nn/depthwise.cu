// nn/depthwise.cu: see depthwise.hpp. Three kernels for the 3x3 depthwise convolution in NHWC
// (channel multiplier 1, padding 1, stride 1 or 2), FP32 accumulation:
//
//   forward        one thread per (n, p, a tile of kQt outputs along q, V channels): the 9 x V
//                  weights sit in registers, x is read as 16-byte vectors along C; the tile
//                  shares input columns between neighbouring outputs (stride 1: 3 x 6 loads for
//                  4 outputs instead of 3 x 12).
//   backward data  the same tiling over (n, h, w-tile, V channels), gathering dy through the
//                  transposed stencil; with `accumulate` the old dx is read and added (beta = 1).
//   backward filter a reduction over N*P*Q per channel, deterministic and atomic-free: blocks
//                  of (channel vectors) x (rows of positions) each reduce a contiguous slice
//                  of positions in registers, then across the block in shared memory, into an
//                  FP32 scratch [split][C][9]; a second small kernel sums the splits and writes
//                  dw in the storage type.
//
// Napkin math (H200, ~3 TB/s of the 4.8 TB/s peak reachable by a streaming kernel), for the
// MobileNetV2 layer 256 x 56 x 56 x 144 FP16, stride 1 (one tensor = 256*56*56*144*2 B = 231 MB):
//   forward:         read x + write y                = 462 MB -> ~0.15 ms
//   backward data:   read dy + write dx (+ read dx)  = 462 MB (693 MB accumulating) -> ~0.15 ms
//   backward filter: read x + dy, 5 MB of partials   = 467 MB -> ~0.16 ms
// so ~0.46 ms per layer per step; the 9 FMAs per value (~1 GFLOP per call) are far below the
// FP32 rate. The 3 x 3 window's reuse (each input is read by up to 9 outputs) comes from the
// register tile along W and from L1/L2 along H.
#include <cstdint>
#include <string>

#include "core/error.hpp"
#include "gpu/check.hpp"
#include "nn/depthwise.hpp"
#include "nn/dtype.cuh"

namespace gb::nn {
namespace {

constexpr unsigned kBlock = 256;
constexpr int kQt = 4;                 // outputs along W per thread (forward, backward data)
constexpr int kTargetBlocks = 1024;    // backward filter: enough blocks to fill 132 SMs 8 times
constexpr int kMinPositionsPerThread = 16;

template <typename T, int V>
struct alignas(sizeof(T) * V) Pack {
  T v[V];
};

template <typename T, int V>
__device__ __forceinline__ Pack<T, V> load(const T* p) {
  return *reinterpret_cast<const Pack<T, V>*>(p);
}

template <typename T, int V>
__device__ __forceinline__ void store(T* p, const Pack<T, V>& v) {
  *reinterpret_cast<Pack<T, V>*>(p) = v;
}

// wk[k][j] = w[c0 + j][k] as FP32. The 9 * V weights of V consecutive channels are contiguous
// ([C][9] layout), so they load as 9 vectors of V.
template <typename T, int V>
__device__ __forceinline__ void load_weights(const T* __restrict__ w, int c0, float (&wk)[9][V]) {
  float flat[9 * V];
#pragma unroll
  for (int i = 0; i < 9; ++i) {
    const Pack<T, V> pk = load<T, V>(w + static_cast<std::size_t>(c0) * 9 + i * V);
#pragma unroll
    for (int j = 0; j < V; ++j) flat[i * V + j] = to_f32(pk.v[j]);
  }
#pragma unroll
  for (int k = 0; k < 9; ++k) {
#pragma unroll
    for (int j = 0; j < V; ++j) wk[k][j] = flat[j * 9 + k];
  }
}

template <typename T, int V, int S>
__global__ void __launch_bounds__(kBlock)
    forward_kernel(const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y, int N,
                   int H, int W, int C, int P, int Q) {
  // 32-bit decoding (the launcher checks that the item count fits): 64-bit division is slow.
  const int cv_count = C / V;
  const int q_tiles = (Q + kQt - 1) / kQt;
  const int total = N * P * q_tiles * cv_count;
  for (int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); i < total;
       i += static_cast<int>(gridDim.x * blockDim.x)) {
    const int c0 = i % cv_count * V;
    int rest = i / cv_count;
    const int q0 = rest % q_tiles * kQt;
    rest /= q_tiles;
    const int p = rest % P;
    const int n = rest / P;

    float wk[9][V];
    load_weights<T, V>(w, c0, wk);
    float acc[kQt][V] = {};
    constexpr int kCols = (kQt - 1) * S + 3;  // input columns the tile touches
#pragma unroll
    for (int r = 0; r < 3; ++r) {
      const int hh = p * S - 1 + r;
      if (hh < 0 || hh >= H) continue;
      const T* row = x + (static_cast<std::size_t>(n) * H + hh) * W * C + c0;
#pragma unroll
      for (int col = 0; col < kCols; ++col) {
        const int ww = q0 * S - 1 + col;
        if (ww < 0 || ww >= W) continue;
        const Pack<T, V> xv = load<T, V>(row + static_cast<std::size_t>(ww) * C);
#pragma unroll
        for (int t = 0; t < kQt; ++t) {
          const int s = col - t * S;  // compile-time after unrolling
          if (s < 0 || s > 2) continue;
#pragma unroll
          for (int j = 0; j < V; ++j) acc[t][j] = fmaf(to_f32(xv.v[j]), wk[r * 3 + s][j], acc[t][j]);
        }
      }
    }
    T* out = y + ((static_cast<std::size_t>(n) * P + p) * Q + q0) * C + c0;
#pragma unroll
    for (int t = 0; t < kQt; ++t) {
      if (q0 + t >= Q) break;
      Pack<T, V> o;
#pragma unroll
      for (int j = 0; j < V; ++j) o.v[j] = from_f32<T>(acc[t][j]);
      store<T, V>(out + static_cast<std::size_t>(t) * C, o);
    }
  }
}

// dx[n, h, w, c] = sum over (r, s) with h = p*S - 1 + r, w = q*S - 1 + s of dy[n, p, q, c] *
// w[c][r*3+s]. A tile starts at w0 = a multiple of kQt (itself a multiple of S), so which taps
// land on which output of the tile along W is known at compile time; along H it is a runtime
// parity test.
template <typename T, int V, int S>
__global__ void __launch_bounds__(kBlock)
    backward_data_kernel(const T* __restrict__ dy, const T* __restrict__ w, T* __restrict__ dx,
                         bool accumulate, int N, int H, int W, int C, int P, int Q) {
  static_assert(kQt % S == 0, "a tile must start on a stride boundary");
  const int cv_count = C / V;
  const int w_tiles = (W + kQt - 1) / kQt;
  const int total = N * H * w_tiles * cv_count;
  for (int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); i < total;
       i += static_cast<int>(gridDim.x * blockDim.x)) {
    const int c0 = i % cv_count * V;
    int rest = i / cv_count;
    const int w0 = rest % w_tiles * kQt;
    rest /= w_tiles;
    const int h = rest % H;
    const int n = rest / H;
    const int qb = w0 / S;

    float wk[9][V];
    load_weights<T, V>(w, c0, wk);
    float acc[kQt][V] = {};
    // Output t of the tile takes tap s from dy column qb + co where t + 1 - s = co * S.
    constexpr int kCoMin = S == 1 ? -1 : 0;
    constexpr int kCoMax = kQt / S;
#pragma unroll
    for (int r = 0; r < 3; ++r) {
      const int ph = h + 1 - r;
      if (ph < 0 || ph % S != 0) continue;
      const int p = ph / S;
      if (p >= P) continue;
      const T* row = dy + (static_cast<std::size_t>(n) * P + p) * Q * C + c0;
#pragma unroll
      for (int co = kCoMin; co <= kCoMax; ++co) {
        const int q = qb + co;
        if (q < 0 || q >= Q) continue;
        const Pack<T, V> dv = load<T, V>(row + static_cast<std::size_t>(q) * C);
#pragma unroll
        for (int t = 0; t < kQt; ++t) {
#pragma unroll
          for (int s = 0; s < 3; ++s) {
            if (t + 1 - s != co * S) continue;  // compile-time after unrolling
#pragma unroll
            for (int j = 0; j < V; ++j)
              acc[t][j] = fmaf(to_f32(dv.v[j]), wk[r * 3 + s][j], acc[t][j]);
          }
        }
      }
    }
    T* out = dx + ((static_cast<std::size_t>(n) * H + h) * W + w0) * C + c0;
#pragma unroll
    for (int t = 0; t < kQt; ++t) {
      if (w0 + t >= W) break;
      T* dst = out + static_cast<std::size_t>(t) * C;
      if (accumulate) {
        const Pack<T, V> old = load<T, V>(dst);
#pragma unroll
        for (int j = 0; j < V; ++j) acc[t][j] += to_f32(old.v[j]);
      }
      Pack<T, V> o;
#pragma unroll
      for (int j = 0; j < V; ++j) o.v[j] = from_f32<T>(acc[t][j]);
      store<T, V>(dst, o);
    }
  }
}

// Block (bx channel vectors) x (by position lanes); block (blockIdx.x, split) reduces positions
// [split * per_split, (split + 1) * per_split) of the flattened N*P*Q into
// partial[split][c][k].
template <typename T, int V, int S>
__global__ void __launch_bounds__(kBlock)
    backward_filter_partial_kernel(const T* __restrict__ x, const T* __restrict__ dy,
                                   float* __restrict__ partial, int N, int H, int W, int C, int P,
                                   int Q, int per_split) {
  __shared__ float red[kBlock * V];
  const int bx = static_cast<int>(blockDim.x), by = static_cast<int>(blockDim.y);
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  const int cv = static_cast<int>(blockIdx.x) * bx + tx;
  const int c0 = cv * V;
  const int npq = N * P * Q;  // fits in int: checked by the launcher
  const int begin = static_cast<int>(blockIdx.y) * per_split;
  const int end = npq - begin > per_split ? begin + per_split : npq;

  float acc[9][V] = {};
  if (c0 < C) {
    for (int pos = begin + ty; pos < end; pos += by) {
      const int q = pos % Q;
      const int nq = pos / Q;
      const int p = nq % P;
      const int n = nq / P;
      const Pack<T, V> dv = load<T, V>(dy + static_cast<std::size_t>(pos) * C + c0);
      float d[V];
#pragma unroll
      for (int j = 0; j < V; ++j) d[j] = to_f32(dv.v[j]);
#pragma unroll
      for (int r = 0; r < 3; ++r) {
        const int hh = p * S - 1 + r;
        if (hh < 0 || hh >= H) continue;
        const T* row = x + (static_cast<std::size_t>(n) * H + hh) * W * C + c0;
#pragma unroll
        for (int s = 0; s < 3; ++s) {
          const int ww = q * S - 1 + s;
          if (ww < 0 || ww >= W) continue;
          const Pack<T, V> xv = load<T, V>(row + static_cast<std::size_t>(ww) * C);
#pragma unroll
          for (int j = 0; j < V; ++j) acc[r * 3 + s][j] = fmaf(d[j], to_f32(xv.v[j]), acc[r * 3 + s][j]);
        }
      }
    }
  }

  // Across the block's position lanes, one tap at a time (8 KB of shared memory at most).
  const int lanes = bx * V;  // one (channel vector, element) pair per lane; by >= V
  const int tid = ty * bx + tx;
#pragma unroll
  for (int k = 0; k < 9; ++k) {
#pragma unroll
    for (int j = 0; j < V; ++j) red[tid * V + j] = acc[k][j];
    __syncthreads();
    if (tid < lanes) {
      float sum = 0.f;
      for (int row = 0; row < by; ++row) sum += red[row * lanes + tid];
      const int c = static_cast<int>(blockIdx.x) * lanes + tid;
      if (c < C) partial[(static_cast<std::size_t>(blockIdx.y) * C + c) * 9 + k] = sum;
    }
    __syncthreads();
  }
}

template <typename T>
__global__ void backward_filter_finalize_kernel(const float* __restrict__ partial,
                                                T* __restrict__ dw, int count, int splits) {
  for (int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); i < count;
       i += static_cast<int>(gridDim.x * blockDim.x)) {
    float sum = 0.f;
    for (int sp = 0; sp < splits; ++sp) sum += partial[static_cast<std::size_t>(sp) * count + i];
    dw[i] = from_f32<T>(sum);
  }
}

bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0; }

// Vector width: 16 bytes of T when C allows it and every pointer is 16-byte aligned, else 1.
template <typename T>
bool use_vectors(int c, const void* a, const void* b, const void* d) {
  constexpr int V = 16 / static_cast<int>(sizeof(T));
  return c % V == 0 && aligned16(a) && aligned16(b) && aligned16(d);
}

// Backward filter grid: bx channel vectors (all of them up to 32) x by position lanes per
// block, splits slices of N*P*Q.
struct FilterPlan {
  int bx = 1, by = 1, grid_x = 1, splits = 1, per_split = 1;
};

FilterPlan plan_filter(const DepthwiseShape& s, int v) {
  FilterPlan f;
  const int cv_count = s.c / v;
  f.bx = cv_count < 32 ? cv_count : 32;
  f.by = static_cast<int>(kBlock) / f.bx;
  f.grid_x = (cv_count + f.bx - 1) / f.bx;
  const long long npq = static_cast<long long>(s.n) * s.p() * s.q();
  const long long max_splits =
      (npq + static_cast<long long>(f.by) * kMinPositionsPerThread - 1) /
      (static_cast<long long>(f.by) * kMinPositionsPerThread);
  long long splits = kTargetBlocks / f.grid_x;
  if (splits > max_splits) splits = max_splits;
  if (splits < 1) splits = 1;
  f.per_split = static_cast<int>((npq + splits - 1) / splits);
  f.splits = static_cast<int>((npq + f.per_split - 1) / f.per_split);
  return f;
}

template <typename T, int V>
void launch_forward(const T* x, const T* w, T* y, const DepthwiseShape& s, cudaStream_t stream) {
  const std::size_t items = static_cast<std::size_t>(s.n) * s.p() *
                            ((s.q() + kQt - 1) / kQt) * (s.c / V);
  const unsigned grid = grid_for(items, kBlock);
  if (s.stride == 1) {
    forward_kernel<T, V, 1><<<grid, kBlock, 0, stream>>>(x, w, y, s.n, s.h, s.w, s.c, s.p(), s.q());
  } else {
    forward_kernel<T, V, 2><<<grid, kBlock, 0, stream>>>(x, w, y, s.n, s.h, s.w, s.c, s.p(), s.q());
  }
}

template <typename T, int V>
void launch_backward_data(const T* dy, const T* w, T* dx, bool accumulate,
                          const DepthwiseShape& s, cudaStream_t stream) {
  const std::size_t items = static_cast<std::size_t>(s.n) * s.h *
                            ((s.w + kQt - 1) / kQt) * (s.c / V);
  const unsigned grid = grid_for(items, kBlock);
  if (s.stride == 1) {
    backward_data_kernel<T, V, 1><<<grid, kBlock, 0, stream>>>(dy, w, dx, accumulate, s.n, s.h,
                                                               s.w, s.c, s.p(), s.q());
  } else {
    backward_data_kernel<T, V, 2><<<grid, kBlock, 0, stream>>>(dy, w, dx, accumulate, s.n, s.h,
                                                               s.w, s.c, s.p(), s.q());
  }
}

template <typename T, int V>
void launch_backward_filter(const T* x, const T* dy, T* dw, float* partial,
                            const DepthwiseShape& s, cudaStream_t stream) {
  const FilterPlan f = plan_filter(s, V);
  const dim3 block(static_cast<unsigned>(f.bx), static_cast<unsigned>(f.by));
  const dim3 grid(static_cast<unsigned>(f.grid_x), static_cast<unsigned>(f.splits));
  if (s.stride == 1) {
    backward_filter_partial_kernel<T, V, 1><<<grid, block, 0, stream>>>(
        x, dy, partial, s.n, s.h, s.w, s.c, s.p(), s.q(), f.per_split);
  } else {
    backward_filter_partial_kernel<T, V, 2><<<grid, block, 0, stream>>>(
        x, dy, partial, s.n, s.h, s.w, s.c, s.p(), s.q(), f.per_split);
  }
  const int count = s.c * 9;
  backward_filter_finalize_kernel<T><<<grid_for(static_cast<std::size_t>(count), kBlock), kBlock,
                                       0, stream>>>(partial, dw, count, f.splits);
}

// The kernels decode indices in 32 bits, grid-stride steps included: every tensor must have at
// most 2^30 elements (MobileNetV2's largest at batch 256, 256x112x112x96, has 3.1e8).
void check_shape(const DepthwiseShape& s) {
  const long long elements = static_cast<long long>(s.n) * s.c * s.h * s.w;
  if (s.n < 1 || s.c < 1 || s.h < 1 || s.w < 1 || (s.stride != 1 && s.stride != 2) ||
      elements > (1ll << 30)) {
    throw Error(ErrorKind::runtime, "depthwise: unsupported shape " + std::to_string(s.n) + "x" +
                                        std::to_string(s.c) + "x" + std::to_string(s.h) + "x" +
                                        std::to_string(s.w) + " stride " +
                                        std::to_string(s.stride));
  }
}

}  // namespace

bool depthwise_supported(int in_channels, int out_channels, int groups, int kernel_h,
                         int kernel_w, int stride_h, int stride_w, int pad_h, int pad_w,
                         int dil_h, int dil_w, bool nhwc) {
  return nhwc && groups == in_channels && out_channels == in_channels && kernel_h == 3 &&
         kernel_w == 3 && stride_h == stride_w && (stride_h == 1 || stride_h == 2) &&
         pad_h == 1 && pad_w == 1 && dil_h == 1 && dil_w == 1;
}

void depthwise_forward(const void* x, const void* w, void* y, const DepthwiseShape& s,
                       ElementType t, cudaStream_t stream) {
  check_shape(s);
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    constexpr int V = 16 / static_cast<int>(sizeof(T));
    const T* xp = static_cast<const T*>(x);
    const T* wp = static_cast<const T*>(w);
    T* yp = static_cast<T*>(y);
    if (use_vectors<T>(s.c, x, w, y)) {
      launch_forward<T, V>(xp, wp, yp, s, stream);
    } else {
      launch_forward<T, 1>(xp, wp, yp, s, stream);
    }
  });
  GB_CHECK_LAUNCH();
}

void depthwise_backward_data(const void* dy, const void* w, void* dx, bool accumulate,
                             const DepthwiseShape& s, ElementType t, cudaStream_t stream) {
  check_shape(s);
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    constexpr int V = 16 / static_cast<int>(sizeof(T));
    const T* dyp = static_cast<const T*>(dy);
    const T* wp = static_cast<const T*>(w);
    T* dxp = static_cast<T*>(dx);
    if (use_vectors<T>(s.c, dy, w, dx)) {
      launch_backward_data<T, V>(dyp, wp, dxp, accumulate, s, stream);
    } else {
      launch_backward_data<T, 1>(dyp, wp, dxp, accumulate, s, stream);
    }
  });
  GB_CHECK_LAUNCH();
}

std::size_t depthwise_backward_filter_workspace(const DepthwiseShape& s) {
  check_shape(s);
  // The larger of the two possible plans, so the answer does not depend on pointer alignment.
  std::size_t most = 0;
  for (int v : {1, 4, 8}) {
    if (s.c % v != 0) continue;
    const std::size_t b =
        static_cast<std::size_t>(plan_filter(s, v).splits) * s.c * 9 * sizeof(float);
    most = b > most ? b : most;
  }
  return most;
}

void depthwise_backward_filter(const void* x, const void* dy, void* dw, void* workspace,
                               std::size_t workspace_bytes, const DepthwiseShape& s, ElementType t,
                               cudaStream_t stream) {
  check_shape(s);
  if (workspace_bytes < depthwise_backward_filter_workspace(s) || !aligned16(workspace)) {
    throw Error(ErrorKind::runtime, "depthwise backward filter: workspace of " +
                                        std::to_string(workspace_bytes) +
                                        " B is too small or not 16-byte aligned");
  }
  float* partial = static_cast<float*>(workspace);
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    constexpr int V = 16 / static_cast<int>(sizeof(T));
    const T* xp = static_cast<const T*>(x);
    const T* dyp = static_cast<const T*>(dy);
    T* dwp = static_cast<T*>(dw);
    if (use_vectors<T>(s.c, x, dy, dy)) {
      launch_backward_filter<T, V>(xp, dyp, dwp, partial, s, stream);
    } else {
      launch_backward_filter<T, 1>(xp, dyp, dwp, partial, s, stream);
    }
  });
  GB_CHECK_LAUNCH();
}

}  // namespace gb::nn
