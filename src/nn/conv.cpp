// nn/conv.cpp: 2-D convolution (grouped and depthwise through the descriptor's group count) on
// cuDNN's legacy API: forward, backward data, backward filter.
//
// Algorithms are chosen once per problem (shapes, strides, groups, type, layout, precision) at
// setup and cached in the Context, so ResNet-50's 53 convolutions search ~25 distinct problems.
// Per direction, cudnnFind*AlgorithmEx lists the algorithms that run within the scratch
// workspace; the fastest four (six in FP32/TF32) of that list are then timed again here, several
// rounds each on the layer's own buffers, and the fastest wins (Find's figures carry 0.1-0.4 ms
// on top of the kernel, so short kernels rank by noise: one listed at 0.255 ms runs in 0.017). A
// timed launch gets the workspace a step will give it (Context::step_workspace_bytes, or more
// where the algorithm asks for more): some run 10x faster with more than the minimum they report.
// Some algorithms time well alone and badly inside a step; skipped_algo() rules those out
// (FP16/BF16 backward-filter algorithm 0 by default); GPUBASE_NN_CONV_SKIP="bwd_filter:0,fwd:1"
// replaces that list, per direction (fwd, bwd_data, bwd_filter).
// Context::find_algorithms = false asks the heuristic (cudnnGet*_v7) instead and takes its first.
// Math: FP32 = CUDNN_FMA_MATH (no tensor cores, no TF32; results from a tensor-op math type are
// rejected); TF32 = CUDNN_DEFAULT_MATH on FP32 data (cuDNN may use TF32 tensor cores); FP16/BF16
// = CUDNN_TENSOR_OP_MATH with FP32 accumulation. As PyTorch does, each direction gets its own
// descriptor carrying the math type its chosen algorithm reported.
//
// 3x3 depthwise convolutions in NHWC also have the engine's own kernels (depthwise.hpp) as a
// candidate in each direction, timed against cuDNN's (cuDNN's BF16 depthwise kernels are 5-20x
// slower). GPUBASE_NN_DEPTHWISE=own forces them where they apply, =cudnn rules them out (read
// when a layer is made). GPUBASE_NN_CONV_ALGO=verbose prints every search to stderr.
//
// FP32 (no TF32) also races cuDNN's backend-API engine configurations (conv_engines.hpp), the
// candidates PyTorch's cudnn.benchmark draws from: the heuristics' (mode A, then the fallback
// list) execution plans that use no tensor cores and fit the scratch workspace, at most eight per
// direction, timed with the others. They reach engines and knob settings the legacy enums do
// not. A winning plan is kept in Context::conv_plans (shared by layers with the same problem)
// and launched with cudnnBackendExecute; its workspace counts like an algorithm's. A plan has
// beta baked in, so backward data builds its plans with the beta the layer needs (1 where it adds
// into a gradient another consumer wrote) and caches that choice under a key of its own.
// GPUBASE_NN_CONV_ENGINES (read when a layer is made): "1" (the default, kDefaultEngineMode)
// offers them, "0" does not, "only" offers them instead of the legacy algorithms (these where no
// plan is listed), for tests and diagnosis. Not offered with GPUBASE_NN_CONV_ALGO=heuristic,
// which times nothing, except with "only" (then the heuristics' first plan is taken).
#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "gpu/cuda_raii.hpp"
#include "nn/conv_engines.hpp"
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

// A cuDNN algorithm (or the own depthwise kernel, kOwnKernel, or backend engine plan i of the
// direction's list, kEngineBase - i) worth timing for one direction.
constexpr int kOwnKernel = -1;
constexpr int kEngineBase = -100;
constexpr std::size_t kMaxEnginePlans = 8;
// cuDNN's fastest few are re-timed: four, and six in FP32/TF32, whose kernels run long enough
// (0.5-3 ms at batch 256) that Find ranks them more closely and extra timing costs little.
std::size_t timed_candidates(Precision p) {
  return p == Precision::fp32 || p == Precision::tf32 ? 6 : 4;
}
struct Candidate {
  int algo = 0;
  std::size_t memory = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  float listed_ms = -1.f;  // cuDNN's own figure (Find's measurement; -1 for the heuristic)
  std::shared_ptr<const ConvEnginePlan> plan;  // set for a backend engine plan
};

std::string candidate_name(const Candidate& k) {
  if (k.plan) return k.plan->name();
  return k.algo == kOwnKernel ? std::string("own") : std::to_string(k.algo);
}

// cuDNN's results in its order (by time or heuristic rank) that ran, fit the workspace and, in
// FP32, do not use tensor cores; at most `limit`.
template <typename Perf>
std::vector<Candidate> usable(const Perf* perf, int count, std::size_t max_ws, Precision p,
                              std::size_t limit) {
  std::vector<Candidate> out;
  for (int i = 0; i < count && out.size() < limit; ++i) {
    if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > max_ws) continue;
    if (p == Precision::fp32 && tensor_op(perf[i].mathType)) continue;
    out.push_back(Candidate{static_cast<int>(perf[i].algo), perf[i].memory, perf[i].mathType,
                            perf[i].time});
  }
  return out;
}

// Milliseconds per launch of each candidate, timed on `stream`: one untimed round, then rounds
// that visit the candidates in turn (a clock still ramping up from idle favours none), the
// fastest round per candidate.
std::vector<float> time_candidates(cudaStream_t stream, std::size_t count,
                                   const std::function<void(std::size_t)>& launch) {
  constexpr int kRounds = 3;
  const gpu::Event start = gpu::Event::create(), stop = gpu::Event::create();
  std::vector<float> best(count, std::numeric_limits<float>::infinity());
  for (std::size_t i = 0; i < count; ++i) launch(i);
  for (int r = 0; r < kRounds; ++r) {
    for (std::size_t i = 0; i < count; ++i) {
      start.record(stream);
      launch(i);
      stop.record(stream);
      stop.synchronize();
      best[i] = std::min(best[i], gpu::Event::elapsed_ms(start, stop));
    }
  }
  return best;
}

// Whether `direction` ("|fwd", "|bwd_data", "|bwd_filter") rules out algo: the list in
// GPUBASE_NN_CONV_SKIP when set (even empty), else the default. By default FP16/BF16 rule out
// backward-filter algorithm 0: on MobileNetV2's 1x1 convolutions at 14x14 it times at 0.16 ms
// alone and takes 1.5-7.2 ms inside a training step (H200, cuDNN 9.14; bench/NOTES.md t4), and
// without it MobileNetV2 FP16 trains at 10,640 instead of 6,183 images/s, ResNet-50 unchanged.
bool skipped_algo(const char* direction, int algo, Precision p) {
  const char* v = std::getenv("GPUBASE_NN_CONV_SKIP");
  const bool reduced = p == Precision::fp16 || p == Precision::bf16;
  if (v == nullptr) v = reduced ? "bwd_filter:0" : "";
  const std::string list = std::string(",") + v + ",";
  return list.find("," + std::string(direction + 1) + ":" + std::to_string(algo) + ",") !=
         std::string::npos;
}

bool verbose_search() {
  const char* v = std::getenv("GPUBASE_NN_CONV_ALGO");
  return v != nullptr && std::strcmp(v, "verbose") == 0;
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

// GPUBASE_NN_DEPTHWISE: "own" forces the own kernels where they apply, "cudnn" rules them out;
// unset, they compete with cuDNN's algorithms in each direction.
enum class DepthwiseMode { timed, own, cudnn };
DepthwiseMode depthwise_mode() {
  const char* v = std::getenv("GPUBASE_NN_DEPTHWISE");
  if (v != nullptr && std::strcmp(v, "own") == 0) return DepthwiseMode::own;
  if (v != nullptr && std::strcmp(v, "cudnn") == 0) return DepthwiseMode::cudnn;
  return DepthwiseMode::timed;
}

// GPUBASE_NN_CONV_ENGINES: whether the backend API's engine plans compete in FP32 (see the top).
enum class EngineMode { off, on, only };
constexpr EngineMode kDefaultEngineMode = EngineMode::on;
EngineMode engine_mode() {
  const char* v = std::getenv("GPUBASE_NN_CONV_ENGINES");
  if (v == nullptr || *v == '\0') return kDefaultEngineMode;
  if (std::strcmp(v, "0") == 0) return EngineMode::off;
  if (std::strcmp(v, "1") == 0) return EngineMode::on;
  if (std::strcmp(v, "only") == 0) return EngineMode::only;
  throw Error(ErrorKind::usage,
              std::string("GPUBASE_NN_CONV_ENGINES: '") + v + "' is not 0, 1 or only");
}

std::string algo_name(const AlgoChoice& a, const std::shared_ptr<const ConvEnginePlan>& plan) {
  return candidate_name(Candidate{a.algo, a.workspace, CUDNN_DEFAULT_MATH, -1.f, plan});
}

class Conv final : public Layer {
 public:
  Conv(const ConvSpec& spec, int weight_id)
      : spec_(spec), w_(weight_id), depthwise_(depthwise_mode()), engines_(engine_mode()) {}

  std::string describe() const override {
    const Shape& x = inputs[0]->shape;
    return "conv " + x.to_string() + " -> " + output->shape.to_string() + " k" +
           std::to_string(spec_.kernel_h) + "x" + std::to_string(spec_.kernel_w) + " s" +
           std::to_string(spec_.stride_h) + " g" + std::to_string(spec_.groups) + " algos fwd " +
           algo_name(fwd_, fwd_plan_) + " bwd-data " +
           (inputs[0]->needs_grad ? algo_name(bwd_data_, bwd_data_plan_) : std::string("-")) +
           " bwd-filter " + algo_name(bwd_filter_, bwd_filter_plan_) + ", workspace " +
           std::to_string(std::max({fwd_.workspace, bwd_data_.workspace, bwd_filter_.workspace})) +
           " B";
  }

  std::size_t setup(Context& ctx) override {
    const Value* x = inputs[0];
    const Value* y = output;
    ParamStore& ps = *ctx.params;
    const ParamInfo& wi = ps.info(w_);
    const ElementType wt = ps.compute_dtype(w_);
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
    const bool own_fits = depthwise_ != DepthwiseMode::cudnn && x->dtype == wt &&
                          y->dtype == wt &&
                          depthwise_supported(x->shape.c, spec_.out_channels, spec_.groups,
                                              spec_.kernel_h, spec_.kernel_w, spec_.stride_h,
                                              spec_.stride_w, spec_.pad_h, spec_.pad_w,
                                              spec_.dil_h, spec_.dil_w, x->nhwc);
    Search search;
    search.key = x->shape.to_string() + "|" + wi.shape.to_string() + "|s" +
                 std::to_string(spec_.stride_h) + "," + std::to_string(spec_.stride_w) + "|p" +
                 std::to_string(spec_.pad_h) + "," + std::to_string(spec_.pad_w) + "|d" +
                 std::to_string(spec_.dil_h) + "," + std::to_string(spec_.dil_w) + "|g" +
                 std::to_string(spec_.groups) + "|" + dtype_name(x->dtype) +
                 (x->nhwc ? "|nhwc|" : "|nchw|") + std::string(to_string(ctx.precision));
    // Backend engine plans: FP32 only (tensor cores off), and only where candidates are timed.
    if (ctx.precision == Precision::fp32 &&
        (ctx.find_algorithms || engines_ == EngineMode::only)) {
      search.engines = engines_;
    }
    search.problem = ConvProblem{.x = x->shape,
                                 .w = wi.shape,
                                 .y = y->shape,
                                 .x_type = x->dtype,
                                 .w_type = wt,
                                 .y_type = y->dtype,
                                 .x_nhwc = x->nhwc,
                                 .y_nhwc = y->nhwc,
                                 .w_krsc = wi.krsc,
                                 .stride_h = spec_.stride_h,
                                 .stride_w = spec_.stride_w,
                                 .pad_h = spec_.pad_h,
                                 .pad_w = spec_.pad_w,
                                 .dil_h = spec_.dil_h,
                                 .dil_w = spec_.dil_w};
    if (own_fits) {
      own_shape_ = DepthwiseShape{x->shape.n, x->shape.c, x->shape.h, x->shape.w, spec_.stride_h};
      search.own = true;
      search.own_only = depthwise_ == DepthwiseMode::own;
    }
    cudnnHandle_t hd = ctx.cudnn;
    void* xp = x->data;
    void* yp = y->data;
    void* wp = ps.weight(w_);
    void* dwp = ps.grad(w_);
    void* ws = ctx.workspace;
    const std::size_t ws_bytes = ctx.workspace_bytes;
    // A timed launch gets what a step will give it: the step's workspace, or more if it asks.
    auto run_ws = [&](const Candidate& k) {
      return std::min(ws_bytes, std::max(k.memory, ctx.step_workspace_bytes));
    };
    constexpr int kMax = 16;

    cudnnMathType_t fm = math;
    search.what = "forward";
    search.dir = ConvDirection::forward;
    search.beta = 0.f;
    fwd_ = choose(ctx, search, "|fwd", &fm, &fwd_plan_, [&](std::vector<Candidate>& out) {
      std::array<cudnnConvolutionFwdAlgoPerf_t, kMax> perf{};
      int got = 0;
      if (ctx.find_algorithms) {
        GB_CHECK_CUDNN(cudnnFindConvolutionForwardAlgorithmEx(
            hd, xd_.get(), xp, wd_.get(), wp, fwd_desc_.get(), yd_.get(), yp, kMax, &got,
            perf.data(), ws, ws_bytes));
      } else {
        GB_CHECK_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7(
            hd, xd_.get(), wd_.get(), fwd_desc_.get(), yd_.get(), kMax, &got, perf.data()));
      }
      out = usable(perf.data(), got, ws_bytes, ctx.precision, timed_candidates(ctx.precision));
    }, [&](const Candidate& k) {
      if (k.plan) {
        k.plan->execute(hd, xp, wp, yp, ws);
        return;
      }
      if (k.algo == kOwnKernel) {
        depthwise_forward(xp, wp, yp, own_shape_, y->dtype, ctx.stream);
        return;
      }
      GB_CHECK_CUDNN(cudnnSetConvolutionMathType(fwd_desc_.get(), k.math));
      GB_CHECK_CUDNN(cudnnConvolutionForward(
          hd, &kOne, xd_.get(), xp, wd_.get(), wp, fwd_desc_.get(),
          static_cast<cudnnConvolutionFwdAlgo_t>(k.algo), ws, run_ws(k), &kZero, yd_.get(), yp));
    });
    GB_CHECK_CUDNN(cudnnSetConvolutionMathType(fwd_desc_.get(), fm));
    // An inference-only network never runs backward: no search for it (most of the setup).
    if (ctx.forward_only) return fwd_.workspace;

    if (x->needs_grad) {
      cudnnMathType_t bm = math;
      bwd_data_desc_ = make_conv_desc(spec_, math);
      void* dxp = x->grad;
      // Every candidate is timed with the beta a step uses: an engine plan has it baked in (a
      // layer that adds into dx gets plans built for beta 1), and adding reads dx as well.
      const bool add = accumulate[0];
      search.what = "backward-data";
      search.dir = ConvDirection::backward_data;
      search.beta = add ? 1.f : 0.f;
      bwd_data_ = choose(ctx, search, "|bwd_data", &bm, &bwd_data_plan_,
                         [&](std::vector<Candidate>& out) {
        std::array<cudnnConvolutionBwdDataAlgoPerf_t, kMax> perf{};
        int got = 0;
        if (ctx.find_algorithms) {
          GB_CHECK_CUDNN(cudnnFindConvolutionBackwardDataAlgorithmEx(
              hd, wd_.get(), wp, yd_.get(), yp, bwd_data_desc_.get(), xd_.get(), dxp, kMax, &got,
              perf.data(), ws, ws_bytes));
        } else {
          GB_CHECK_CUDNN(cudnnGetConvolutionBackwardDataAlgorithm_v7(
              hd, wd_.get(), yd_.get(), bwd_data_desc_.get(), xd_.get(), kMax, &got,
              perf.data()));
        }
        out = usable(perf.data(), got, ws_bytes, ctx.precision, timed_candidates(ctx.precision));
      }, [&](const Candidate& k) {
        if (k.plan) {
          k.plan->execute(hd, dxp, wp, yp, ws);
          return;
        }
        if (k.algo == kOwnKernel) {
          depthwise_backward_data(yp, wp, dxp, add, own_shape_, x->dtype, ctx.stream);
          return;
        }
        GB_CHECK_CUDNN(cudnnSetConvolutionMathType(bwd_data_desc_.get(), k.math));
        GB_CHECK_CUDNN(cudnnConvolutionBackwardData(
            hd, &kOne, wd_.get(), wp, yd_.get(), yp, bwd_data_desc_.get(),
            static_cast<cudnnConvolutionBwdDataAlgo_t>(k.algo), ws, run_ws(k),
            add ? &kOne : &kZero, xd_.get(), dxp));
      });
      GB_CHECK_CUDNN(cudnnSetConvolutionMathType(bwd_data_desc_.get(), bm));
      if (bwd_data_plan_ && bwd_data_plan_->beta() != search.beta) {
        throw Error(ErrorKind::runtime, "conv: backward-data plan " + bwd_data_plan_->name() +
                                            " has the wrong beta for " + search.key);
      }
    }

    cudnnMathType_t wm = math;
    bwd_filter_desc_ = make_conv_desc(spec_, math);
    search.what = "backward-filter";
    search.dir = ConvDirection::backward_filter;
    search.beta = 0.f;
    search.own_workspace = own_fits ? depthwise_backward_filter_workspace(own_shape_) : 0;
    bwd_filter_ = choose(ctx, search, "|bwd_filter", &wm, &bwd_filter_plan_,
                         [&](std::vector<Candidate>& out) {
      std::array<cudnnConvolutionBwdFilterAlgoPerf_t, kMax> perf{};
      int got = 0;
      if (ctx.find_algorithms) {
        GB_CHECK_CUDNN(cudnnFindConvolutionBackwardFilterAlgorithmEx(
            hd, xd_.get(), xp, yd_.get(), yp, bwd_filter_desc_.get(), wd_.get(), dwp, kMax, &got,
            perf.data(), ws, ws_bytes));
      } else {
        GB_CHECK_CUDNN(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
            hd, xd_.get(), yd_.get(), bwd_filter_desc_.get(), wd_.get(), kMax, &got,
            perf.data()));
      }
      out = usable(perf.data(), got, ws_bytes, ctx.precision, timed_candidates(ctx.precision));
    }, [&](const Candidate& k) {
      if (k.plan) {
        k.plan->execute(hd, xp, dwp, yp, ws);
        return;
      }
      if (k.algo == kOwnKernel) {
        depthwise_backward_filter(xp, yp, dwp, ws, run_ws(k), own_shape_, x->dtype, ctx.stream);
        return;
      }
      GB_CHECK_CUDNN(cudnnSetConvolutionMathType(bwd_filter_desc_.get(), k.math));
      GB_CHECK_CUDNN(cudnnConvolutionBackwardFilter(
          hd, &kOne, xd_.get(), xp, yd_.get(), yp, bwd_filter_desc_.get(),
          static_cast<cudnnConvolutionBwdFilterAlgo_t>(k.algo), ws, run_ws(k), &kZero, wd_.get(),
          dwp));
    });
    GB_CHECK_CUDNN(cudnnSetConvolutionMathType(bwd_filter_desc_.get(), wm));
    return std::max({fwd_.workspace, bwd_data_.workspace, bwd_filter_.workspace});
  }

  void forward(Context& ctx, bool) override {
    if (fwd_plan_) {
      fwd_plan_->execute(ctx.cudnn, inputs[0]->data, ctx.params->weight(w_), output->data,
                         ctx.workspace);
      return;
    }
    if (fwd_.algo == kOwnKernel) {
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
    if (x->needs_grad) {
      if (bwd_data_plan_) {
        // Built for beta = accumulate[0] (checked in setup).
        bwd_data_plan_->execute(ctx.cudnn, x->grad, ctx.params->weight(w_), output->grad,
                                ctx.workspace);
      } else if (bwd_data_.algo == kOwnKernel) {
        depthwise_backward_data(output->grad, ctx.params->weight(w_), x->grad, accumulate[0],
                                own_shape_, x->dtype, ctx.stream);
      } else {
        GB_CHECK_CUDNN(cudnnConvolutionBackwardData(
            ctx.cudnn, &kOne, wd_.get(), ctx.params->weight(w_), yd_.get(), output->grad,
            bwd_data_desc_.get(), static_cast<cudnnConvolutionBwdDataAlgo_t>(bwd_data_.algo),
            ctx.workspace, ctx.workspace_bytes, accumulate[0] ? &kOne : &kZero, xd_.get(),
            x->grad));
      }
    }
    if (bwd_filter_plan_) {
      bwd_filter_plan_->execute(ctx.cudnn, x->data, ctx.params->grad(w_), output->grad,
                                ctx.workspace);
      return;
    }
    if (bwd_filter_.algo == kOwnKernel) {
      depthwise_backward_filter(x->data, output->grad, ctx.params->grad(w_), ctx.workspace,
                                ctx.workspace_bytes, own_shape_, x->dtype, ctx.stream);
      return;
    }
    GB_CHECK_CUDNN(cudnnConvolutionBackwardFilter(
        ctx.cudnn, &kOne, xd_.get(), x->data, yd_.get(), output->grad, bwd_filter_desc_.get(),
        static_cast<cudnnConvolutionBwdFilterAlgo_t>(bwd_filter_.algo), ctx.workspace,
        ctx.workspace_bytes, &kZero, wd_.get(), ctx.params->grad(w_)));
  }

 private:
  // What one direction's search needs besides cuDNN's list.
  struct Search {
    std::string key;             // the problem (shapes, strides, groups, type, layout, precision)
    const char* what = "";       // "forward", "backward-data", "backward-filter"
    bool own = false;            // the own depthwise kernel is a candidate
    bool own_only = false;       // ... and the only one (GPUBASE_NN_DEPTHWISE=own)
    std::size_t own_workspace = 0;
    EngineMode engines = EngineMode::off;  // backend engine plans as candidates
    ConvProblem problem;                   // ... for this problem,
    ConvDirection dir = ConvDirection::forward;
    float beta = 0.f;                      // ... direction and beta
  };

  // The backend engine plans for the search's problem, direction and beta, as candidates
  // kEngineBase - i. A problem the backend API cannot describe leaves the legacy algorithms
  // alone in the race, with a line on stderr saying why.
  static std::vector<Candidate> engine_candidates(Context& ctx, const Search& s,
                                                  const std::string& key, cudnnMathType_t math) {
    std::vector<std::shared_ptr<const ConvEnginePlan>> plans;
    try {
      plans = list_conv_engine_plans(
          ctx.cudnn, s.problem, s.dir,
          ConvEngineOptions{.beta = s.beta,
                            .max_workspace = ctx.workspace_bytes,
                            .allow_tensor_cores = false,
                            .max_plans = kMaxEnginePlans});
    } catch (const Error& e) {
      std::fprintf(stderr, "conv %s: no backend engine plans: %s\n", key.c_str(), e.what());
    }
    std::vector<Candidate> out;
    for (std::size_t i = 0; i < plans.size(); ++i) {
      out.push_back(Candidate{kEngineBase - static_cast<int>(i), plans[i]->workspace_bytes(),
                              math, -1.f, plans[i]});
    }
    return out;
  }

  // The cached choice (with its math type and, for an engine plan, the plan) for the problem and
  // direction, or: cuDNN's candidates (list(out)), the backend engine plans in FP32 and the own
  // kernel where it applies; with more than one, each is timed on the layer's buffers
  // (launch(candidate)) and the fastest wins. Find's own figures are single, noisy launches taken
  // while the clock may still be ramping up: they rank, they don't decide.
  template <typename List, typename Launch>
  static AlgoChoice choose(Context& ctx, const Search& s, const char* direction,
                           cudnnMathType_t* math, std::shared_ptr<const ConvEnginePlan>* plan,
                           List&& list, Launch&& launch) {
    // A plan adds into its output or not, so the choice with plans in it is kept per beta.
    const std::string key = s.key + direction +
                            (s.engines != EngineMode::off && s.beta != 0.f ? "|beta1" : "");
    const std::string math_key = key + "|math";
    auto it = ctx.algo_cache.find(key);
    if (it != ctx.algo_cache.end()) {
      *math = static_cast<cudnnMathType_t>(ctx.algo_cache[math_key].algo);
      *plan = it->second.algo <= kEngineBase ? ctx.conv_plans.at(key) : nullptr;
      return it->second;
    }
    std::vector<Candidate> cands;
    if (!s.own_only) {
      const std::vector<Candidate> engines = s.engines != EngineMode::off
                                                 ? engine_candidates(ctx, s, key, *math)
                                                 : std::vector<Candidate>{};
      if (s.engines != EngineMode::only || engines.empty()) list(cands);
      std::vector<Candidate> kept = cands;
      std::erase_if(kept, [&](const Candidate& k) {
        return k.algo != kOwnKernel && skipped_algo(direction, k.algo, ctx.precision);
      });
      if (!kept.empty()) cands = std::move(kept);  // a ruled-out algorithm beats none at all
      cands.insert(cands.end(), engines.begin(), engines.end());
    }
    if (s.own) cands.push_back(Candidate{kOwnKernel, s.own_workspace, *math, -1.f});
    if (cands.empty()) {
      throw Error(ErrorKind::runtime, std::string("cuDNN offers no ") + s.what +
                                          " algorithm that fits a " +
                                          std::to_string(ctx.workspace_bytes) +
                                          "-byte workspace for " + s.key);
    }
    std::size_t best = 0;
    std::vector<float> ms;
    if (cands.size() > 1 && (ctx.find_algorithms || s.own)) {
      ms = time_candidates(ctx.stream, cands.size(), [&](std::size_t i) { launch(cands[i]); });
      best = static_cast<std::size_t>(std::min_element(ms.begin(), ms.end()) - ms.begin());
    }
    if (verbose_search()) {
      // "*" marks the winner; an engine plan has no listed figure (Find did not time it).
      std::string line = "conv " + key + ":";
      for (std::size_t i = 0; i < cands.size(); ++i) {
        char buf[64];
        line += std::string(" ") + (i == best ? "*" : "") + candidate_name(cands[i]);
        if (!cands[i].plan) {
          std::snprintf(buf, sizeof buf, " listed %.3f",
                        static_cast<double>(cands[i].listed_ms));
          line += buf;
        }
        std::snprintf(buf, sizeof buf, " timed %.3f ms",
                      ms.empty() ? -1.0 : static_cast<double>(ms[i]));
        line += buf;
      }
      std::fprintf(stderr, "%s\n", line.c_str());
    }
    if (ctx.precision != Precision::fp32) *math = cands[best].math;
    const AlgoChoice c{cands[best].algo, cands[best].memory};
    *plan = cands[best].plan;
    if (*plan) ctx.conv_plans[key] = *plan;
    ctx.algo_cache[key] = c;
    ctx.algo_cache[math_key] = AlgoChoice{static_cast<int>(*math), 0};
    return c;
  }

  ConvSpec spec_;
  int w_;
  DepthwiseMode depthwise_;  // GPUBASE_NN_DEPTHWISE when the layer was made
  EngineMode engines_;       // GPUBASE_NN_CONV_ENGINES when the layer was made
  DepthwiseShape own_shape_;
  TensorDesc xd_, yd_;
  FilterDesc wd_;
  ConvDesc fwd_desc_, bwd_data_desc_, bwd_filter_desc_;
  AlgoChoice fwd_, bwd_data_, bwd_filter_;
  // Set where a backend engine plan won the direction (then it is what runs).
  std::shared_ptr<const ConvEnginePlan> fwd_plan_, bwd_data_plan_, bwd_filter_plan_;
};

}  // namespace

std::unique_ptr<Layer> make_conv(const ConvSpec& spec, int weight_id) {
  return std::make_unique<Conv>(spec, weight_id);
}

}  // namespace gb::nn
