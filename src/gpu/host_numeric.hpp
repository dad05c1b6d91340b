// gpu/host_numeric.hpp: the host-side numerics the GEMM probe checks its answers with, kept free
// of CUDA so the CPU tests cover them (tests/unit/test_gpu_host_numeric.cpp):
//   - element types as stored on the device and bit-level converters for FP16, BF16 and
//     FP8 E4M3 (round to nearest even, like the device intrinsics the fill kernels use);
//   - the counter-based hash behind the random fills (gpu/fill.hpp): element i of a buffer
//     filled with seed s is a pure function of (s, i), the same on host and device, so a test
//     can recompute any element on the CPU;
//   - the GEMM validator: a double-precision reference over sampled outputs and the relative
//     error ||out - ref|| / ||ref|| against a per-precision tolerance.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/float_bits.hpp"
#include "core/vocabulary.hpp"

#include "core/gpu_specs.hpp"

#if !defined(GB_HOST_DEVICE)
#if defined(__CUDACC__)
#define GB_HOST_DEVICE __host__ __device__
#else
#define GB_HOST_DEVICE
#endif
#endif

namespace gb::gpu {

// How one element is stored in device memory: core/vocabulary.hpp's ElementType (to_string
// spells it "fp64", "fp32", "fp16", "bf16", "fp8e4m3", ...).
using gb::ElementType;
using gb::element_bytes;

// Bit-level converters (half, bfloat16, FP8 E4M3 <-> float): core/float_bits.hpp.
using gb::bf16_bits_to_float;
using gb::e4m3_bits_to_float;
using gb::float_to_bf16_bits;
using gb::float_to_e4m3_bits;
using gb::float_to_half_bits;
using gb::half_bits_to_float;

// Decodes `count` elements of type t starting at `data` (host memory) into doubles (exact for
// every type here).
std::vector<double> decode_elements(ElementType t, const void* data, std::size_t count);

// --- the counter-based hash of the random fills ------------------------------------------------
// splitmix64's output function (Steele, Lea, Flood 2014): a bijection on 64-bit words whose
// output bits all depend on all input bits.
GB_HOST_DEVICE inline std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Element `index` of the stream keyed by `seed`: splitmix64's state after index + 1 steps from
// a mixed seed, so it is counter-based (no state carried between elements or threads).
GB_HOST_DEVICE inline std::uint64_t fill_hash(std::uint64_t seed, std::uint64_t index) {
  return mix64(mix64(seed) + (index + 1) * 0x9E3779B97F4A7C15ull);
}

// Uniform on [-1, 1) in steps of 2^-23 from the top 24 bits. Every step is exact: the integer
// fits a float's 24-bit significand and the scale is a power of two, so host and device agree
// to the bit (also under FMA contraction).
GB_HOST_DEVICE inline float uniform_f32(std::uint64_t h) {
  const std::int32_t q = static_cast<std::int32_t>(h >> 40) - (std::int32_t{1} << 23);
  return static_cast<float>(q) * 0x1p-23f;
}

// Uniform on [-1, 1) in steps of 2^-52 from the top 53 bits (exact, as above).
GB_HOST_DEVICE inline double uniform_f64(std::uint64_t h) {
  const std::int64_t q = static_cast<std::int64_t>(h >> 11) - (std::int64_t{1} << 52);
  return static_cast<double>(q) * 0x1p-52;
}

// Uniform on [-128, 127]: the top byte.
GB_HOST_DEVICE inline std::int8_t uniform_i8(std::uint64_t h) {
  return static_cast<std::int8_t>(static_cast<std::uint8_t>(h >> 56));
}

// Uniform over all int32 values: the top 32 bits.
GB_HOST_DEVICE inline std::int32_t uniform_i32(std::uint64_t h) {
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(h >> 32));
}

// The value element `index` of a buffer of type t filled with `seed` holds (decoded): floats are
// uniform_f32/f64 converted to the type (round to nearest even), integers uniform_i8/i32.
double fill_value(ElementType t, std::uint64_t seed, std::uint64_t index);

// --- GEMM operand layouts ----------------------------------------------------------------------
// Both column-major, D (m x n, ld m) = op(A) * B with B stored k x n (ld k) in both:
//   tn: A stored k x m (ld k), op(A) = A^T. Row r of op(A) is contiguous (k elements at r * k).
//       The only layout cuBLASLt's FP8 and INT8 tensor-core kernels accept on Hopper.
//   nn: A stored m x k (ld m), op(A) = A. Row r of op(A) is strided (element l at r + l * m).
//       What PyTorch's row-major C = X @ Y turns into: cuBLAS computes C^T = Y^T X^T with both
//       operations N on the column-major view of the same memory.
enum class GemmLayout { tn, nn };

std::string_view layout_name(GemmLayout l);  // "TN", "NN"
// false for FP8 and INT8 with nn (cuBLASLt offers them TN only).
bool layout_allowed(GemmPrecision p, GemmLayout l);

// Offset in elements, from the start of the stored A, of op(A)(row, l) (0 <= row < m,
// 0 <= l < k).
constexpr std::size_t op_a_offset(GemmLayout layout, std::int64_t m, std::int64_t k,
                                  std::int64_t row, std::int64_t l) {
  return layout == GemmLayout::tn ? static_cast<std::size_t>(l + row * k)
                                  : static_cast<std::size_t>(row + l * m);
}

// Rows `rows` of op(A), k values each, row after row (the a_rows of check_gemm_samples), from
// the whole stored A (m * k decoded elements). Throws gb::Error on a size or index mismatch.
std::vector<double> gather_op_a_rows(GemmLayout layout, std::span<const double> stored_a,
                                     std::int64_t m, std::int64_t k,
                                     std::span<const std::int64_t> rows);

// --- GEMM validation ---------------------------------------------------------------------------
// Sampled outputs of D = op(A) * op(B) compared with a reference computed in long double from
// the inputs as stored (already rounded to their type), so only the GEMM's own arithmetic
// (accumulation order, TF32 rounding inside the tensor cores, rounding of the output) counts.
struct GemmCheck {
  std::size_t samples = 0;    // outputs compared
  std::size_t nonfinite = 0;  // outputs that are NaN or inf (any one fails the check)
  double rel_err = 0;         // ||out - ref||_2 / ||ref||_2 over the samples
  double max_abs_err = 0;
  double tolerance = 0;
  bool ok() const { return nonfinite == 0 && rel_err <= tolerance; }
  // "rel err 1.2e-04 over 256 outputs (tol 1.0e-02)"
  std::string describe() const;
};

// a_rows: `rows` rows of op(A), k values each, row after row. b_cols: `cols` columns of op(B),
// k values each. d: the GEMM's outputs at those rows and columns, d[r * cols + c]. Throws
// gb::Error when the sizes do not fit together.
GemmCheck check_gemm_samples(std::span<const double> a_rows, std::span<const double> b_cols,
                             std::span<const double> d, std::size_t k, double tolerance);

// Tolerance on the relative error for a GEMM of this precision with k up to 16384 and inputs
// uniform in [-1, 1) (the derivation is next to the table in host_numeric.cpp).
double gemm_tolerance(GemmPrecision p);

// `count` distinct indices in [0, n), sorted, always including 0 and n - 1 (the edge tiles);
// every index when count >= n. Deterministic for a seed.
std::vector<std::int64_t> sample_indices(std::int64_t n, std::size_t count, std::uint64_t seed);

// "%.*e" without iostreams: 1.2e-04.
std::string format_sci(double v, int digits = 1);

}  // namespace gb::gpu
