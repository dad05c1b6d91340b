// tests/gpu/test_nn_conv_engines.cpp: cuDNN backend-API convolution plans (nn/conv_engines.hpp)
// against the CPU reference (nnref::conv2d_*), FP32 with tensor cores off (tolerance 2e-4
// relative to the tensor's largest value, as in test_nn_conv.cpp):
//   - every plan listed for 1x1, 3x3 stride 1 and 2, 7x7 stride 2 with C = 3, grouped and
//     depthwise problems, NCHW and NHWC, runs in each direction and matches, with beta 0 and
//     (backward data) beta 1 adding into what the output held;
//   - with tensor cores not allowed no listed engine carries the tensor-core or down-convert
//     note, nor needs runtime compilation;
//   - a workspace limit of 0 lists only plans that need none (and they run without one);
//   - a plan runs inside a captured CUDA graph;
//   - the conv layer with GPUBASE_NN_CONV_ENGINES=only (engine plans alone) matches, including
//     two layers of the same problem where one writes dx and the other adds into it.
// Each listing prints one line (problem, direction, plan names) to stdout.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <random>
#include <string>

#include "nn/conv_engines.hpp"
#include "test_nn_util.hpp"

namespace gb::nn {
namespace {

using testing::Engine;

constexpr std::size_t kWorkspaceLimit = 256u << 20;

struct EngineCase {
  const char* what;
  int n, c, h, w;
  ConvSpec spec;
  bool needs_plans;  // FP32 NCHW must list at least one plan (depthwise: whatever cuDNN has)
};

const EngineCase kCases[] = {
    {"1x1", 2, 16, 8, 8, ConvSpec::square(32, 1, 1, 0), true},
    {"3x3 s1", 2, 8, 9, 9, ConvSpec::square(16, 3, 1, 1), true},
    {"3x3 s2", 2, 8, 9, 9, ConvSpec::square(16, 3, 2, 1), true},
    {"7x7 s2 C=3", 2, 3, 15, 15, ConvSpec::square(8, 7, 2, 3), true},
    {"3x3 g2", 2, 8, 6, 6, ConvSpec::square(8, 3, 1, 1, 2), true},
    {"3x3 depthwise", 2, 16, 7, 7, ConvSpec::square(16, 3, 1, 1, 16), false},
};

const ConvDirection kDirections[] = {ConvDirection::forward, ConvDirection::backward_data,
                                     ConvDirection::backward_filter};

ConvProblem problem_of(const EngineCase& k, bool nhwc) {
  const ConvSpec& s = k.spec;
  const int p = window_out(k.h, s.kernel_h, s.stride_h, s.pad_h, s.dil_h);
  const int q = window_out(k.w, s.kernel_w, s.stride_w, s.pad_w, s.dil_w);
  return ConvProblem{.x = Shape{k.n, k.c, k.h, k.w},
                     .w = Shape{s.out_channels, k.c / s.groups, s.kernel_h, s.kernel_w},
                     .y = Shape{k.n, s.out_channels, p, q},
                     .x_nhwc = nhwc,
                     .y_nhwc = nhwc,
                     .w_krsc = nhwc,
                     .stride_h = s.stride_h,
                     .stride_w = s.stride_w,
                     .pad_h = s.pad_h,
                     .pad_w = s.pad_w,
                     .dil_h = s.dil_h,
                     .dil_w = s.dil_w};
}

nnref::ConvParams params_of(const ConvSpec& s) {
  return nnref::ConvParams{s.stride_h, s.stride_w, s.pad_h, s.pad_w, s.dil_h, s.dil_w, s.groups};
}

std::string label(const EngineCase& k, bool nhwc, ConvDirection d, float beta) {
  return std::string(k.what) + (nhwc ? " NHWC " : " NCHW ") + to_string(d) + " beta " +
         std::to_string(static_cast<int>(beta));
}

std::vector<std::shared_ptr<const ConvEnginePlan>> list_plans(Engine& e, const ConvProblem& p,
                                                             ConvDirection d, float beta,
                                                             std::size_t max_workspace,
                                                             const std::string& what) {
  auto plans = list_conv_engine_plans(
      e.cudnn.get(), p, d,
      ConvEngineOptions{.beta = beta, .max_workspace = max_workspace,
                        .allow_tensor_cores = false, .max_plans = 8});
  std::string line = "[ engines  ] " + what + " (workspace <= " + std::to_string(max_workspace) +
                     "): " + std::to_string(plans.size()) + " plans";
  for (const auto& plan : plans) {
    line += " " + plan->name() + " (" + std::to_string(plan->workspace_bytes()) + " B)";
  }
  std::printf("%s\n", line.c_str());
  return plans;
}

// Runs every plan listed for one direction of the case and compares its output with the
// reference; the output holds random values first (beta 1 must add to them, beta 0 must not).
// Returns the number of plans.
std::size_t check_direction(Engine& e, const EngineCase& k, bool nhwc, ConvDirection d,
                            float beta, std::size_t max_workspace, std::mt19937& gen) {
  const std::string what = label(k, nhwc, d, beta);
  SCOPED_TRACE(what);
  const ConvProblem p = problem_of(k, nhwc);
  const ConvSpec& s = k.spec;
  const auto plans = list_plans(e, p, d, beta, max_workspace, what);

  const nnref::Tensor xs = testing::random_tensor(p.x.n, p.x.c, p.x.h, p.x.w, gen);
  const nnref::Tensor ws = testing::random_tensor(p.w.n, p.w.c, p.w.h, p.w.w, gen);
  const nnref::Tensor dy = testing::random_tensor(p.y.n, p.y.c, p.y.h, p.y.w, gen);
  const nnref::ConvParams cp = params_of(s);
  nnref::Tensor want;
  const Shape* out_shape = nullptr;
  switch (d) {
    case ConvDirection::forward:
      want = nnref::conv2d_forward(xs, ws, cp);
      out_shape = &p.y;
      break;
    case ConvDirection::backward_data:
      want = nnref::conv2d_backward_data(dy, ws, cp, k.h, k.w);
      out_shape = &p.x;
      break;
    case ConvDirection::backward_filter:
      want = nnref::conv2d_backward_filter(xs, dy, cp, s.kernel_h, s.kernel_w);
      out_shape = &p.w;
      break;
  }
  const nnref::Tensor prior =
      testing::random_tensor(out_shape->n, out_shape->c, out_shape->h, out_shape->w, gen);
  if (beta != 0.f) {
    for (std::size_t i = 0; i < want.v.size(); ++i) want.v[i] += prior.v[i];
  }

  gpu::DeviceBuffer xb(p.x.elements() * sizeof(float)), wb(p.w.elements() * sizeof(float)),
      yb(p.y.elements() * sizeof(float));
  const TensorRef xr{xb.data(), p.x, ElementType::f32, nhwc},
      wr{wb.data(), p.w, ElementType::f32, nhwc}, yr{yb.data(), p.y, ElementType::f32, nhwc};
  const TensorRef& out = d == ConvDirection::forward         ? yr
                         : d == ConvDirection::backward_data ? xr
                                                             : wr;
  upload_nchw(xr, xs.v);
  upload_nchw(wr, ws.v);
  upload_nchw(yr, dy.v);
  std::size_t ws_bytes = 0;
  for (const auto& plan : plans) ws_bytes = std::max(ws_bytes, plan->workspace_bytes());
  gpu::DeviceBuffer workspace(ws_bytes);  // null when no plan needs any

  for (const auto& plan : plans) {
    SCOPED_TRACE(plan->name());
    EXPECT_EQ(plan->direction(), d);
    EXPECT_EQ(plan->beta(), beta);
    EXPECT_LE(plan->workspace_bytes(), max_workspace);
    upload_nchw(out, prior.v);
    plan->execute(e.cudnn.get(), xb.data(), wb.data(), yb.data(), workspace.data());
    e.sync();
    EXPECT_LE(testing::rel_error(download_nchw(out), want.v),
              testing::layer_tolerance(Precision::fp32));
  }
  return plans.size();
}

TEST(NnConvEngines, EveryListedPlanMatchesTheReference) {
  GB_NN_REQUIRE_GPU();
  std::mt19937 gen(31);
  Engine e(Precision::fp32);
  for (const EngineCase& k : kCases) {
    for (bool nhwc : {false, true}) {
      for (ConvDirection d : kDirections) {
        const std::size_t n = check_direction(e, k, nhwc, d, 0.f, kWorkspaceLimit, gen);
        if (k.needs_plans && !nhwc) {
          EXPECT_GT(n, 0u) << label(k, nhwc, d, 0.f) << ": no backend plan listed";
        }
      }
      // Backward data is the direction that adds (a residual input's second consumer).
      check_direction(e, k, nhwc, ConvDirection::backward_data, 1.f, kWorkspaceLimit, gen);
    }
  }
}

TEST(NnConvEngines, NoTensorCoreDownConvertOrRuntimeCompiledEngineWhenTensorCoresAreOff) {
  GB_NN_REQUIRE_GPU();
  Engine e(Precision::fp32);
  for (const EngineCase& k : kCases) {
    for (bool nhwc : {false, true}) {
      for (ConvDirection d : kDirections) {
        const std::string what = label(k, nhwc, d, 0.f);
        SCOPED_TRACE(what);
        const ConvProblem p = problem_of(k, nhwc);
        for (const auto& plan : list_plans(e, p, d, 0.f, kWorkspaceLimit, what)) {
          const auto& notes = plan->numerical_notes();
          const auto& behavior = plan->behavior_notes();
          auto has = [](const std::vector<int>& v, int note) {
            return std::find(v.begin(), v.end(), note) != v.end();
          };
          EXPECT_FALSE(has(notes, CUDNN_NUMERICAL_NOTE_TENSOR_CORE)) << plan->name();
          EXPECT_FALSE(has(notes, CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS)) << plan->name();
          EXPECT_FALSE(has(behavior, CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION)) << plan->name();
        }
      }
    }
  }
}

TEST(NnConvEngines, ZeroWorkspaceLimitListsOnlyPlansThatNeedNone) {
  GB_NN_REQUIRE_GPU();
  std::mt19937 gen(32);
  Engine e(Precision::fp32);
  for (const EngineCase& k : kCases) {
    for (ConvDirection d : kDirections) {
      // check_direction asserts workspace_bytes() <= 0 and runs each plan with a null workspace.
      const std::size_t n = check_direction(e, k, false, d, 0.f, 0, gen);
      if (std::string(k.what) == "3x3 s1" && d == ConvDirection::forward) {
        EXPECT_GT(n, 0u) << "no zero-workspace forward plan (implicit GEMM needs none)";
      }
    }
  }
}

TEST(NnConvEngines, PlanRunsInsideACapturedCudaGraph) {
  GB_NN_REQUIRE_GPU();
  std::mt19937 gen(33);
  Engine e(Precision::fp32);
  const EngineCase& k = kCases[1];  // 3x3 s1
  const ConvProblem p = problem_of(k, false);
  const auto plans =
      list_plans(e, p, ConvDirection::forward, 0.f, kWorkspaceLimit, "3x3 s1 NCHW fwd (graph)");
  ASSERT_FALSE(plans.empty());
  const nnref::Tensor xs = testing::random_tensor(p.x.n, p.x.c, p.x.h, p.x.w, gen);
  const nnref::Tensor ws = testing::random_tensor(p.w.n, p.w.c, p.w.h, p.w.w, gen);
  const nnref::Tensor want = nnref::conv2d_forward(xs, ws, params_of(k.spec));
  gpu::DeviceBuffer xb(p.x.elements() * sizeof(float)), wb(p.w.elements() * sizeof(float)),
      yb(p.y.elements() * sizeof(float));
  const TensorRef yr{yb.data(), p.y, ElementType::f32, false};
  upload_nchw(TensorRef{xb.data(), p.x, ElementType::f32, false}, xs.v);
  upload_nchw(TensorRef{wb.data(), p.w, ElementType::f32, false}, ws.v);
  for (const auto& plan : plans) {
    SCOPED_TRACE(plan->name());
    gpu::DeviceBuffer workspace(plan->workspace_bytes());
    // Eagerly once (module loading happens outside the capture, as in the trainer), then
    // captured: an allocation or synchronisation inside execute() would break the capture.
    plan->execute(e.cudnn.get(), xb.data(), wb.data(), yb.data(), workspace.data());
    e.sync();
    upload_nchw(yr, std::vector<float>(p.y.elements(), 7.f));
    GB_CHECK_CUDA(cudaStreamBeginCapture(e.stream.get(), cudaStreamCaptureModeThreadLocal));
    plan->execute(e.cudnn.get(), xb.data(), wb.data(), yb.data(), workspace.data());
    cudaGraph_t g{};
    GB_CHECK_CUDA(cudaStreamEndCapture(e.stream.get(), &g));
    const gpu::CudaGraph graph(g);
    const gpu::CudaGraphExec exec = graph.instantiate();
    GB_CHECK_CUDA(cudaGraphLaunch(exec.get(), e.stream.get()));
    e.sync();
    EXPECT_LE(testing::rel_error(download_nchw(yr), want.v),
              testing::layer_tolerance(Precision::fp32));
  }
}

TEST(NnConvEngines, ConvLayerWithEnginePlansOnlyMatchesReference) {
  GB_NN_REQUIRE_GPU();
  const testing::ScopedEnv only("GPUBASE_NN_CONV_ENGINES", "only");
  std::mt19937 gen(34);
  const double tol = testing::layer_tolerance(Precision::fp32);
  for (const EngineCase& k : kCases) {
    SCOPED_TRACE(k.what);
    const ConvSpec& s = k.spec;
    Engine e(Precision::fp32);
    Network net(ElementType::f32, false, k.n);
    Value* x = net.input(k.c, k.h, k.w, true);
    Value* y = net.conv(x, "conv", s);
    e.build(net);
    const std::string d = net.layers()[0]->describe();
    std::printf("[ engines  ] %s\n", d.c_str());
    if (k.needs_plans) {
      EXPECT_NE(d.find("fwd eng"), std::string::npos) << d;
      EXPECT_NE(d.find("bwd-data eng"), std::string::npos) << d;
      EXPECT_NE(d.find("bwd-filter eng"), std::string::npos) << d;
    }
    const nnref::Tensor xs = testing::random_tensor(k.n, k.c, k.h, k.w, gen);
    const nnref::Tensor ws =
        testing::random_tensor(s.out_channels, k.c / s.groups, s.kernel_h, s.kernel_w, gen);
    const nnref::ConvParams cp = params_of(s);
    const nnref::Tensor want_y = nnref::conv2d_forward(xs, ws, cp);
    const nnref::Tensor dy = testing::random_tensor(want_y.n, want_y.c, want_y.h, want_y.w, gen);
    upload_nchw(x->ref(), xs.v);
    net.params().set_master(0, ws.v);
    net.forward(e.ctx, true);
    upload_nchw(y->grad_ref(), dy.v);
    net.backward(e.ctx);
    e.sync();
    EXPECT_LE(testing::rel_error(download_nchw(y->ref()), want_y.v), tol) << "forward";
    EXPECT_LE(testing::rel_error(download_nchw(x->grad_ref()),
                                 nnref::conv2d_backward_data(dy, ws, cp, k.h, k.w).v),
              tol)
        << "dx";
    EXPECT_LE(testing::rel_error(net.params().get_grad(0),
                                 nnref::conv2d_backward_filter(xs, dy, cp, s.kernel_h,
                                                               s.kernel_w).v),
              tol)
        << "dw";
  }
}

TEST(NnConvEngines, SameProblemWritingAndAddingLayersGetPlansOfTheirOwnBeta) {
  GB_NN_REQUIRE_GPU();
  const testing::ScopedEnv only("GPUBASE_NN_CONV_ENGINES", "only");
  // x feeds two convolutions of the same problem: backward runs b first (writes dx, beta 0),
  // then a (adds, beta 1). One shared plan would either drop a's term or add b's to stale data.
  std::mt19937 gen(35);
  Engine e(Precision::fp32);
  Network net(ElementType::f32, false, 2);
  Value* x = net.input(8, 7, 7, true);
  Value* a = net.conv(x, "a", ConvSpec::square(8, 3, 1, 1));
  Value* b = net.conv(x, "b", ConvSpec::square(8, 3, 1, 1));
  Value* y = net.add(a, b);
  e.build(net);
  for (const auto& l : net.layers()) std::printf("[ engines  ] %s\n", l->describe().c_str());
  const nnref::Tensor xs = testing::random_tensor(2, 8, 7, 7, gen);
  const nnref::Tensor wa = testing::random_tensor(8, 8, 3, 3, gen);
  const nnref::Tensor wb = testing::random_tensor(8, 8, 3, 3, gen);
  const nnref::Tensor dy = testing::random_tensor(2, 8, 7, 7, gen);
  const nnref::ConvParams cp{1, 1, 1, 1, 1, 1, 1};
  nnref::Tensor want = nnref::conv2d_backward_data(dy, wa, cp, 7, 7);
  const nnref::Tensor other = nnref::conv2d_backward_data(dy, wb, cp, 7, 7);
  for (std::size_t i = 0; i < want.v.size(); ++i) want.v[i] += other.v[i];
  upload_nchw(x->ref(), xs.v);
  net.params().set_master(0, wa.v);
  net.params().set_master(1, wb.v);
  // Twice: the second step adds into a dx the first one left behind only if beta is wrong.
  for (int step = 0; step < 2; ++step) {
    net.forward(e.ctx, true);
    upload_nchw(y->grad_ref(), dy.v);
    net.backward(e.ctx);
    e.sync();
    EXPECT_LE(testing::rel_error(download_nchw(x->grad_ref()), want.v), 2e-4) << "step " << step;
  }
}

}  // namespace
}  // namespace gb::nn
