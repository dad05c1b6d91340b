// tests/gpu/test_nn_batchnorm.cpp: the batch-norm layer against nnref::batchnorm_* : training
// forward (batch statistics), running statistics (momentum 0.1, unbiased variance), backward
// (dx, dgamma, dbeta), inference (running statistics), and the fused forms
// y = act(BN(x) + z) that ResNet (ReLU + residual) and MobileNetV2 (ReLU6; residual without
// activation) use. FP32 NCHW at 2e-4 relative; FP16/BF16 NHWC (where cuDNN's fused
// BN+add+ReLU kernels run when they support the shape) at 1e-2 / 4e-2.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "test_nn_util.hpp"

namespace gb::nn {
namespace {

using testing::Engine;

struct BnCase {
  int n, c, h, w;
};
const BnCase kShapes[] = {{4, 8, 5, 5}, {2, 16, 7, 6}, {8, 32, 4, 4}, {3, 64, 3, 3}};

std::vector<float> download_floats(const float* p, std::size_t n) {
  std::vector<float> v(n);
  GB_CHECK_CUDA(cudaMemcpy(v.data(), p, n * sizeof(float), cudaMemcpyDeviceToHost));
  return v;
}

// y = act(BN(x) + (residual ? x : 0)); the residual input is x itself through a copy layer, so
// the residual's gradient flows back into dx as well.
void check_bn(Precision p, bool nhwc, Act act, bool residual) {
  const ElementType t = testing::dtype_of(p);
  const double tol = testing::layer_tolerance(p);
  const float eps = 1e-5f, momentum = 0.1f;
  std::mt19937 gen(3);
  for (const BnCase& bc : kShapes) {
    SCOPED_TRACE(std::to_string(bc.n) + "x" + std::to_string(bc.c) + "x" + std::to_string(bc.h) +
                 "x" + std::to_string(bc.w) + " " + std::string(to_string(p)) +
                 (residual ? " +residual" : "") + (act == Act::relu    ? " relu"
                                                   : act == Act::relu6 ? " relu6"
                                                                       : ""));
    Engine e(p);
    Network net(t, nhwc, bc.n);
    Value* x = net.input(bc.c, bc.h, bc.w, true);
    Value* z = residual ? net.activation(x, Act::none) : nullptr;
    Value* y = net.batchnorm(x, "bn", act, z);
    e.build(net);
    const Layer& bn_layer = *net.layers().back();
    ::testing::Test::RecordProperty("layer", bn_layer.describe());

    nnref::Tensor xs = testing::random_tensor(bc.n, bc.c, bc.h, bc.w, gen, -2.f, 3.f);
    testing::round_all(xs.v, t);
    const std::vector<float> gamma = testing::random_vector(bc.c, gen, 0.5f, 1.5f);
    const std::vector<float> beta = testing::random_vector(bc.c, gen, -0.5f, 0.5f);
    nnref::Tensor dy = testing::random_tensor(bc.n, bc.c, bc.h, bc.w, gen);
    testing::round_all(dy.v, t);

    // Reference: pre = BN(x) (+ x); y = act(pre); g = dy * act'(y); dx = BN'(g) (+ g).
    std::vector<float> rmean(bc.c, 0.f), rvar(bc.c, 1.f);
    nnref::BatchNormSaved saved;
    nnref::Tensor want_y =
        nnref::batchnorm_forward_train(xs, gamma, beta, rmean, rvar, momentum, eps, saved);
    if (residual) want_y = nnref::add(want_y, xs);
    if (act == Act::relu) want_y = nnref::relu_forward(want_y);
    if (act == Act::relu6) want_y = nnref::relu6_forward(want_y);

    upload_nchw(x->ref(), xs.v);
    net.params().set_master(0, gamma);
    net.params().set_master(1, beta);
    net.forward(e.ctx, true);
    e.sync();
    nnref::Tensor y_dev(bc.n, bc.c, bc.h, bc.w);
    y_dev.v = download_nchw(y->ref());
    EXPECT_LE(testing::rel_error(y_dev.v, want_y.v), tol) << "forward, " << bn_layer.describe();

    // The activation's mask comes from the device's own output: a pre-activation within
    // rounding of 0 (or 6) may land on either side, and the backward must follow the forward.
    nnref::Tensor g = dy;
    if (act == Act::relu) g = nnref::relu_backward(y_dev, dy);
    if (act == Act::relu6) g = nnref::relu6_backward(y_dev, dy);
    nnref::Tensor want_dx;
    std::vector<float> want_dgamma, want_dbeta;
    nnref::batchnorm_backward(xs, g, gamma, saved, want_dx, want_dgamma, want_dbeta);
    if (residual) want_dx = nnref::add(want_dx, g);

    upload_nchw(y->grad_ref(), dy.v);
    net.backward(e.ctx);
    e.sync();
    EXPECT_LE(testing::rel_error(download_nchw(x->grad_ref()), want_dx.v), tol)
        << "dx, " << bn_layer.describe();
    EXPECT_LE(testing::rel_error(net.params().get_grad(0), want_dgamma), tol) << "dgamma";
    EXPECT_LE(testing::rel_error(net.params().get_grad(1), want_dbeta), tol) << "dbeta";
    const auto [d_mean, d_var] = bn_layer.running_stats();
    const std::size_t c = static_cast<std::size_t>(bc.c);
    const double stats_tol = p == Precision::fp32 ? 1e-4 : 1e-3;  // FP32 sums either way
    EXPECT_LE(testing::rel_error(download_floats(d_mean, c), rmean), stats_tol) << "running mean";
    EXPECT_LE(testing::rel_error(download_floats(d_var, c), rvar), stats_tol) << "running var";

    // Inference with the updated running statistics.
    nnref::Tensor want_inf = nnref::batchnorm_forward_inference(xs, gamma, beta, rmean, rvar, eps);
    if (residual) want_inf = nnref::add(want_inf, xs);
    if (act == Act::relu) want_inf = nnref::relu_forward(want_inf);
    if (act == Act::relu6) want_inf = nnref::relu6_forward(want_inf);
    net.forward(e.ctx, false);
    e.sync();
    EXPECT_LE(testing::rel_error(download_nchw(y->ref()), want_inf.v), tol) << "inference";
  }
}

TEST(NnBatchNorm, Fp32TrainingInferenceAndRunningStatistics) {
  GB_NN_REQUIRE_GPU();
  check_bn(Precision::fp32, false, Act::none, false);
}

TEST(NnBatchNorm, Fp32WithRelu) {
  GB_NN_REQUIRE_GPU();
  check_bn(Precision::fp32, false, Act::relu, false);
}

TEST(NnBatchNorm, Fp32WithResidualAddAndRelu) {
  GB_NN_REQUIRE_GPU();
  check_bn(Precision::fp32, false, Act::relu, true);
}

TEST(NnBatchNorm, Fp32WithRelu6AndResidualWithoutActivation) {
  GB_NN_REQUIRE_GPU();
  check_bn(Precision::fp32, false, Act::relu6, false);
  check_bn(Precision::fp32, false, Act::none, true);
}

TEST(NnBatchNorm, Fp16NhwcPlainAndFused) {
  GB_NN_REQUIRE_GPU();
  check_bn(Precision::fp16, true, Act::none, false);
  check_bn(Precision::fp16, true, Act::relu, false);
  check_bn(Precision::fp16, true, Act::relu, true);
  check_bn(Precision::fp16, true, Act::relu6, false);
}

TEST(NnBatchNorm, Bf16NhwcPlainAndFused) {
  GB_NN_REQUIRE_GPU();
  check_bn(Precision::bf16, true, Act::none, false);
  check_bn(Precision::bf16, true, Act::relu, true);
}

}  // namespace
}  // namespace gb::nn
