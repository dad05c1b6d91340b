// tests/gpu/test_nn_network.cpp: the engine's host-side logic, no GPU needed: the gradient
// write/accumulate order that lets every value's gradient buffer go unzeroed (exactly one writer
// per value, the fused batch norm of each ResNet block being the residual's writer), the
// parameter store's layout, and the host FP16/BF16 conversions every test relies on.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <string>

#include "nn/models.hpp"
#include "nn/network.hpp"
#include "nn/tensor.hpp"

namespace gb::nn {
namespace {

struct Planned {
  explicit Planned(Model m, ElementType t = ElementType::f32, bool nhwc = false) : net(t, nhwc, 4) {
    build_model(net, m, default_input(m));
    net.plan();
  }
  Network net;
};

TEST(NnNetwork, EveryGradientHasExactlyOneWriter) {
  for (Model m : {Model::resnet50, Model::mobilenet_v2, Model::small_resnet}) {
    SCOPED_TRACE(std::string(to_string(m)));
    Planned p(m);
    std::map<const Value*, int> writers, consumers;
    for (const auto& layer : p.net.layers()) {
      for (std::size_t i = 0; i < layer->inputs.size(); ++i) {
        const Value* v = layer->inputs[i];
        if (!v->needs_grad) continue;
        ++consumers[v];
        if (!layer->accumulate[i]) ++writers[v];
      }
    }
    for (const auto& [v, n] : consumers) EXPECT_EQ(writers[v], 1) << v->name << ", " << n << " consumers";
    EXPECT_EQ(consumers.count(p.net.output()), 0u);  // the loss writes the logits' gradient
  }
}

TEST(NnNetwork, ResnetBlocksEndInABatchNormThatWritesTheResidualGradient) {
  // The fused cuDNN backward (BN + add + ReLU) can only write dz, never add to it.
  Planned p(Model::resnet50, ElementType::f16, true);
  int blocks = 0;
  for (const auto& layer : p.net.layers()) {
    if (layer->inputs.size() != 2) continue;
    ++blocks;
    EXPECT_FALSE(layer->accumulate[1]) << layer->describe();
  }
  EXPECT_EQ(blocks, 16);  // 3 + 4 + 6 + 3 bottlenecks
}

TEST(NnNetwork, ParameterStoreKeepsReducedParametersFirstAndAligned) {
  Planned p(Model::resnet50, ElementType::f16, true);
  const ParamStore& ps = p.net.params();
  std::size_t reduced_end = 0;
  for (const ParamInfo& info : ps.infos()) {
    EXPECT_EQ(info.offset % 128, 0u) << info.name;
    if (info.reduced) reduced_end = std::max(reduced_end, info.offset + info.shape.elements());
  }
  EXPECT_LE(reduced_end, ps.n_lp());
  for (const ParamInfo& info : ps.infos()) {
    if (!info.reduced) {
      EXPECT_GE(info.offset, ps.n_lp()) << info.name;
    }
  }
  EXPECT_GE(ps.find("layer4.2.bn3.bias"), 0);
  EXPECT_GE(ps.find("fc.weight"), 0);
  EXPECT_TRUE(ps.info(ps.find("layer1.0.conv2.weight")).krsc);  // NHWC engine: KRSC storage
}

TEST(NnTensor, HalfConversionRoundsToNearestEven) {
  EXPECT_EQ(float_to_half_bits(1.f), 0x3c00);
  EXPECT_EQ(float_to_half_bits(-2.f), 0xc000);
  EXPECT_EQ(float_to_half_bits(65504.f), 0x7bff);
  EXPECT_EQ(float_to_half_bits(65520.f), 0x7c00);  // halfway to the next: rounds to inf
  EXPECT_EQ(float_to_half_bits(1.f + std::ldexp(1.f, -11)), 0x3c00);      // tie -> even
  EXPECT_EQ(float_to_half_bits(1.f + 3 * std::ldexp(1.f, -11)), 0x3c02);  // tie -> even
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.f, -24)), 0x0001);            // smallest subnormal
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.f, -26)), 0x0000);
  EXPECT_EQ(float_to_half_bits(0.1f), 0x2e66);
  EXPECT_TRUE(std::isnan(half_bits_to_float(
      float_to_half_bits(std::numeric_limits<float>::quiet_NaN()))));
  for (std::uint32_t h = 0; h < 0x7c00; ++h)  // every finite half survives the round trip
    ASSERT_EQ(float_to_half_bits(half_bits_to_float(static_cast<std::uint16_t>(h))), h);
}

TEST(NnTensor, Bf16ConversionRoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16_bits(1.f), 0x3f80);
  EXPECT_EQ(float_to_bf16_bits(1.f + std::ldexp(1.f, -8)), 0x3f80);      // tie -> even
  EXPECT_EQ(float_to_bf16_bits(1.f + 3 * std::ldexp(1.f, -8)), 0x3f82);  // tie -> even
  EXPECT_EQ(bf16_bits_to_float(0xc040), -3.f);
  EXPECT_TRUE(std::isnan(bf16_bits_to_float(
      float_to_bf16_bits(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(NnTensor, PackAndUnpackRoundTripInEveryLayout) {
  const Shape s{2, 3, 4, 5};
  std::vector<float> v(s.elements());
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) - 50.f;
  for (bool nhwc : {false, true})
    for (ElementType t : {ElementType::f32, ElementType::f16, ElementType::bf16}) {
      const std::vector<unsigned char> bytes = pack_host(v, s, nhwc, t);
      EXPECT_EQ(bytes.size(), s.elements() * element_bytes(t));
      EXPECT_EQ(unpack_host(bytes.data(), s, nhwc, t), v) << nhwc << " " << dtype_name(t);
    }
  // NHWC puts channels innermost: element (n=0, c=1, h=0, w=0) is the second value.
  const std::vector<unsigned char> b = pack_host(v, s, true, ElementType::f32);
  float second;
  std::memcpy(&second, b.data() + 4, 4);
  EXPECT_EQ(second, v[static_cast<std::size_t>(s.h * s.w)]);
}

}  // namespace
}  // namespace gb::nn
