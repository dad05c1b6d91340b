// nnref/conv.cpp: direct convolution loops. Per output (or input) plane a double accumulator is
// filled by walking (channel, r, s) and, inside, only the output rows/columns whose input tap is
// in bounds, so the innermost loop is a branch-free run over contiguous memory.
// Napkin math: N=2, C=K=64, 14x14, 3x3 is 2*64*64*196*9 = 14.5 M multiply-adds, a few ms here.
#include "nnref/conv.hpp"

#include <algorithm>
#include <vector>

namespace gb::nnref {
namespace {

// Output positions o in [lo, hi) whose input index o*stride - pad + offset lies in [0, in_len).
struct Range {
  int lo, hi;
};
Range valid_outputs(int out_len, int in_len, int stride, int pad, int offset) {
  int lo = 0;
  while (lo < out_len && lo * stride - pad + offset < 0) ++lo;
  int hi = out_len;
  while (hi > lo && (hi - 1) * stride - pad + offset >= in_len) --hi;
  return {lo, hi};
}

void check_params(const ConvParams& p, const char* where) {
  require(p.stride_h >= 1 && p.stride_w >= 1, where, "stride must be >= 1");
  require(p.dil_h >= 1 && p.dil_w >= 1, where, "dilation must be >= 1");
  require(p.pad_h >= 0 && p.pad_w >= 0, where, "padding must be >= 0");
  require(p.groups >= 1, where, "groups must be >= 1");
}

// Checks x/w/groups agreement: C % groups == 0, K % groups == 0, w.c == C/groups.
void check_channels(int in_channels, const Tensor& w, const ConvParams& p, const char* where) {
  require(in_channels % p.groups == 0, where, "input channels not divisible by groups");
  require(w.n % p.groups == 0, where, "output channels not divisible by groups");
  require(w.c == in_channels / p.groups, where,
          "filter " + shape_string(w) + " does not match " + std::to_string(in_channels) +
              " input channels in " + std::to_string(p.groups) + " groups");
}

}  // namespace

int conv_out_size(int in, int kernel, int stride, int pad, int dil) {
  require(stride >= 1 && dil >= 1 && kernel >= 1 && pad >= 0, "conv_out_size", "bad parameters");
  const int span = dil * (kernel - 1) + 1;
  const int padded = in + 2 * pad;
  require(
      padded >= span, "conv_out_size",
      "kernel span " + std::to_string(span) + " exceeds padded input " + std::to_string(padded));
  return (padded - span) / stride + 1;
}

Tensor conv2d_forward(const Tensor& x, const Tensor& w, const ConvParams& p) {
  const char* where = "conv2d_forward";
  check_params(p, where);
  check_channels(x.c, w, p, where);
  const int N = x.n, H = x.h, W = x.w, K = w.n, R = w.h, S = w.w;
  const int Cg = x.c / p.groups, Kg = K / p.groups;
  const int P = conv_out_size(H, R, p.stride_h, p.pad_h, p.dil_h);
  const int Q = conv_out_size(W, S, p.stride_w, p.pad_w, p.dil_w);
  Tensor y(N, K, P, Q);
  std::vector<double> acc(static_cast<std::size_t>(P) * Q);
  for (int n = 0; n < N; ++n) {
    for (int k = 0; k < K; ++k) {
      const int g = k / Kg;
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int cg = 0; cg < Cg; ++cg) {
        const float* xp = &x.v[x.index(n, g * Cg + cg, 0, 0)];
        for (int r = 0; r < R; ++r) {
          const Range rp = valid_outputs(P, H, p.stride_h, p.pad_h, r * p.dil_h);
          for (int s = 0; s < S; ++s) {
            const Range rq = valid_outputs(Q, W, p.stride_w, p.pad_w, s * p.dil_w);
            const double wv = w.at(k, cg, r, s);
            for (int op = rp.lo; op < rp.hi; ++op) {
              const float* row = xp + (op * p.stride_h - p.pad_h + r * p.dil_h) * W;
              double* out = &acc[static_cast<std::size_t>(op) * Q];
              for (int oq = rq.lo; oq < rq.hi; ++oq) {
                out[oq] += wv * row[oq * p.stride_w - p.pad_w + s * p.dil_w];
              }
            }
          }
        }
      }
      float* yp = &y.v[y.index(n, k, 0, 0)];
      for (std::size_t i = 0; i < acc.size(); ++i) yp[i] = static_cast<float>(acc[i]);
    }
  }
  return y;
}

Tensor conv2d_backward_data(const Tensor& dy, const Tensor& w, const ConvParams& p, int in_h,
                            int in_w) {
  const char* where = "conv2d_backward_data";
  check_params(p, where);
  const int C = w.c * p.groups;
  check_channels(C, w, p, where);
  const int N = dy.n, H = in_h, W = in_w, K = w.n, R = w.h, S = w.w;
  const int Cg = w.c, Kg = K / p.groups;
  const int P = conv_out_size(H, R, p.stride_h, p.pad_h, p.dil_h);
  const int Q = conv_out_size(W, S, p.stride_w, p.pad_w, p.dil_w);
  require(dy.c == K && dy.h == P && dy.w == Q, where,
          "dy " + shape_string(dy) + " does not match the output size of the convolution");
  Tensor dx(N, C, H, W);
  std::vector<double> acc(static_cast<std::size_t>(H) * W);
  for (int n = 0; n < N; ++n) {
    for (int c = 0; c < C; ++c) {
      const int g = c / Cg, cg = c % Cg;
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int kg = 0; kg < Kg; ++kg) {
        const int k = g * Kg + kg;
        const float* dyp = &dy.v[dy.index(n, k, 0, 0)];
        for (int r = 0; r < R; ++r) {
          const Range rp = valid_outputs(P, H, p.stride_h, p.pad_h, r * p.dil_h);
          for (int s = 0; s < S; ++s) {
            const Range rq = valid_outputs(Q, W, p.stride_w, p.pad_w, s * p.dil_w);
            const double wv = w.at(k, cg, r, s);
            for (int op = rp.lo; op < rp.hi; ++op) {
              double* row =
                  &acc[static_cast<std::size_t>(op * p.stride_h - p.pad_h + r * p.dil_h) * W];
              const float* g_row = dyp + static_cast<std::size_t>(op) * Q;
              for (int oq = rq.lo; oq < rq.hi; ++oq) {
                row[oq * p.stride_w - p.pad_w + s * p.dil_w] += wv * g_row[oq];
              }
            }
          }
        }
      }
      float* dxp = &dx.v[dx.index(n, c, 0, 0)];
      for (std::size_t i = 0; i < acc.size(); ++i) dxp[i] = static_cast<float>(acc[i]);
    }
  }
  return dx;
}

Tensor conv2d_backward_filter(const Tensor& x, const Tensor& dy, const ConvParams& p, int kernel_h,
                              int kernel_w) {
  const char* where = "conv2d_backward_filter";
  check_params(p, where);
  const int N = x.n, C = x.c, H = x.h, W = x.w, K = dy.c, R = kernel_h, S = kernel_w;
  require(C % p.groups == 0 && K % p.groups == 0, where, "channels not divisible by groups");
  const int Cg = C / p.groups, Kg = K / p.groups;
  const int P = conv_out_size(H, R, p.stride_h, p.pad_h, p.dil_h);
  const int Q = conv_out_size(W, S, p.stride_w, p.pad_w, p.dil_w);
  require(dy.n == N && dy.h == P && dy.w == Q, where,
          "dy " + shape_string(dy) + " does not match x " + shape_string(x));
  Tensor dw(K, Cg, R, S);
  for (int k = 0; k < K; ++k) {
    const int g = k / Kg;
    for (int cg = 0; cg < Cg; ++cg) {
      for (int r = 0; r < R; ++r) {
        const Range rp = valid_outputs(P, H, p.stride_h, p.pad_h, r * p.dil_h);
        for (int s = 0; s < S; ++s) {
          const Range rq = valid_outputs(Q, W, p.stride_w, p.pad_w, s * p.dil_w);
          double sum = 0.0;
          for (int n = 0; n < N; ++n) {
            const float* xp = &x.v[x.index(n, g * Cg + cg, 0, 0)];
            const float* dyp = &dy.v[dy.index(n, k, 0, 0)];
            for (int op = rp.lo; op < rp.hi; ++op) {
              const float* row = xp + (op * p.stride_h - p.pad_h + r * p.dil_h) * W;
              const float* g_row = dyp + static_cast<std::size_t>(op) * Q;
              for (int oq = rq.lo; oq < rq.hi; ++oq) {
                sum +=
                    static_cast<double>(g_row[oq]) * row[oq * p.stride_w - p.pad_w + s * p.dil_w];
              }
            }
          }
          dw.at(k, cg, r, s) = static_cast<float>(sum);
        }
      }
    }
  }
  return dw;
}

}  // namespace gb::nnref
