// nn/conv.cpp: 2-D convolution (grouped and depthwise through the descriptor's group count) on
// cuDNN's legacy API: forward, backward data, backward filter.
//
// Algorithms are chosen once per problem (shapes, strides, groups, type, layout, precision) at
// setup and cached in the Context, so ResNet-50's 53 convolutions search ~25 distinct problems.
// cudnnFind*AlgorithmEx measures every algorithm on the layer's own buffers within the scratch
// workspace (the fastest that runs wins); Context::find_algorithms = false asks the heuristic
// (cudnnGet*_v7) instead. Math: FP32 = CUDNN_FMA_MATH (no tensor cores, no TF32; results from a
// tensor-op math type are rejected); TF32 = CUDNN_DEFAULT_MATH on FP32 data (cuDNN may use TF32
// tensor cores); FP16/BF16 = CUDNN_TENSOR_OP_MATH with FP32 accumulation. As PyTorch does, each
// direction gets its own descriptor carrying the math type its chosen algorithm reported.
//
// GPUBASE_NN_DEPTHWISE=own (read when a layer is made) sends 3x3 depthwise convolutions in NHWC
// to the engine's own kernels (depthwise.hpp) instead of cuDNN; other shapes keep cuDNN.
#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/error.hpp"
#include "nn/cudnn_desc.hpp"
#include "nn/depthwise.hpp"
#include "nn/network.hpp"

namespace gb::nn {
namespace {

const float kOne = 1.f, kZero = 0.f;

cudnnMathType_t math_for(Precision p) {
  switch (p) {
    case Precision::fp32: return CUDNN_FMA_MATH;
    case Precision::tf32: return CUDNN_DEFAULT_MATH;
    case Precision::fp16:
    case Precision::bf16: return CUDNN_TENSOR_OP_MATH;
  }
  return CUDNN_FMA_MATH;
}

bool tensor_op(cudnnMathType_t m) {
  return m == CUDNN_TENSOR_OP_MATH || m == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
}

// The first result (cuDNN sorts by time / heuristic rank) that ran, fits the workspace and, in
// FP32, does not use tensor cores.
template <typename Perf>
AlgoChoice pick(const Perf* perf, int count, std::size_t max_ws, Precision p, const char* what,
                const std::string& key, cudnnMathType_t* math) {
  for (int i = 0; i < count; ++i) {
    if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > max_ws) continue;
    if (p == Precision::fp32 && tensor_op(perf[i].mathType)) continue;
    if (p != Precision::fp32) *math = perf[i].mathType;
    return AlgoChoice{static_cast<int>(perf[i].algo), perf[i].memory};
  }
  throw Error(ErrorKind::runtime, std::string("cuDNN offers no ") + what +
                                      " algorithm that fits a " + std::to_string(max_ws) +
                                      "-byte workspace for " + key);
}

ConvDesc make_conv_desc(const ConvSpec& s, cudnnMathType_t math) {
  cudnnConvolutionDescriptor_t d{};
  GB_CHECK_CUDNN(cudnnCreateConvolutionDescriptor(&d));
  ConvDesc owner(d);
  GB_CHECK_CUDNN(cudnnSetConvolution2dDescriptor(d, s.pad_h, s.pad_w, s.stride_h, s.stride_w,
                                                 s.dil_h, s.dil_w, CUDNN_CROSS_CORRELATION,
                                                 CUDNN_DATA_FLOAT));
  GB_CHECK_CUDNN(cudnnSetConvolutionGroupCount(d, s.groups));
  GB_CHECK_CUDNN(cudnnSetConvolutionMathType(d, math));
  return owner;
}

bool own_depthwise_requested() {
  const char* v = std::getenv("GPUBASE_NN_DEPTHWISE");
  return v != nullptr && std::strcmp(v, "own") == 0;
}

class Conv final : public Layer {
 public:
  Conv(const ConvSpec& spec, int weight_id)
      : spec_(spec), w_(weight_id), own_requested_(own_depthwise_requested()) {}

  std::string describe() const override {
    const Shape& x = inputs[0]->shape;
    if (own_) {
      return "conv " + x.to_string() + " -> " + output->shape.to_string() + " k3x3 s" +
             std::to_string(spec_.stride_h) + " g" + std::to_string(spec_.groups) +
             " (own depthwise), workspace " + std::to_string(own_workspace_) + " B";
    }
    return "conv " + x.to_string() + " -> " + output->shape.to_string() + " k" +
           std::to_string(spec_.kernel_h) + "x" + std::to_string(spec_.kernel_w) + " s" +
           std::to_string(spec_.stride_h) + " g" + std::to_string(spec_.groups) + " algos fwd " +
           std::to_string(fwd_.algo) + " bwd-data " +
           (inputs[0]->needs_grad ? std::to_string(bwd_data_.algo) : std::string("-")) +
           " bwd-filter " + std::to_string(bwd_filter_.algo) + ", workspace " +
           std::to_string(std::max({fwd_.workspace, bwd_data_.workspace, bwd_filter_.workspace})) +
           " B";
  }

  std::size_t setup(Context& ctx) override {
    const Value* x = inputs[0];
    const Value* y = output;
    ParamStore& ps = *ctx.params;
    const ParamInfo& wi = ps.info(w_);
    const DType wt = ps.compute_dtype(w_);
    xd_ = TensorDesc::create(x->shape, x->dtype, x->nhwc);
    yd_ = TensorDesc::create(y->shape, y->dtype, y->nhwc);
    wd_ = FilterDesc::create(wi.shape.n, wi.shape.c, wi.shape.h, wi.shape.w, wt, wi.krsc);
    const cudnnMathType_t math = math_for(ctx.precision);
    fwd_desc_ = make_conv_desc(spec_, math);
    int n = 0, c = 0, h = 0, w = 0;
    GB_CHECK_CUDNN(cudnnGetConvolution2dForwardOutputDim(fwd_desc_.get(), xd_.get(), wd_.get(),
                                                         &n, &c, &h, &w));
    if (Shape{n, c, h, w} != y->shape) {
      throw Error(ErrorKind::runtime, "conv: cuDNN output " + Shape{n, c, h, w}.to_string() +
                                          " differs from the planned " + y->shape.to_string());
    }
    own_ = own_requested_ && x->dtype == wt && y->dtype == wt &&
           depthwise_supported(x->shape.c, spec_.out_channels, spec_.groups, spec_.kernel_h,
                               spec_.kernel_w, spec_.stride_h, spec_.stride_w, spec_.pad_h,
                               spec_.pad_w, spec_.dil_h, spec_.dil_w, x->nhwc);
    if (own_) {
      own_shape_ = DepthwiseShape{x->shape.n, x->shape.c, x->shape.h, x->shape.w, spec_.stride_h};
      own_workspace_ = depthwise_backward_filter_workspace(own_shape_);
      return own_workspace_;
    }
    const std::string key = x->shape.to_string() + "|" + wi.shape.to_string() + "|s" +
                            std::to_string(spec_.stride_h) + "," + std::to_string(spec_.stride_w) +
                            "|p" + std::to_string(spec_.pad_h) + "," +
                            std::to_string(spec_.pad_w) + "|d" + std::to_string(spec_.dil_h) +
                            "," + std::to_string(spec_.dil_w) + "|g" +
                            std::to_string(spec_.groups) + "|" + dtype_name(x->dtype) +
                            (x->nhwc ? "|nhwc|" : "|nchw|") + std::string(to_string(ctx.precision));
    cudnnHandle_t h_ = ctx.cudnn;
    void* xp = x->data;
    void* yp = y->data;
    void* wp = ps.weight(w_);
    void* dwp = ps.grad(w_);
    constexpr int kMax = 16;

    cudnnMathType_t fm = math;
    fwd_ = choose(ctx, key + "|fwd", &fm, [&](AlgoChoice& out, cudnnMathType_t* m) {
      std::array<cudnnConvolutionFwdAlgoPerf_t, kMax> perf{};
      int got = 0;
      if (ctx.find_algorithms) {
        GB_CHECK_CUDNN(cudnnFindConvolutionForwardAlgorithmEx(
            h_, xd_.get(), xp, wd_.get(), wp, fwd_desc_.get(), yd_.get(), yp, kMax, &got,
            perf.data(), ctx.workspace, ctx.workspace_bytes));
      } else {
        GB_CHECK_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7(
            h_, xd_.get(), wd_.get(), fwd_desc_.get(), yd_.get(), kMax, &got, perf.data()));
      }
      out = pick(perf.data(), got, ctx.workspace_bytes, ctx.precision, "forward", key, m);
    });
    GB_CHECK_CUDNN(cudnnSetConvolutionMathType(fwd_desc_.get(), fm));

    if (x->needs_grad) {
      cudnnMathType_t bm = math;
      bwd_data_desc_ = make_conv_desc(spec_, math);
      void* dxp = x->grad;
      bwd_data_ = choose(ctx, key + "|bwd_data", &bm, [&](AlgoChoice& out, cudnnMathType_t* m) {
        std::array<cudnnConvolutionBwdDataAlgoPerf_t, kMax> perf{};
        int got = 0;
        if (ctx.find_algorithms) {
          GB_CHECK_CUDNN(cudnnFindConvolutionBackwardDataAlgorithmEx(
              h_, wd_.get(), wp, yd_.get(), yp, bwd_data_desc_.get(), xd_.get(), dxp, kMax, &got,
              perf.data(), ctx.workspace, ctx.workspace_bytes));
        } else {
          GB_CHECK_CUDNN(cudnnGetConvolutionBackwardDataAlgorithm_v7(
              h_, wd_.get(), yd_.get(), bwd_data_desc_.get(), xd_.get(), kMax, &got,
              perf.data()));
        }
        out = pick(perf.data(), got, ctx.workspace_bytes, ctx.precision, "backward-data", key,
                   m);
      });
      GB_CHECK_CUDNN(cudnnSetConvolutionMathType(bwd_data_desc_.get(), bm));
    }

    cudnnMathType_t wm = math;
    bwd_filter_desc_ = make_conv_desc(spec_, math);
    bwd_filter_ = choose(ctx, key + "|bwd_filter", &wm, [&](AlgoChoice& out, cudnnMathType_t* m) {
      std::array<cudnnConvolutionBwdFilterAlgoPerf_t, kMax> perf{};
      int got = 0;
      if (ctx.find_algorithms) {
        GB_CHECK_CUDNN(cudnnFindConvolutionBackwardFilterAlgorithmEx(
            h_, xd_.get(), xp, yd_.get(), yp, bwd_filter_desc_.get(), wd_.get(), dwp, kMax, &got,
            perf.data(), ctx.workspace, ctx.workspace_bytes));
      } else {
        GB_CHECK_CUDNN(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
            h_, xd_.get(), yd_.get(), bwd_filter_desc_.get(), wd_.get(), kMax, &got,
            perf.data()));
      }
      out = pick(perf.data(), got, ctx.workspace_bytes, ctx.precision, "backward-filter", key, m);
    });
    GB_CHECK_CUDNN(cudnnSetConvolutionMathType(bwd_filter_desc_.get(), wm));
    return std::max({fwd_.workspace, bwd_data_.workspace, bwd_filter_.workspace});
  }

  void forward(Context& ctx, bool) override {
    if (own_) {
      depthwise_forward(inputs[0]->data, ctx.params->weight(w_), output->data, own_shape_,
                        output->dtype, ctx.stream);
      return;
    }
    GB_CHECK_CUDNN(cudnnConvolutionForward(
        ctx.cudnn, &kOne, xd_.get(), inputs[0]->data, wd_.get(), ctx.params->weight(w_),
        fwd_desc_.get(), static_cast<cudnnConvolutionFwdAlgo_t>(fwd_.algo), ctx.workspace,
        ctx.workspace_bytes, &kZero, yd_.get(), output->data));
  }

  void backward(Context& ctx) override {
    Value* x = inputs[0];
    if (own_) {
      if (x->needs_grad) {
        depthwise_backward_data(output->grad, ctx.params->weight(w_), x->grad, accumulate[0],
                                own_shape_, x->dtype, ctx.stream);
      }
      depthwise_backward_filter(x->data, output->grad, ctx.params->grad(w_), ctx.workspace,
                                ctx.workspace_bytes, own_shape_, x->dtype, ctx.stream);
      return;
    }
    if (x->needs_grad) {
      GB_CHECK_CUDNN(cudnnConvolutionBackwardData(
          ctx.cudnn, &kOne, wd_.get(), ctx.params->weight(w_), yd_.get(), output->grad,
          bwd_data_desc_.get(), static_cast<cudnnConvolutionBwdDataAlgo_t>(bwd_data_.algo),
          ctx.workspace, ctx.workspace_bytes, accumulate[0] ? &kOne : &kZero, xd_.get(),
          x->grad));
    }
    GB_CHECK_CUDNN(cudnnConvolutionBackwardFilter(
        ctx.cudnn, &kOne, xd_.get(), x->data, yd_.get(), output->grad, bwd_filter_desc_.get(),
        static_cast<cudnnConvolutionBwdFilterAlgo_t>(bwd_filter_.algo), ctx.workspace,
        ctx.workspace_bytes, &kZero, wd_.get(), ctx.params->grad(w_)));
  }

 private:
  // Cached choice (with its math type) for `key`, or search() and remember the result.
  template <typename Search>
  static AlgoChoice choose(Context& ctx, const std::string& key, cudnnMathType_t* math,
                           Search&& search) {
    const std::string math_key = key + "|math";
    auto it = ctx.algo_cache.find(key);
    if (it != ctx.algo_cache.end()) {
      *math = static_cast<cudnnMathType_t>(ctx.algo_cache[math_key].algo);
      return it->second;
    }
    AlgoChoice c;
    search(c, math);
    ctx.algo_cache[key] = c;
    ctx.algo_cache[math_key] = AlgoChoice{static_cast<int>(*math), 0};
    return c;
  }

  ConvSpec spec_;
  int w_;
  bool own_requested_;  // GPUBASE_NN_DEPTHWISE=own when the layer was made
  bool own_ = false;    // this layer runs on the own depthwise kernels (setup decides)
  DepthwiseShape own_shape_;
  std::size_t own_workspace_ = 0;
  TensorDesc xd_, yd_;
  FilterDesc wd_;
  ConvDesc fwd_desc_, bwd_data_desc_, bwd_filter_desc_;
  AlgoChoice fwd_, bwd_data_, bwd_filter_;
};

}  // namespace

std::unique_ptr<Layer> make_conv(const ConvSpec& spec, int weight_id) {
  return std::make_unique<Conv>(spec, weight_id);
}

}  // namespace gb::nn
