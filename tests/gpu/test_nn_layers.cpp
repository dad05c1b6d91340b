// tests/gpu/test_nn_layers.cpp: the engine's smaller layers against the CPU reference, forward
// and backward: ReLU, ReLU6, residual add, max pooling (3x3/2 pad 1 as in ResNet's stem, and
// 2x2/2), average pooling (padding counted), global average pooling, the cuBLASLt linear layer
// (bias in the epilogue, bias gradient from BGRADB or the fallback kernel). FP32 NCHW at 2e-4,
// FP16/BF16 NHWC at 1e-2 / 4e-2 (relative to the largest reference value).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>

#include "test_nn_util.hpp"

namespace gb::nn {
namespace {

using testing::Engine;

const Precision kPrecisions[] = {Precision::fp32, Precision::fp16, Precision::bf16};
bool nhwc_for(Precision p) { return p == Precision::fp16 || p == Precision::bf16; }

TEST(NnActivation, ReluRelu6AndAddMatchReference) {
  GB_NN_REQUIRE_GPU();
  std::mt19937 gen(21);
  for (Precision p : kPrecisions) {
    for (Act act : {Act::relu, Act::relu6}) {
      SCOPED_TRACE(std::string(to_string(p)) + (act == Act::relu ? " relu" : " relu6"));
      const ElementType t = testing::dtype_of(p);
      Engine e(p);
      Network net(t, nhwc_for(p), 3);
      Value* x = net.input(5, 7, 9, true);  // 945 values: exercises the scalar tail path
      Value* y = net.activation(x, act);
      e.build(net);
      nnref::Tensor xs = testing::random_tensor(3, 5, 7, 9, gen, -8.f, 8.f);
      nnref::Tensor dy = testing::random_tensor(3, 5, 7, 9, gen);
      testing::round_all(xs.v, t);
      testing::round_all(dy.v, t);
      const nnref::Tensor want_y = act == Act::relu ? nnref::relu_forward(xs) : nnref::relu6_forward(xs);
      const nnref::Tensor want_dx =
          act == Act::relu ? nnref::relu_backward(want_y, dy) : nnref::relu6_backward(want_y, dy);
      upload_nchw(x->ref(), xs.v);
      net.forward(e.ctx, true);
      upload_nchw(y->grad_ref(), dy.v);
      net.backward(e.ctx);
      e.sync();
      EXPECT_EQ(testing::rel_error(download_nchw(y->ref()), want_y.v), 0.0);
      EXPECT_EQ(testing::rel_error(download_nchw(x->grad_ref()), want_dx.v), 0.0);
    }
  }
}

TEST(NnActivation, ResidualAddSendsTheGradientToBothInputs) {
  GB_NN_REQUIRE_GPU();
  std::mt19937 gen(22);
  for (Precision p : kPrecisions) {
    SCOPED_TRACE(std::string(to_string(p)));
    const ElementType t = testing::dtype_of(p);
    Engine e(p);
    Network net(t, nhwc_for(p), 2);
    Value* x = net.input(8, 4, 4, true);
    Value* a = net.activation(x, Act::relu);
    Value* y = net.add(a, x);  // y = relu(x) + x: dx = dy * (x > 0) + dy
    e.build(net);
    nnref::Tensor xs = testing::random_tensor(2, 8, 4, 4, gen);
    nnref::Tensor dy = testing::random_tensor(2, 8, 4, 4, gen);
    testing::round_all(xs.v, t);
    testing::round_all(dy.v, t);
    const nnref::Tensor r = nnref::relu_forward(xs);
    const nnref::Tensor want_y = nnref::add(r, xs);
    const nnref::Tensor want_dx = nnref::add(nnref::relu_backward(r, dy), dy);
    upload_nchw(x->ref(), xs.v);
    net.forward(e.ctx, true);
    upload_nchw(y->grad_ref(), dy.v);
    net.backward(e.ctx);
    e.sync();
    const double tol = p == Precision::fp32 ? 0.0 : testing::layer_tolerance(p);
    EXPECT_LE(testing::rel_error(download_nchw(y->ref()), want_y.v), tol);
    EXPECT_LE(testing::rel_error(download_nchw(x->grad_ref()), want_dx.v), tol);
  }
}

struct PoolCase {
  int n, c, h, w;
  PoolSpec spec;
};

TEST(NnPool, MaxAndAveragePoolingMatchReference) {
  GB_NN_REQUIRE_GPU();
  const PoolCase cases[] = {
      {2, 4, 9, 9, PoolSpec{PoolKind::max, 3, 3, 2, 2, 1, 1}},
      {2, 3, 8, 6, PoolSpec{PoolKind::max, 2, 2, 2, 2, 0, 0}},
      {2, 4, 9, 9, PoolSpec{PoolKind::avg, 3, 3, 2, 2, 1, 1}},
      {1, 8, 6, 6, PoolSpec{PoolKind::avg, 2, 2, 2, 2, 0, 0}},
  };
  std::mt19937 gen(23);
  for (Precision p : kPrecisions) {
    for (const PoolCase& pc : cases) {
      const PoolSpec& s = pc.spec;
      SCOPED_TRACE(std::string(to_string(p)) + (s.kind == PoolKind::max ? " max " : " avg ") +
                   std::to_string(s.kernel_h) + "/" + std::to_string(s.stride_h) + " pad " +
                   std::to_string(s.pad_h));
      const ElementType t = testing::dtype_of(p);
      Engine e(p);
      Network net(t, nhwc_for(p), pc.n);
      Value* x = net.input(pc.c, pc.h, pc.w, true);
      Value* y = net.pool(x, s);
      e.build(net);
      // Distinct values within each plane (a permutation of k/64, exact in BF16): no ties, so
      // "the first maximum gets the gradient" and cuDNN's choice cannot differ.
      nnref::Tensor xs(pc.n, pc.c, pc.h, pc.w);
      std::vector<int> order(static_cast<std::size_t>(pc.h * pc.w));
      for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
      for (std::size_t plane = 0; plane < xs.v.size() / order.size(); ++plane) {
        std::shuffle(order.begin(), order.end(), gen);
        for (std::size_t i = 0; i < order.size(); ++i)
          xs.v[plane * order.size() + i] = static_cast<float>(order[i] - pc.h * pc.w / 2) / 64.f;
      }
      const nnref::PoolParams pp{s.kernel_h, s.kernel_w, s.stride_h, s.stride_w, s.pad_h, s.pad_w};
      const nnref::Tensor want_y = s.kind == PoolKind::max ? nnref::maxpool2d_forward(xs, pp)
                                                           : nnref::avgpool2d_forward(xs, pp);
      nnref::Tensor dy = testing::random_tensor(want_y.n, want_y.c, want_y.h, want_y.w, gen);
      testing::round_all(dy.v, t);
      const nnref::Tensor want_dx = s.kind == PoolKind::max
                                        ? nnref::maxpool2d_backward(xs, dy, pp)
                                        : nnref::avgpool2d_backward(dy, pp, pc.h, pc.w);
      upload_nchw(x->ref(), xs.v);
      net.forward(e.ctx, true);
      upload_nchw(y->grad_ref(), dy.v);
      net.backward(e.ctx);
      e.sync();
      const double tol = testing::layer_tolerance(p);
      EXPECT_LE(testing::rel_error(download_nchw(y->ref()), want_y.v), tol) << "forward";
      EXPECT_LE(testing::rel_error(download_nchw(x->grad_ref()), want_dx.v), tol) << "dx";
    }
  }
}

TEST(NnPool, GlobalAveragePoolingMatchesReference) {
  GB_NN_REQUIRE_GPU();
  std::mt19937 gen(24);
  for (Precision p : kPrecisions) {
    SCOPED_TRACE(std::string(to_string(p)));
    const ElementType t = testing::dtype_of(p);
    Engine e(p);
    Network net(t, nhwc_for(p), 3);
    Value* x = net.input(24, 7, 5, true);
    Value* y = net.global_avgpool(x);
    e.build(net);
    nnref::Tensor xs = testing::random_tensor(3, 24, 7, 5, gen);
    nnref::Tensor dy = testing::random_tensor(3, 24, 1, 1, gen);
    testing::round_all(xs.v, t);
    testing::round_all(dy.v, t);
    const nnref::Tensor want_y = nnref::global_avgpool_forward(xs);
    const nnref::Tensor want_dx = nnref::global_avgpool_backward(dy, 7, 5);
    upload_nchw(x->ref(), xs.v);
    net.forward(e.ctx, true);
    upload_nchw(y->grad_ref(), dy.v);
    net.backward(e.ctx);
    e.sync();
    const double tol = testing::layer_tolerance(p);
    EXPECT_LE(testing::rel_error(download_nchw(y->ref()), want_y.v), tol);
    EXPECT_LE(testing::rel_error(download_nchw(x->grad_ref()), want_dx.v), tol);
  }
}

struct LinearCase {
  int n, in, out;
};

void check_linear(Precision p, const LinearCase& lc) {
  SCOPED_TRACE(std::string(to_string(p)) + " " + std::to_string(lc.n) + "x" +
               std::to_string(lc.in) + " -> " + std::to_string(lc.out));
  std::mt19937 gen(25);
  const ElementType t = testing::dtype_of(p);
  Engine e(p);
  Network net(t, nhwc_for(p), lc.n);
  Value* x = net.input(lc.in, 1, 1, true);
  Value* y = net.linear(x, "fc", lc.out, Init::constant(0.f), Init::constant(0.f));
  e.build(net);
  ::testing::Test::RecordProperty("layer", net.layers().back()->describe());
  nnref::Tensor xs = testing::random_tensor(lc.n, lc.in, 1, 1, gen);
  std::vector<float> w = testing::random_vector(static_cast<std::size_t>(lc.out) * lc.in, gen);
  std::vector<float> b = testing::random_vector(static_cast<std::size_t>(lc.out), gen);
  nnref::Tensor dy = testing::random_tensor(lc.n, lc.out, 1, 1, gen);
  testing::round_all(xs.v, t);
  testing::round_all(w, t);
  testing::round_all(b, t);
  testing::round_all(dy.v, t);
  const nnref::Tensor want_y = nnref::linear_forward(xs, w, b, lc.out);
  nnref::Tensor want_dx;
  std::vector<float> want_dw, want_db;
  nnref::linear_backward(xs, dy, w, want_dx, want_dw, want_db);
  upload_nchw(x->ref(), xs.v);
  net.params().set_master(0, w);
  net.params().set_master(1, b);
  net.forward(e.ctx, true);
  upload_nchw(y->grad_ref(), dy.v);
  net.backward(e.ctx);
  e.sync();
  const double tol = testing::layer_tolerance(p);
  EXPECT_LE(testing::rel_error(download_nchw(y->ref()), want_y.v), tol) << "forward";
  EXPECT_LE(testing::rel_error(download_nchw(x->grad_ref()), want_dx.v), tol) << "dx";
  EXPECT_LE(testing::rel_error(net.params().get_grad(0), want_dw), tol) << "dweight";
  EXPECT_LE(testing::rel_error(net.params().get_grad(1), want_db), tol)
      << "dbias, " << net.layers().back()->describe();
}

TEST(NnLinear, Fp32MatchesReference) {
  GB_NN_REQUIRE_GPU();
  check_linear(Precision::fp32, {5, 32, 24});
  check_linear(Precision::fp32, {7, 64, 10});
  check_linear(Precision::fp32, {3, 2048, 1000});
}

TEST(NnLinear, Tf32MatchesReference) {
  GB_NN_REQUIRE_GPU();
  check_linear(Precision::tf32, {8, 64, 32});
}

TEST(NnLinear, Fp16AndBf16MatchReference) {
  GB_NN_REQUIRE_GPU();
  check_linear(Precision::fp16, {8, 64, 32});
  check_linear(Precision::fp16, {16, 1280, 1000});
  check_linear(Precision::bf16, {8, 64, 32});
  check_linear(Precision::bf16, {16, 64, 10});
}

}  // namespace
}  // namespace gb::nn
