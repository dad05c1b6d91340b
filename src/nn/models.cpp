// nn/models.cpp: see models.hpp.
#include "nn/models.hpp"

#include <cmath>
#include <string>

namespace gb::nn {
namespace {

Init linear_default(int in_features) {  // PyTorch nn.Linear: U(-1/sqrt(in), 1/sqrt(in))
  return Init::uniform(1.f / std::sqrt(static_cast<float>(in_features)));
}

Value* conv_bn(Network& net, Value* x, const std::string& conv_name, const std::string& bn_name,
               const ConvSpec& spec, Act act) {
  return net.batchnorm(net.conv(x, conv_name, spec), bn_name, act);
}

void build_resnet50(Network& net, const InputShape& in) {
  Value* x = net.input(in.channels, in.height, in.width);
  Value* y = conv_bn(net, x, "conv1", "bn1", ConvSpec::square(64, 7, 2, 3), Act::relu);
  y = net.pool(y, PoolSpec{PoolKind::max, 3, 3, 2, 2, 1, 1});
  const int blocks[4] = {3, 4, 6, 3};
  const int widths[4] = {64, 128, 256, 512};
  for (int stage = 0; stage < 4; ++stage) {
    for (int b = 0; b < blocks[stage]; ++b) {
      const int width = widths[stage];
      const int stride = (b == 0 && stage > 0) ? 2 : 1;
      const std::string p = "layer" + std::to_string(stage + 1) + "." + std::to_string(b) + ".";
      Value* out = conv_bn(net, y, p + "conv1", p + "bn1", ConvSpec::square(width, 1, 1, 0),
                           Act::relu);
      out = conv_bn(net, out, p + "conv2", p + "bn2", ConvSpec::square(width, 3, stride, 1),
                    Act::relu);
      out = net.conv(out, p + "conv3", ConvSpec::square(width * 4, 1, 1, 0));
      Value* identity = y;
      if (b == 0) {
        identity = conv_bn(net, y, p + "downsample.0", p + "downsample.1",
                           ConvSpec::square(width * 4, 1, stride, 0), Act::none);
      }
      y = net.batchnorm(out, p + "bn3", Act::relu, identity);
    }
  }
  y = net.global_avgpool(y);
  const Init fc = linear_default(2048);
  net.set_output(net.linear(y, "fc", in.classes, fc, fc));
}

void build_mobilenet_v2(Network& net, const InputShape& in) {
  Value* x = net.input(in.channels, in.height, in.width);
  Value* y = conv_bn(net, x, "features.0.0", "features.0.1", ConvSpec::square(32, 3, 2, 1),
                     Act::relu6);
  struct Setting {
    int t, c, n, s;
  };
  const Setting settings[] = {{1, 16, 1, 1},  {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                              {6, 96, 3, 1},  {6, 160, 3, 2}, {6, 320, 1, 1}};
  int channels = 32;
  int index = 1;
  for (const Setting& st : settings) {
    for (int i = 0; i < st.n; ++i, ++index) {
      const int stride = i == 0 ? st.s : 1;
      const int hidden = channels * st.t;
      const std::string p = "features." + std::to_string(index) + ".conv.";
      Value* out = y;
      int layer = 0;
      if (st.t != 1) {
        const std::string q = p + std::to_string(layer++) + ".";
        out = conv_bn(net, out, q + "0", q + "1", ConvSpec::square(hidden, 1, 1, 0), Act::relu6);
      }
      const std::string q = p + std::to_string(layer++) + ".";
      out = conv_bn(net, out, q + "0", q + "1", ConvSpec::square(hidden, 3, stride, 1, hidden),
                    Act::relu6);
      out = net.conv(out, p + std::to_string(layer), ConvSpec::square(st.c, 1, 1, 0));
      const bool residual = stride == 1 && channels == st.c;
      y = net.batchnorm(out, p + std::to_string(layer + 1), Act::none, residual ? y : nullptr);
      channels = st.c;
    }
  }
  const std::string last = "features." + std::to_string(index) + ".";
  y = conv_bn(net, y, last + "0", last + "1", ConvSpec::square(1280, 1, 1, 0), Act::relu6);
  y = net.global_avgpool(y);
  net.set_output(net.linear(y, "classifier.1", in.classes, Init::normal(0.01f),
                            Init::constant(0.f)));
}

void build_small_resnet(Network& net, const InputShape& in) {
  Value* x = net.input(in.channels, in.height, in.width);
  Value* y = conv_bn(net, x, "conv1", "bn1", ConvSpec::square(16, 3, 1, 1), Act::relu);
  const int widths[3] = {16, 32, 64};
  int channels = 16;
  for (int stage = 0; stage < 3; ++stage) {
    for (int b = 0; b < 2; ++b) {
      const int width = widths[stage];
      const int stride = (b == 0 && stage > 0) ? 2 : 1;
      const std::string p = "layer" + std::to_string(stage + 1) + "." + std::to_string(b) + ".";
      Value* out = conv_bn(net, y, p + "conv1", p + "bn1", ConvSpec::square(width, 3, stride, 1),
                           Act::relu);
      out = net.conv(out, p + "conv2", ConvSpec::square(width, 3, 1, 1));
      Value* identity = y;
      if (stride != 1 || channels != width) {
        identity = conv_bn(net, y, p + "downsample.0", p + "downsample.1",
                           ConvSpec::square(width, 1, stride, 0), Act::none);
      }
      y = net.batchnorm(out, p + "bn2", Act::relu, identity);
      channels = width;
    }
  }
  y = net.global_avgpool(y);
  const Init fc = linear_default(64);
  net.set_output(net.linear(y, "fc", in.classes, fc, fc));
}

}  // namespace

void build_model(Network& net, Model model, const InputShape& input) {
  switch (model) {
    case Model::resnet50: build_resnet50(net, input); return;
    case Model::mobilenet_v2: build_mobilenet_v2(net, input); return;
    case Model::small_resnet: build_small_resnet(net, input); return;
  }
}

}  // namespace gb::nn
