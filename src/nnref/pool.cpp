// nnref/pool.cpp: pooling loops, one window at a time (the references are for correctness; the
// shapes tested are small).
#include "nnref/pool.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace gb::nnref {
namespace {

void check_pool(const PoolParams& p, const char* where) {
  require(p.kernel_h >= 1 && p.kernel_w >= 1, where, "kernel must be >= 1");
  require(p.stride_h >= 1 && p.stride_w >= 1, where, "stride must be >= 1");
  require(p.pad_h >= 0 && p.pad_w >= 0 && p.pad_h <= p.kernel_h / 2 && p.pad_w <= p.kernel_w / 2,
          where, "padding must be between 0 and half the kernel size");
}

// Index of the first maximum (row-major) of window (oh, ow) of plane xp; NaN wins, as in PyTorch.
std::size_t window_argmax(const float* xp, int H, int W, int oh, int ow, const PoolParams& p) {
  const int h0 = oh * p.stride_h - p.pad_h, w0 = ow * p.stride_w - p.pad_w;
  std::size_t best = 0;
  float best_v = -std::numeric_limits<float>::infinity();
  bool found = false;
  for (int ih = std::max(h0, 0); ih < std::min(h0 + p.kernel_h, H); ++ih) {
    for (int iw = std::max(w0, 0); iw < std::min(w0 + p.kernel_w, W); ++iw) {
      const std::size_t i = static_cast<std::size_t>(ih) * W + iw;
      const float v = xp[i];
      if (!found || v > best_v || (std::isnan(v) && !std::isnan(best_v))) {
        best = i;
        best_v = v;
        found = true;
      }
    }
  }
  return best;  // a window always holds a real element since pad <= kernel / 2
}

// PyTorch's divisor with count_include_pad: the window clipped to the padded input.
int avg_divisor(int H, int W, int oh, int ow, const PoolParams& p) {
  const int h0 = oh * p.stride_h - p.pad_h, w0 = ow * p.stride_w - p.pad_w;
  const int h1 = std::min(h0 + p.kernel_h, H + p.pad_h),
            w1 = std::min(w0 + p.kernel_w, W + p.pad_w);
  return (h1 - h0) * (w1 - w0);
}

}  // namespace

int pool_out_size(int in, int kernel, int stride, int pad) {
  require(kernel >= 1 && stride >= 1 && pad >= 0, "pool_out_size", "bad parameters");
  require(in + 2 * pad >= kernel, "pool_out_size", "kernel larger than the padded input");
  return (in + 2 * pad - kernel) / stride + 1;
}

Tensor maxpool2d_forward(const Tensor& x, const PoolParams& p) {
  check_pool(p, "maxpool2d_forward");
  const int P = pool_out_size(x.h, p.kernel_h, p.stride_h, p.pad_h);
  const int Q = pool_out_size(x.w, p.kernel_w, p.stride_w, p.pad_w);
  Tensor y(x.n, x.c, P, Q);
  for (int n = 0; n < x.n; ++n) {
    for (int c = 0; c < x.c; ++c) {
      const float* xp = &x.v[x.index(n, c, 0, 0)];
      for (int oh = 0; oh < P; ++oh) {
        for (int ow = 0; ow < Q; ++ow)
          y.at(n, c, oh, ow) = xp[window_argmax(xp, x.h, x.w, oh, ow, p)];
      }
    }
  }
  return y;
}

Tensor maxpool2d_backward(const Tensor& x, const Tensor& dy, const PoolParams& p) {
  const char* where = "maxpool2d_backward";
  check_pool(p, where);
  const int P = pool_out_size(x.h, p.kernel_h, p.stride_h, p.pad_h);
  const int Q = pool_out_size(x.w, p.kernel_w, p.stride_w, p.pad_w);
  require(dy.n == x.n && dy.c == x.c && dy.h == P && dy.w == Q, where,
          "dy " + shape_string(dy) + " does not match x " + shape_string(x));
  Tensor dx(x.n, x.c, x.h, x.w);
  for (int n = 0; n < x.n; ++n) {
    for (int c = 0; c < x.c; ++c) {
      const float* xp = &x.v[x.index(n, c, 0, 0)];
      float* dxp = &dx.v[dx.index(n, c, 0, 0)];
      for (int oh = 0; oh < P; ++oh) {
        for (int ow = 0; ow < Q; ++ow)
          dxp[window_argmax(xp, x.h, x.w, oh, ow, p)] += dy.at(n, c, oh, ow);
      }
    }
  }
  return dx;
}

Tensor avgpool2d_forward(const Tensor& x, const PoolParams& p) {
  check_pool(p, "avgpool2d_forward");
  const int P = pool_out_size(x.h, p.kernel_h, p.stride_h, p.pad_h);
  const int Q = pool_out_size(x.w, p.kernel_w, p.stride_w, p.pad_w);
  Tensor y(x.n, x.c, P, Q);
  for (int n = 0; n < x.n; ++n) {
    for (int c = 0; c < x.c; ++c) {
      for (int oh = 0; oh < P; ++oh) {
        for (int ow = 0; ow < Q; ++ow) {
          const int h0 = oh * p.stride_h - p.pad_h, w0 = ow * p.stride_w - p.pad_w;
          double sum = 0.0;
          for (int ih = std::max(h0, 0); ih < std::min(h0 + p.kernel_h, x.h); ++ih) {
            for (int iw = std::max(w0, 0); iw < std::min(w0 + p.kernel_w, x.w); ++iw) {
              sum += x.at(n, c, ih, iw);
            }
          }
          y.at(n, c, oh, ow) = static_cast<float>(sum / avg_divisor(x.h, x.w, oh, ow, p));
        }
      }
    }
  }
  return y;
}

Tensor avgpool2d_backward(const Tensor& dy, const PoolParams& p, int in_h, int in_w) {
  const char* where = "avgpool2d_backward";
  check_pool(p, where);
  const int P = pool_out_size(in_h, p.kernel_h, p.stride_h, p.pad_h);
  const int Q = pool_out_size(in_w, p.kernel_w, p.stride_w, p.pad_w);
  require(dy.h == P && dy.w == Q, where,
          "dy " + shape_string(dy) + " does not match the input size");
  Tensor dx(dy.n, dy.c, in_h, in_w);
  for (int n = 0; n < dy.n; ++n) {
    for (int c = 0; c < dy.c; ++c) {
      for (int oh = 0; oh < P; ++oh) {
        for (int ow = 0; ow < Q; ++ow) {
          const int h0 = oh * p.stride_h - p.pad_h, w0 = ow * p.stride_w - p.pad_w;
          const float g =
              dy.at(n, c, oh, ow) / static_cast<float>(avg_divisor(in_h, in_w, oh, ow, p));
          for (int ih = std::max(h0, 0); ih < std::min(h0 + p.kernel_h, in_h); ++ih) {
            for (int iw = std::max(w0, 0); iw < std::min(w0 + p.kernel_w, in_w); ++iw) {
              dx.at(n, c, ih, iw) += g;
            }
          }
        }
      }
    }
  }
  return dx;
}

Tensor global_avgpool_forward(const Tensor& x) {
  require(x.plane() > 0, "global_avgpool_forward", "empty plane");
  Tensor y(x.n, x.c, 1, 1);
  const std::size_t plane = x.plane();
  for (int n = 0; n < x.n; ++n) {
    for (int c = 0; c < x.c; ++c) {
      const float* xp = &x.v[x.index(n, c, 0, 0)];
      double sum = 0.0;
      for (std::size_t i = 0; i < plane; ++i) sum += xp[i];
      y.at(n, c, 0, 0) = static_cast<float>(sum / static_cast<double>(plane));
    }
  }
  return y;
}

Tensor global_avgpool_backward(const Tensor& dy, int in_h, int in_w) {
  require(dy.h == 1 && dy.w == 1, "global_avgpool_backward", "dy must be [N,C,1,1]");
  require(in_h >= 1 && in_w >= 1, "global_avgpool_backward", "empty plane");
  Tensor dx(dy.n, dy.c, in_h, in_w);
  const std::size_t plane = dx.plane();
  for (int n = 0; n < dy.n; ++n) {
    for (int c = 0; c < dy.c; ++c) {
      const float g = static_cast<float>(dy.at(n, c, 0, 0) / static_cast<double>(plane));
      float* dxp = &dx.v[dx.index(n, c, 0, 0)];
      for (std::size_t i = 0; i < plane; ++i) dxp[i] = g;
    }
  }
  return dx;
}

}  // namespace gb::nnref
