// nn/depthwise.hpp: the engine's own 3x3 depthwise convolutions (depthwise.cu), an opt-in
// alternative to cuDNN's legacy API (GPUBASE_NN_DEPTHWISE=own, read by conv.cpp).
//
// Scope: channel multiplier 1 (groups == C_in == C_out), kernel 3x3, stride 1 or 2, padding 1,
// dilation 1, NHWC activations, f32/f16/bf16 storage with FP32 accumulation. Weights are [C][9]
// (k = r * 3 + s): the engine's KRSC and KCRS orders coincide when C/groups == 1.
// All launchers are asynchronous on `stream`, allocate nothing and never synchronise, so they
// are CUDA-graph capturable; they check the launch.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>

#include "nn/tensor.hpp"

namespace gb::nn {

struct DepthwiseShape {
  int n = 0, c = 0, h = 0, w = 0;  // input x: N x H x W x C
  int stride = 1;                  // output P x Q = window_out(H|W, 3, stride, 1)
  int p() const { return (h - 1) / stride + 1; }
  int q() const { return (w - 1) / stride + 1; }
};

// Whether the own kernels cover this convolution (see the scope above).
bool depthwise_supported(int in_channels, int out_channels, int groups, int kernel_h,
                         int kernel_w, int stride_h, int stride_w, int pad_h, int pad_w,
                         int dil_h, int dil_w, bool nhwc);

// y = conv(x, w); y is overwritten.
void depthwise_forward(const void* x, const void* w, void* y, const DepthwiseShape& s,
                       ElementType t, cudaStream_t stream);

// dx = conv_transpose(dy, w), or dx += that when accumulate (cuDNN's beta = 1).
void depthwise_backward_data(const void* dy, const void* w, void* dx, bool accumulate,
                             const DepthwiseShape& s, ElementType t, cudaStream_t stream);

// FP32 scratch bytes depthwise_backward_filter needs for this shape (per-block partial sums).
std::size_t depthwise_backward_filter_workspace(const DepthwiseShape& s);

// dw[c][k] = sum over n, p, q of dy * x (FP32), written (not accumulated) in type t.
// workspace: at least depthwise_backward_filter_workspace(s) bytes, 16-byte aligned.
void depthwise_backward_filter(const void* x, const void* dy, void* dw, void* workspace,
                               std::size_t workspace_bytes, const DepthwiseShape& s, ElementType t,
                               cudaStream_t stream);

}  // namespace gb::nn
