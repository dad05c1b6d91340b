// tests/gpu/test_nn_conv.cpp: the cuDNN convolution layer (forward, backward data, backward
// filter) against the CPU reference (nnref::conv2d_*) on small shapes: plain, strided, 1x1,
// 7x7 stem-like, grouped, depthwise, dilated. FP32 NCHW with tensor cores off (tolerance 2e-4
// relative to the tensor's largest value), FP16 and BF16 NHWC (1e-2 / 4e-2), TF32 NCHW (5e-3).
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "test_nn_util.hpp"

namespace gb::nn {
namespace {

using testing::Engine;

struct ConvCase {
  int n, c, h, w;
  ConvSpec spec;
};

std::string name_of(const ConvCase& cc) {
  const ConvSpec& s = cc.spec;
  return std::to_string(cc.n) + "x" + std::to_string(cc.c) + "x" + std::to_string(cc.h) + "x" +
         std::to_string(cc.w) + " k" + std::to_string(s.out_channels) + " " +
         std::to_string(s.kernel_h) + "x" + std::to_string(s.kernel_w) + " s" +
         std::to_string(s.stride_h) + " p" + std::to_string(s.pad_h) + " d" +
         std::to_string(s.dil_h) + " g" + std::to_string(s.groups);
}

const ConvCase kCases[] = {
    {2, 3, 9, 9, ConvSpec{4, 3, 3, 1, 1, 1, 1, 1, 1, 1}},
    {2, 8, 8, 7, ConvSpec{16, 3, 3, 2, 2, 1, 1, 1, 1, 1}},
    {3, 6, 7, 7, ConvSpec{6, 1, 1, 1, 1, 0, 0, 1, 1, 1}},
    {2, 16, 6, 6, ConvSpec{32, 1, 1, 2, 2, 0, 0, 1, 1, 1}},
    {2, 3, 15, 15, ConvSpec{8, 7, 7, 2, 2, 3, 3, 1, 1, 1}},
    {2, 8, 6, 6, ConvSpec{8, 3, 3, 1, 1, 1, 1, 1, 1, 2}},     // grouped
    {2, 16, 9, 9, ConvSpec{16, 3, 3, 2, 2, 1, 1, 1, 1, 16}},  // depthwise, strided
    {2, 8, 7, 7, ConvSpec{8, 3, 3, 1, 1, 1, 1, 1, 1, 8}},     // depthwise
    {1, 4, 10, 10, ConvSpec{4, 3, 3, 1, 1, 2, 2, 2, 2, 1}},   // dilated
};

void check_conv(Precision p, bool nhwc) {
  const ElementType t = testing::dtype_of(p);
  const double tol = testing::layer_tolerance(p);
  std::mt19937 gen(11);
  for (const ConvCase& cc : kCases) {
    SCOPED_TRACE(name_of(cc) + " " + std::string(to_string(p)) + (nhwc ? " NHWC" : " NCHW"));
    const ConvSpec& s = cc.spec;
    Engine e(p);
    Network net(t, nhwc, cc.n);
    Value* x = net.input(cc.c, cc.h, cc.w, true);
    Value* y = net.conv(x, "conv", s);
    e.build(net);

    nnref::Tensor xs = testing::random_tensor(cc.n, cc.c, cc.h, cc.w, gen);
    nnref::Tensor ws = testing::random_tensor(s.out_channels, cc.c / s.groups, s.kernel_h,
                                              s.kernel_w, gen);
    testing::round_all(xs.v, t);
    testing::round_all(ws.v, t);
    const nnref::ConvParams cp{s.stride_h, s.stride_w, s.pad_h, s.pad_w, s.dil_h, s.dil_w,
                               s.groups};
    const nnref::Tensor want_y = nnref::conv2d_forward(xs, ws, cp);
    ASSERT_EQ(want_y.h, y->shape.h);
    ASSERT_EQ(want_y.w, y->shape.w);
    nnref::Tensor dy = testing::random_tensor(want_y.n, want_y.c, want_y.h, want_y.w, gen);
    testing::round_all(dy.v, t);
    const nnref::Tensor want_dx = nnref::conv2d_backward_data(dy, ws, cp, cc.h, cc.w);
    const nnref::Tensor want_dw = nnref::conv2d_backward_filter(xs, dy, cp, s.kernel_h, s.kernel_w);

    upload_nchw(x->ref(), xs.v);
    net.params().set_master(0, ws.v);
    net.forward(e.ctx, true);
    upload_nchw(y->grad_ref(), dy.v);
    net.backward(e.ctx);
    e.sync();
    EXPECT_LE(testing::rel_error(download_nchw(y->ref()), want_y.v), tol) << "forward";
    EXPECT_LE(testing::rel_error(download_nchw(x->grad_ref()), want_dx.v), tol) << "dx";
    EXPECT_LE(testing::rel_error(net.params().get_grad(0), want_dw.v), tol) << "dw";
  }
}

TEST(NnConv, Fp32MatchesReference) {
  GB_NN_REQUIRE_GPU();
  check_conv(Precision::fp32, false);
}

TEST(NnConv, Tf32MatchesReference) {
  GB_NN_REQUIRE_GPU();
  check_conv(Precision::tf32, false);
}

TEST(NnConv, Fp16NhwcMatchesReference) {
  GB_NN_REQUIRE_GPU();
  check_conv(Precision::fp16, true);
}

TEST(NnConv, Bf16NhwcMatchesReference) {
  GB_NN_REQUIRE_GPU();
  check_conv(Precision::bf16, true);
}

TEST(NnConv, AddsIntoAGradientAnotherConsumerWrote) {
  GB_NN_REQUIRE_GPU();
  // x feeds two convolutions: the second one's backward runs first and writes dx, the first adds.
  std::mt19937 gen(5);
  Engine e(Precision::fp32);
  Network net(ElementType::f32, false, 2);
  Value* x = net.input(4, 6, 6, true);
  Value* a = net.conv(x, "a", ConvSpec::square(4, 3, 1, 1));
  Value* b = net.conv(x, "b", ConvSpec::square(4, 1, 1, 0));
  Value* y = net.add(a, b);
  e.build(net);
  const nnref::Tensor xs = testing::random_tensor(2, 4, 6, 6, gen);
  const nnref::Tensor wa = testing::random_tensor(4, 4, 3, 3, gen);
  const nnref::Tensor wb = testing::random_tensor(4, 4, 1, 1, gen);
  const nnref::Tensor dy = testing::random_tensor(2, 4, 6, 6, gen);
  const nnref::ConvParams pa{1, 1, 1, 1, 1, 1, 1}, pb{};
  nnref::Tensor want = nnref::conv2d_backward_data(dy, wa, pa, 6, 6);
  const nnref::Tensor other = nnref::conv2d_backward_data(dy, wb, pb, 6, 6);
  for (std::size_t i = 0; i < want.v.size(); ++i) want.v[i] += other.v[i];
  upload_nchw(x->ref(), xs.v);
  net.params().set_master(0, wa.v);
  net.params().set_master(1, wb.v);
  net.forward(e.ctx, true);
  upload_nchw(y->grad_ref(), dy.v);
  net.backward(e.ctx);
  e.sync();
  EXPECT_LE(testing::rel_error(download_nchw(x->grad_ref()), want.v), 2e-4);
}

}  // namespace
}  // namespace gb::nn
