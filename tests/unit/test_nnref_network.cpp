// A tiny network composed from the reference layers, conv -> batch norm (train) -> ReLU ->
// global average pool -> linear -> softmax cross-entropy, checked end to end: the chained
// backward passes must agree with finite differences of the loss for every parameter and the
// input. This is the order of operations the engine's small models use.
#include <gtest/gtest.h>

#include <random>

#include "nnref/gradcheck.hpp"
#include "nnref/ref.hpp"

namespace gb::nnref {
namespace {

struct TinyNet {
  ConvParams conv{.pad_h = 1, .pad_w = 1};
  Tensor conv_w;
  std::vector<float> gamma, beta, fc_w, fc_b;
  int classes = 5;
  float momentum = 0.1f, eps = 1e-5f;

  struct Grads {
    Tensor dx, dconv_w;
    std::vector<float> dgamma, dbeta, dfc_w, dfc_b;
    float loss = 0.0f;
  };

  float loss(const Tensor& x, const std::vector<int>& labels) const {
    std::vector<float> rm(gamma.size(), 0.0f), rv(gamma.size(), 1.0f);
    BatchNormSaved saved;
    const Tensor a = conv2d_forward(x, conv_w, conv);
    const Tensor b = batchnorm_forward_train(a, gamma, beta, rm, rv, momentum, eps, saved);
    const Tensor logits =
        linear_forward(global_avgpool_forward(relu_forward(b)), fc_w, fc_b, classes);
    return softmax_cross_entropy(logits, labels, nullptr);
  }

  Grads backward(const Tensor& x, const std::vector<int>& labels) const {
    Grads g;
    std::vector<float> rm(gamma.size(), 0.0f), rv(gamma.size(), 1.0f);
    BatchNormSaved saved;
    const Tensor a = conv2d_forward(x, conv_w, conv);
    const Tensor b = batchnorm_forward_train(a, gamma, beta, rm, rv, momentum, eps, saved);
    const Tensor r = relu_forward(b);
    const Tensor pooled = global_avgpool_forward(r);
    const Tensor logits = linear_forward(pooled, fc_w, fc_b, classes);
    Tensor dlogits, dpooled, da;
    g.loss = softmax_cross_entropy(logits, labels, &dlogits);
    linear_backward(pooled, dlogits, fc_w, dpooled, g.dfc_w, g.dfc_b);
    const Tensor dr = global_avgpool_backward(dpooled, r.h, r.w);
    const Tensor db = relu_backward(r, dr);
    batchnorm_backward(a, db, gamma, saved, da, g.dgamma, g.dbeta);
    g.dx = conv2d_backward_data(da, conv_w, conv, x.h, x.w);
    g.dconv_w = conv2d_backward_filter(x, da, conv, conv_w.h, conv_w.w);
    return g;
  }
};

TEST(NnrefNetwork, ConvBnReluPoolLinearCrossEntropyGradientsMatchFiniteDifferences) {
  std::mt19937 rng(61);
  TinyNet net;
  net.conv_w = random_tensor(4, 3, 3, 3, rng, -0.5f, 0.5f);
  net.gamma = random_vector(4, rng, 0.5f, 1.5f);
  net.beta = random_vector(4, rng, -0.2f, 0.2f);
  net.fc_w = random_vector(5 * 4, rng);
  net.fc_b = random_vector(5, rng, -0.1f, 0.1f);
  Tensor x = random_tensor(2, 3, 6, 6, rng);
  const std::vector<int> labels{1, 3};

  const TinyNet::Grads g = net.backward(x, labels);
  EXPECT_NEAR(g.loss, net.loss(x, labels), 1e-6);
  EXPECT_GT(g.loss, 0.5f);  // an untrained 5-way classifier: near log(5) = 1.61
  EXPECT_LT(g.loss, 3.0f);

  // A small step keeps perturbations from pushing pre-ReLU values across zero (a larger one,
  // 5e-3, already does); the price is FP32 rounding of the loss (~6e-8 / 2e-3 = 3e-5 absolute),
  // hence a 2e-2 bound relative to max(|gradient|, 1e-2).
  auto loss = [&] { return static_cast<double>(net.loss(x, labels)); };
  const GradCheckOptions opts{.step = 1e-3, .min_denominator = 1e-2};
  const GradCheckResult gx = check_gradient(x.v, g.dx.v, loss, opts);
  const GradCheckResult gw = check_gradient(net.conv_w.v, g.dconv_w.v, loss, opts);
  const GradCheckResult gg = check_gradient(net.gamma, g.dgamma, loss, opts);
  const GradCheckResult gbeta = check_gradient(net.beta, g.dbeta, loss, opts);
  const GradCheckResult gfw = check_gradient(net.fc_w, g.dfc_w, loss, opts);
  const GradCheckResult gfb = check_gradient(net.fc_b, g.dfc_b, loss, opts);
  EXPECT_LT(gx.max_rel_error, 2e-2) << "dx: " << describe(gx);
  EXPECT_LT(gw.max_rel_error, 2e-2) << "dconv_w: " << describe(gw);
  EXPECT_LT(gg.max_rel_error, 2e-2) << "dgamma: " << describe(gg);
  EXPECT_LT(gbeta.max_rel_error, 2e-2) << "dbeta: " << describe(gbeta);
  EXPECT_LT(gfw.max_rel_error, 2e-2) << "dfc_w: " << describe(gfw);
  EXPECT_LT(gfb.max_rel_error, 2e-2) << "dfc_b: " << describe(gfb);
}

TEST(NnrefNetwork, SgdStepsOnTheReferenceGradientsLowerTheLoss) {
  std::mt19937 rng(62);
  TinyNet net;
  net.conv_w = random_tensor(4, 3, 3, 3, rng, -0.5f, 0.5f);
  net.gamma.assign(4, 1.0f);
  net.beta.assign(4, 0.0f);
  net.fc_w = random_vector(5 * 4, rng);
  net.fc_b.assign(5, 0.0f);
  const Tensor x = random_tensor(4, 3, 6, 6, rng);
  const std::vector<int> labels{0, 1, 2, 3};
  std::vector<float> m_conv, m_gamma, m_beta, m_fw, m_fb;
  const float first = net.loss(x, labels);
  for (int step = 0; step < 60; ++step) {
    const TinyNet::Grads g = net.backward(x, labels);
    sgd_step(net.conv_w.v, g.dconv_w.v, m_conv, 0.1f, 0.9f, 1e-4f);
    sgd_step(net.gamma, g.dgamma, m_gamma, 0.1f, 0.9f, 0.0f);
    sgd_step(net.beta, g.dbeta, m_beta, 0.1f, 0.9f, 0.0f);
    sgd_step(net.fc_w, g.dfc_w, m_fw, 0.1f, 0.9f, 1e-4f);
    sgd_step(net.fc_b, g.dfc_b, m_fb, 0.1f, 0.9f, 0.0f);
  }
  EXPECT_LT(net.loss(x, labels), 0.2f * first);
}

}  // namespace
}  // namespace gb::nnref
