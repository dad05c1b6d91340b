// nn/tensor.cpp: see tensor.hpp.
#include "nn/tensor.hpp"

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "core/error.hpp"
#include "gpu/check.hpp"

namespace gb::nn {

const char* dtype_name(ElementType t) {
  switch (t) {
    case ElementType::f32: return "f32";
    case ElementType::f16: return "f16";
    case ElementType::bf16: return "bf16";
    default: unsupported_element_type(t, "nn::dtype_name");
  }
}

std::string Shape::to_string() const {
  return std::to_string(n) + "x" + std::to_string(c) + "x" + std::to_string(h) + "x" +
         std::to_string(w);
}

namespace {
std::uint32_t bits_of(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
float float_of(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// The engine's element types only.
void check_engine_dtype(ElementType t, const char* where) {
  if (t != ElementType::f32 && t != ElementType::f16 && t != ElementType::bf16)
    unsupported_element_type(t, where);
}

}  // namespace

std::uint16_t float_to_half_bits(float f) {
  const std::uint32_t x = bits_of(f);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or NaN
    return static_cast<std::uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  }
  if (abs >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (abs < 0x38800000u) {  // subnormal half (or zero): scale by 2^24 and round
    const float scaled = float_of(abs) * 16777216.0f;  // exact in float
    const float r = std::nearbyint(scaled);              // round-half-even (default mode)
    return static_cast<std::uint16_t>(sign | static_cast<std::uint32_t>(r));
  }
  // Normal: rebias exponent 127 -> 15, round mantissa 23 -> 10 bits to nearest even.
  std::uint32_t m = abs - 0x38000000u;  // subtract (127-15) << 23
  const std::uint32_t lsb = (m >> 13) & 1u;
  m += 0xfffu + lsb;
  return static_cast<std::uint16_t>(sign | (m >> 13));
}

float half_bits_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  const std::uint32_t man = h & 0x3ffu;
  if (exp == 0) {
    const float v = static_cast<float>(man) / 16777216.0f;
    return sign ? -v : v;
  }
  if (exp == 31) return float_of(sign | 0x7f800000u | (man << 13));
  return float_of(sign | ((exp + 112u) << 23) | (man << 13));
}

std::uint16_t float_to_bf16_bits(float f) {
  const std::uint32_t x = bits_of(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);
  const std::uint32_t lsb = (x >> 16) & 1u;
  return static_cast<std::uint16_t>((x + 0x7fffu + lsb) >> 16);
}

float bf16_bits_to_float(std::uint16_t b) { return float_of(static_cast<std::uint32_t>(b) << 16); }

float round_to(ElementType t, float v) {
  switch (t) {
    case ElementType::f32: return v;
    case ElementType::f16: return half_bits_to_float(float_to_half_bits(v));
    case ElementType::bf16: return bf16_bits_to_float(float_to_bf16_bits(v));
    default: unsupported_element_type(t, "nn::round_to");
  }
}

std::vector<unsigned char> pack_host(const std::vector<float>& nchw, const Shape& s, bool nhwc,
                                     ElementType t) {
  check_engine_dtype(t, "nn::pack_host");
  if (nchw.size() != s.elements()) {
    throw Error(ErrorKind::runtime, "pack_host: " + std::to_string(nchw.size()) +
                                        " values for a tensor of shape " + s.to_string());
  }
  std::vector<unsigned char> out(s.elements() * element_bytes(t));
  std::size_t i = 0;
  for (int n = 0; n < s.n; ++n)
    for (int c = 0; c < s.c; ++c)
      for (int h = 0; h < s.h; ++h)
        for (int w = 0; w < s.w; ++w, ++i) {
          const std::size_t j = element_index(s, nhwc, n, c, h, w);
          const float v = nchw[i];
          if (t == ElementType::f32) {
            std::memcpy(out.data() + 4 * j, &v, 4);
          } else {
            const std::uint16_t b =
                t == ElementType::f16 ? float_to_half_bits(v) : float_to_bf16_bits(v);
            std::memcpy(out.data() + 2 * j, &b, 2);
          }
        }
  return out;
}

std::vector<float> unpack_host(const void* bytes, const Shape& s, bool nhwc, ElementType t) {
  check_engine_dtype(t, "nn::unpack_host");
  const auto* p = static_cast<const unsigned char*>(bytes);
  std::vector<float> out(s.elements());
  std::size_t i = 0;
  for (int n = 0; n < s.n; ++n)
    for (int c = 0; c < s.c; ++c)
      for (int h = 0; h < s.h; ++h)
        for (int w = 0; w < s.w; ++w, ++i) {
          const std::size_t j = element_index(s, nhwc, n, c, h, w);
          if (t == ElementType::f32) {
            std::memcpy(&out[i], p + 4 * j, 4);
          } else {
            std::uint16_t b;
            std::memcpy(&b, p + 2 * j, 2);
            out[i] = t == ElementType::f16 ? half_bits_to_float(b) : bf16_bits_to_float(b);
          }
        }
  return out;
}

void upload_nchw(const TensorRef& dst, const std::vector<float>& nchw) {
  const std::vector<unsigned char> bytes = pack_host(nchw, dst.shape, dst.nhwc, dst.dtype);
  GB_CHECK_CUDA(cudaMemcpy(dst.data, bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
  // A pageable copy may still be in flight when cudaMemcpy returns, on the legacy stream, which
  // non-blocking streams do not wait for.
  GB_CHECK_CUDA(cudaDeviceSynchronize());
}

std::vector<float> download_nchw(const TensorRef& src) {
  std::vector<unsigned char> bytes(src.bytes());
  GB_CHECK_CUDA(cudaDeviceSynchronize());  // work on any stream that writes src
  GB_CHECK_CUDA(cudaMemcpy(bytes.data(), src.data, bytes.size(), cudaMemcpyDeviceToHost));
  return unpack_host(bytes.data(), src.shape, src.nhwc, src.dtype);
}

}  // namespace gb::nn
