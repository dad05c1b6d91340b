// nn/models.hpp: the three models of `gpubase train`, built into a Network with torchvision's
// parameter names and initialisation.
//
// resnet50      ResNet-50 v1.5 (torchvision.models.resnet50): the stride of a downsampling
//               bottleneck is on its 3x3 conv; conv weights kaiming-normal (fan_out, ReLU), BN
//               gamma 1 / beta 0, fc weight and bias U(-1/sqrt(2048), 1/sqrt(2048)).
//               25,557,032 parameters. Each bottleneck ends in one batch norm with the residual
//               add and ReLU fused (batchnorm.cpp).
// mobilenet_v2  torchvision.models.mobilenet_v2 (width 1.0): inverted residual blocks with
//               ReLU6, classifier Linear(1280, classes) with weight N(0, 0.01), bias 0.
//               3,504,872 parameters. Dropout(0.2) before the classifier is left out (the
//               engine measures throughput; dropout is one elementwise pass).
// small_resnet  for 1x28x28 inputs (Fashion-MNIST), 10 classes: conv3x3(16) + BN + ReLU stem,
//               three stages of two basic blocks (16, 32, 64 channels; stride 2 at the first
//               block of stages 2 and 3, with a 1x1 conv + BN shortcut there), global average
//               pooling, Linear(64, classes). 28x28 -> 28 -> 14 -> 7. 174,970 parameters
//               at 10 classes. Names follow torchvision's ResNet (conv1, bn1, layer1.0.conv1 ...).
#pragma once
#include "nn/network.hpp"
#include "nn/trainer.hpp"

namespace gb::nn {

// Adds input, layers and output to an empty network; throws gb::Error (usage) for an input the
// model cannot take (too small for its downsampling).
void build_model(Network& net, Model model, const InputShape& input);

}  // namespace gb::nn
