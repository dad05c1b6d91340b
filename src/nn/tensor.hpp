// nn/tensor.hpp: what the engine knows about a device tensor: a 4-D shape (N, C, H, W), an
// element type (f32, f16, bf16) and a layout (NCHW or NHWC), plus host-side conversions used to
// move reference data (always FP32 NCHW on the host) in and out of any device layout/type.
// Plain C++: no cuDNN here.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/vocabulary.hpp"

namespace gb::nn {

// The engine's element types are f32, f16 and bf16 of core's ElementType (gb::element_bytes
// sizes them); the functions here throw unsupported_element_type for the others.
// The short spelling in algorithm-cache keys and messages: "f32", "f16", "bf16".
const char* dtype_name(ElementType t);

struct Shape {
  int n = 1, c = 1, h = 1, w = 1;
  std::size_t elements() const {
    return static_cast<std::size_t>(n) * static_cast<std::size_t>(c) *
           static_cast<std::size_t>(h) * static_cast<std::size_t>(w);
  }
  std::size_t per_sample() const { return elements() / static_cast<std::size_t>(n); }
  std::string to_string() const;  // "256x64x56x56"
  bool operator==(const Shape&) const = default;
};

// A view of device memory holding one tensor. Does not own.
struct TensorRef {
  void* data = nullptr;
  Shape shape;
  ElementType dtype = ElementType::f32;
  bool nhwc = false;
  std::size_t bytes() const { return shape.elements() * element_bytes(dtype); }
};

// Index of element (n, c, h, w) in a buffer of this shape and layout.
inline std::size_t element_index(const Shape& s, bool nhwc, int n, int c, int h, int w) {
  const std::size_t N = static_cast<std::size_t>(n);
  if (nhwc) return ((N * s.h + h) * s.w + w) * s.c + c;
  return ((N * s.c + c) * s.h + h) * s.w + w;
}

// Host conversions, round to nearest even (the same rounding the device casts use).
std::uint16_t float_to_half_bits(float f);
float half_bits_to_float(std::uint16_t h);
std::uint16_t float_to_bf16_bits(float f);
float bf16_bits_to_float(std::uint16_t b);
// `v` rounded to the precision of `t` (identity for f32): what the device will see.
float round_to(ElementType t, float v);

// Host FP32 NCHW values -> the bytes of a tensor with this shape/layout/type, and back.
std::vector<unsigned char> pack_host(const std::vector<float>& nchw, const Shape& s, bool nhwc,
                                     ElementType t);
std::vector<float> unpack_host(const void* bytes, const Shape& s, bool nhwc, ElementType t);

// Synchronous copies between a host FP32 NCHW vector and a device tensor (any layout/type);
// both synchronise the whole device (test and setup paths, never the step).
void upload_nchw(const TensorRef& dst, const std::vector<float>& nchw);
std::vector<float> download_nchw(const TensorRef& src);

}  // namespace gb::nn
