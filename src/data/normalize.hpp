// data/normalize.hpp: the last step of the input pipeline, defined on the CPU: a batch of uint8
// HWC images (what the loader's workers write into a batch slot) becomes the model's input
// tensor: (pixel - mean) / std per channel, in NCHW or NHWC, as fp32, fp16 or bf16. The GPU
// kernel (gpu/normalize.hpp) does the same on the device after the H2D copy and must match this
// reference bit for bit (fp16/bf16: round to nearest even, as __float2half_rn does).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/vocabulary.hpp"

namespace gb::data {

enum class TensorLayout { nchw, nhwc };
std::string_view to_string(TensorLayout l);

// Per-channel mean and standard deviation in pixel units (0-255).
struct Normalization {
  std::array<float, 4> mean{};
  std::array<float, 4> stddev{1, 1, 1, 1};
};
// torchvision's ImageNet figures (0.485, 0.456, 0.406) / (0.229, 0.224, 0.225), times 255.
Normalization imagenet_normalization();

struct BatchShape {
  int n = 0, h = 0, w = 0, c = 3;  // c <= 4
  std::size_t pixels() const { return std::size_t(n) * std::size_t(h) * std::size_t(w); }
  std::size_t elements() const { return pixels() * std::size_t(c); }
};

// The value one output element gets: (x - mean) * (1 / std) in float, as the kernel computes it.
inline float normalized(std::uint8_t x, const Normalization& norm, int channel) {
  return (static_cast<float>(x) - norm.mean[channel]) * (1.0f / norm.stddev[channel]);
}

// src: n x h x w x c uint8; dst: n x c x h x w (nchw) or n x h x w x c (nhwc) elements of type
// `type`: f32, f16 or bf16 (core/vocabulary.hpp; others throw unsupported_element_type).
void normalize_reference(const std::uint8_t* src, const BatchShape& shape, TensorLayout layout,
                         ElementType type, const Normalization& norm, void* dst);

}  // namespace gb::data
