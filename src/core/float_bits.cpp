// core/float_bits.cpp: see float_bits.hpp.
#include "core/float_bits.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace gb {

namespace {

// A small binary floating-point format: 1 sign bit, exp_bits, man_bits, exponent bias.
struct MiniFloat {
  int exp_bits;
  int man_bits;
  int bias;
};
constexpr MiniFloat kHalf{5, 10, 15};
constexpr MiniFloat kE4m3{4, 3, 7};

// Magnitude of a finite code without its sign bit: subnormal (exponent field 0) or normal.
double decode_magnitude(MiniFloat f, std::uint32_t exp_field, std::uint32_t man) {
  if (exp_field == 0) return std::ldexp(static_cast<double>(man), 1 - f.bias - f.man_bits);
  return std::ldexp(1.0 + std::ldexp(static_cast<double>(man), -f.man_bits),
                    static_cast<int>(exp_field) - f.bias);
}

// Rounds a finite, non-negative magnitude to the nearest code (ties to even) without the sign
// bit. The result may exceed the largest finite code; callers handle overflow. Every step is
// exact in double (scaling by powers of two, subtracting 1 from a significand in [1, 2)), and
// std::nearbyint rounds ties to even in the default rounding mode.
std::uint32_t round_magnitude(MiniFloat f, double a) {
  const int min_normal_exp = 1 - f.bias;
  if (a < std::ldexp(1.0, min_normal_exp)) {
    // Subnormal range: code = round(a / 2^(min_normal_exp - man_bits)). A result of
    // 2^man_bits is the smallest normal, whose code is the same integer.
    return static_cast<std::uint32_t>(std::nearbyint(std::ldexp(a, f.man_bits - min_normal_exp)));
  }
  int e2 = 0;
  const double fr = std::frexp(a, &e2);  // a = fr * 2^e2, fr in [0.5, 1)
  const int e = e2 - 1;                  // a = (2 fr) * 2^e, 2 fr in [1, 2)
  auto man = static_cast<std::uint32_t>(std::nearbyint(std::ldexp(2 * fr - 1, f.man_bits)));
  auto exp_field = static_cast<std::uint32_t>(e + f.bias);
  if (man == (1u << f.man_bits)) {  // rounded up to the next power of two
    man = 0;
    ++exp_field;
  }
  return (exp_field << f.man_bits) | man;
}

}  // namespace

float half_bits_to_float(std::uint16_t bits) {
  const bool neg = (bits & 0x8000u) != 0;
  const std::uint32_t exp_field = (bits >> 10) & 0x1Fu;
  const std::uint32_t man = bits & 0x3FFu;
  double v = 0;
  if (exp_field == 0x1F) {
    v = man == 0 ? INFINITY : NAN;
  } else {
    v = decode_magnitude(kHalf, exp_field, man);
  }
  return static_cast<float>(neg ? -v : v);
}

float bf16_bits_to_float(std::uint16_t bits) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

float e4m3_bits_to_float(std::uint8_t bits) {
  const bool neg = (bits & 0x80u) != 0;
  const std::uint32_t exp_field = (bits >> 3) & 0xFu;
  const std::uint32_t man = bits & 0x7u;
  if (exp_field == 0xF && man == 0x7) return NAN;
  const double v = decode_magnitude(kE4m3, exp_field, man);
  return static_cast<float>(neg ? -v : v);
}

std::uint16_t float_to_half_bits(float x) {
  const std::uint32_t sign = (std::bit_cast<std::uint32_t>(x) >> 16) & 0x8000u;
  if (std::isnan(x)) return static_cast<std::uint16_t>(sign | 0x7E00u);
  const double a = std::fabs(static_cast<double>(x));
  if (std::isinf(a)) return static_cast<std::uint16_t>(sign | 0x7C00u);
  const std::uint32_t code = round_magnitude(kHalf, a);
  if (code >= 0x7C00u) return static_cast<std::uint16_t>(sign | 0x7C00u);  // overflow to inf
  return static_cast<std::uint16_t>(sign | code);
}

std::uint16_t float_to_bf16_bits(float x) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
  if (std::isnan(x)) return static_cast<std::uint16_t>((bits >> 16) | 0x0040u);  // quiet NaN
  // Round to nearest even on the 16 dropped bits; a carry into the exponent is the right answer
  // (up to and including overflow to inf).
  const std::uint32_t rounding = 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>((bits + rounding) >> 16);
}

std::uint8_t float_to_e4m3_bits(float x) {
  const std::uint32_t sign = (std::bit_cast<std::uint32_t>(x) >> 24) & 0x80u;
  if (std::isnan(x)) return 0x7F;
  constexpr std::uint32_t kMaxFinite = 0x7E;  // 448 = 1.75 * 2^8
  const double a = std::fabs(static_cast<double>(x));
  const std::uint32_t code = std::isinf(a) ? kMaxFinite : round_magnitude(kE4m3, a);
  return static_cast<std::uint8_t>(sign | std::min(code, kMaxFinite));
}

}  // namespace gb
