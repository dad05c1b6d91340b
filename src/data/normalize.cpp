// data/normalize.cpp: the CPU reference of the batch normalization.
#include "data/normalize.hpp"

#include <cstring>

#include "core/error.hpp"
#include "core/float_bits.hpp"

namespace gb::data {

std::string_view to_string(TensorLayout l) { return l == TensorLayout::nchw ? "NCHW" : "NHWC"; }

Normalization imagenet_normalization() {
  Normalization n;
  n.mean = {0.485f * 255, 0.456f * 255, 0.406f * 255, 0};
  n.stddev = {0.229f * 255, 0.224f * 255, 0.225f * 255, 1};
  return n;
}

void normalize_reference(const std::uint8_t* src, const BatchShape& s, TensorLayout layout,
                         ElementType type, const Normalization& norm, void* dst) {
  if (s.c < 1 || s.c > 4) throw Error(ErrorKind::usage, "normalize: 1 to 4 channels");
  const std::size_t plane = std::size_t(s.h) * std::size_t(s.w);
  for (int n = 0; n < s.n; ++n)
    for (std::size_t p = 0; p < plane; ++p)
      for (int c = 0; c < s.c; ++c) {
        const std::size_t in = (std::size_t(n) * plane + p) * std::size_t(s.c) + std::size_t(c);
        const std::size_t out = layout == TensorLayout::nhwc
                                    ? in
                                    : (std::size_t(n) * std::size_t(s.c) + std::size_t(c)) * plane + p;
        const float v = normalized(src[in], norm, c);
        switch (type) {
          case ElementType::f32: static_cast<float*>(dst)[out] = v; break;
          case ElementType::f16: static_cast<std::uint16_t*>(dst)[out] = float_to_half_bits(v); break;
          case ElementType::bf16:
            static_cast<std::uint16_t*>(dst)[out] = float_to_bf16_bits(v);
            break;
          default: unsupported_element_type(type, "normalize_reference");
        }
      }
}

}  // namespace gb::data
