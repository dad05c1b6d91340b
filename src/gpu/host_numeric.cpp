// gpu/host_numeric.cpp: see host_numeric.hpp.
#include "gpu/host_numeric.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>

#include "core/error.hpp"

namespace gb::gpu {

std::vector<double> decode_elements(ElementType t, const void* data, std::size_t count) {
  std::vector<double> out(count);
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < count; ++i) {
    const unsigned char* p = bytes + i * element_bytes(t);
    switch (t) {
      case ElementType::f64: {
        double v;
        std::memcpy(&v, p, sizeof v);
        out[i] = v;
        break;
      }
      case ElementType::f32: {
        float v;
        std::memcpy(&v, p, sizeof v);
        out[i] = v;
        break;
      }
      case ElementType::f16: {
        std::uint16_t v;
        std::memcpy(&v, p, sizeof v);
        out[i] = half_bits_to_float(v);
        break;
      }
      case ElementType::bf16: {
        std::uint16_t v;
        std::memcpy(&v, p, sizeof v);
        out[i] = bf16_bits_to_float(v);
        break;
      }
      case ElementType::e4m3: out[i] = e4m3_bits_to_float(*p); break;
      case ElementType::i8: out[i] = static_cast<std::int8_t>(*p); break;
      case ElementType::i32: {
        std::int32_t v;
        std::memcpy(&v, p, sizeof v);
        out[i] = v;
        break;
      }
    }
  }
  return out;
}

double fill_value(ElementType t, std::uint64_t seed, std::uint64_t index) {
  const std::uint64_t h = fill_hash(seed, index);
  switch (t) {
    case ElementType::f64: return uniform_f64(h);
    case ElementType::f32: return uniform_f32(h);
    case ElementType::f16: return half_bits_to_float(float_to_half_bits(uniform_f32(h)));
    case ElementType::bf16: return bf16_bits_to_float(float_to_bf16_bits(uniform_f32(h)));
    case ElementType::e4m3: return e4m3_bits_to_float(float_to_e4m3_bits(uniform_f32(h)));
    case ElementType::i8: return uniform_i8(h);
    case ElementType::i32: return uniform_i32(h);
  }
  return 0;
}

std::string_view layout_name(GemmLayout l) {
  switch (l) {
    case GemmLayout::tn: return "TN";
    case GemmLayout::nn: return "NN";
  }
  return "unknown";
}

bool layout_allowed(GemmPrecision p, GemmLayout l) {
  return l == GemmLayout::tn || (p != GemmPrecision::fp8 && p != GemmPrecision::int8);
}

std::vector<double> gather_op_a_rows(GemmLayout layout, std::span<const double> stored_a,
                                     std::int64_t m, std::int64_t k,
                                     std::span<const std::int64_t> rows) {
  if (m <= 0 || k <= 0 || stored_a.size() != static_cast<std::size_t>(m * k)) {
    throw Error(ErrorKind::runtime, "gather_op_a_rows: A does not hold m * k elements");
  }
  std::vector<double> out;
  out.reserve(rows.size() * static_cast<std::size_t>(k));
  for (const std::int64_t r : rows) {
    if (r < 0 || r >= m) throw Error(ErrorKind::runtime, "gather_op_a_rows: row out of range");
    for (std::int64_t l = 0; l < k; ++l) out.push_back(stored_a[op_a_offset(layout, m, k, r, l)]);
  }
  return out;
}

std::string GemmCheck::describe() const {
  std::string s = "rel err " + format_sci(rel_err) + " over " + std::to_string(samples) +
                  " outputs (tol " + format_sci(tolerance) + ")";
  if (nonfinite > 0) s += ", " + std::to_string(nonfinite) + " outputs NaN or inf";
  return s;
}

GemmCheck check_gemm_samples(std::span<const double> a_rows, std::span<const double> b_cols,
                             std::span<const double> d, std::size_t k, double tolerance) {
  if (k == 0 || a_rows.size() % k != 0 || b_cols.size() % k != 0) {
    throw Error(ErrorKind::runtime, "check_gemm_samples: operand sizes are not multiples of k");
  }
  const std::size_t rows = a_rows.size() / k;
  const std::size_t cols = b_cols.size() / k;
  if (d.size() != rows * cols) {
    throw Error(ErrorKind::runtime, "check_gemm_samples: " + std::to_string(d.size()) +
                                        " outputs for " + std::to_string(rows) + " x " +
                                        std::to_string(cols) + " samples");
  }
  GemmCheck check;
  check.samples = rows * cols;
  check.tolerance = tolerance;
  // long double (x87 80-bit on x86-64) keeps the reference well below FP64's own rounding.
  long double err2 = 0;
  long double ref2 = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    const double* a = a_rows.data() + r * k;
    for (std::size_t c = 0; c < cols; ++c) {
      const double* b = b_cols.data() + c * k;
      long double ref = 0;
      for (std::size_t l = 0; l < k; ++l) ref += static_cast<long double>(a[l]) * b[l];
      const double out = d[r * cols + c];
      ref2 += ref * ref;
      if (!std::isfinite(out)) {
        ++check.nonfinite;
        continue;
      }
      const long double err = static_cast<long double>(out) - ref;
      err2 += err * err;
      check.max_abs_err = std::max(check.max_abs_err, static_cast<double>(std::fabs(err)));
    }
  }
  if (check.nonfinite > 0) {
    check.rel_err = INFINITY;
  } else {
    // All-zero reference (never with random inputs): the absolute error is what is left.
    check.rel_err = static_cast<double>(ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2));
  }
  return check;
}

// Napkin error model: inputs uniform in [-1, 1), so a product a*b has rms 1/3 and an output
// sums k of them: |ref| ~ sqrt(k)/3 (~43 at k = 16384). Summing k terms with a relative rounding
// error of rms delta per addition leaves an error of rms delta * k / sqrt(18), i.e. a relative
// error of delta * sqrt(k / 2) (~90 delta at k = 16384). Rounding the output to its type adds
// that type's delta once. Tolerances sit 3x or more above what the model gives, far below the
// O(1) error of a wrong layout, missing tile or uninitialised output.
double gemm_tolerance(GemmPrecision p) {
  switch (p) {
    case GemmPrecision::fp64:
      return 1e-12;  // delta 2^-53/sqrt(3): ~6e-15 at k = 16384
    case GemmPrecision::fp32:
      return 1e-5;  // delta 2^-24/sqrt(3): ~3e-6 at k = 16384
    case GemmPrecision::tf32:
      return 5e-3;  // inputs cut to 10 mantissa bits: ~2^-11 per product
    case GemmPrecision::fp16:
      return 5e-3;  // FP32 accumulation, FP16 output: ~2^-11/sqrt(3)
    case GemmPrecision::bf16:
      return 1e-2;  // FP32 accumulation, BF16 output: ~2^-8/sqrt(3) = 2e-3
    case GemmPrecision::fp8:
      return 5e-2;  // BF16 output plus Hopper's narrower FP8 accumulator
    case GemmPrecision::int8:
      return 0;  // int32 accumulation is exact: |sum| <= 2^14 k < 2^31
  }
  return 0;
}

std::vector<std::int64_t> sample_indices(std::int64_t n, std::size_t count, std::uint64_t seed) {
  std::vector<std::int64_t> out;
  if (n <= 0) return out;
  if (count >= static_cast<std::size_t>(n)) {
    out.resize(static_cast<std::size_t>(n));
    std::iota(out.begin(), out.end(), std::int64_t{0});
    return out;
  }
  if (count == 0) return out;
  out.push_back(0);
  if (count >= 2) out.push_back(n - 1);
  // The rest from [1, n - 1) by a partial Fisher-Yates shuffle driven by the fill hash.
  const std::size_t rest = count - out.size();
  std::vector<std::int64_t> pool(static_cast<std::size_t>(std::max<std::int64_t>(n - 2, 0)));
  std::iota(pool.begin(), pool.end(), std::int64_t{1});
  for (std::size_t i = 0; i < rest && i < pool.size(); ++i) {
    const std::size_t j = i + static_cast<std::size_t>(fill_hash(seed, i) % (pool.size() - i));
    std::swap(pool[i], pool[j]);
    out.push_back(pool[i]);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string format_sci(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*e", digits, v);
  return buf;
}

}  // namespace gb::gpu
