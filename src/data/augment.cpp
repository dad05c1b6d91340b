// data/augment.cpp: RandomResizedCrop / flip / center-crop boxes, and the fused antialiased
// bilinear crop + resize + flip kernel (PIL's ImagingResample, in the same fixed point).
#include "data/augment.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "core/error.hpp"

namespace gb::data {
namespace {

// Python 3's round(): to nearest, ties to even (torchvision's int(round(...))).
int round_half_even(double v) {
  const double f = std::floor(v);
  const double diff = v - f;
  if (diff > 0.5) return static_cast<int>(f) + 1;
  if (diff < 0.5) return static_cast<int>(f);
  const int i = static_cast<int>(f);
  return (i % 2 == 0) ? i : i + 1;
}

// x86-64: also compile an AVX2 version, chosen at load time when the CPU has it (GCC/Clang
// function multiversioning): a clone of the same source (GB_CLONE_AVX2), or a hand-vectorised
// version beside the portable one (GB_AVX2_VERSION, GB_DEFAULT_VERSION). Elsewhere (aarch64
// hosts), the one portable version.
// ThreadSanitizer instruments the ifunc resolvers that pick a version, and they run before its
// runtime starts (the binary crashes at load): under TSan, the one portable version.
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define GB_UNDER_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define GB_UNDER_TSAN 1
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(GB_UNDER_TSAN)
#define GB_X86_MULTIVERSION 1
#define GB_CLONE_AVX2 __attribute__((target_clones("avx2", "default")))
#define GB_AVX2_VERSION __attribute__((target("avx2")))
#define GB_DEFAULT_VERSION __attribute__((target("default")))
#else
#define GB_X86_MULTIVERSION 0
#define GB_CLONE_AVX2
#define GB_DEFAULT_VERSION
#endif

// PIL's fixed point for 8-bit images: coefficients with 22 fraction bits, so 255 * 2^22 * (sum
// of coefficients = 1) stays inside int32.
constexpr int kPrecisionBits = 22;
constexpr std::int32_t kHalf = std::int32_t{1} << (kPrecisionBits - 1);

std::uint8_t clip8(std::int32_t acc) {
  const std::int32_t v = acc >> kPrecisionBits;
  return static_cast<std::uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
}

// Filter taps of one axis (PIL's precompute_coeffs with the bilinear/triangle filter): output
// pixel i covers [start + i*scale, start + (i+1)*scale) of the source; its taps run from
// bounds[2i] (relative to `lo`, the first source index the crop touches) for bounds[2i+1]
// taps, weights at coeffs[i*ksize ...]. Returns ksize, the stride between pixels' weights.
int precompute_taps(double start, double length, int lo, int hi, int out_size,
                    std::vector<std::int32_t>& coeffs, std::vector<int>& bounds) {
  const double scale = length / out_size;
  const double filter_scale = std::max(scale, 1.0);
  const double support = 1.0 * filter_scale;  // the triangle's support is 1 at scale 1
  const int ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  coeffs.assign(static_cast<std::size_t>(out_size) * ksize, 0);
  bounds.resize(static_cast<std::size_t>(out_size) * 2);
  double weights[64];
  for (int i = 0; i < out_size; ++i) {
    const double center = start + (i + 0.5) * scale;
    const int xmin = std::max(static_cast<int>(std::floor(center - support + 0.5)), lo);
    const int xmax = std::min(static_cast<int>(std::floor(center + support + 0.5)), hi);
    const int n = std::min(std::max(xmax - xmin, 1), ksize);
    double total = 0;
    for (int k = 0; k < n; ++k) {
      const double t = std::fabs((k + xmin - center + 0.5) / filter_scale);
      weights[k] = t < 1.0 ? 1.0 - t : 0.0;
      total += weights[k];
    }
    std::int32_t* out = &coeffs[static_cast<std::size_t>(i) * ksize];
    for (int k = 0; k < n; ++k) {
      const double w = total > 0 ? weights[k] / total : (k == 0 ? 1.0 : 0.0);
      out[k] = static_cast<std::int32_t>(w * (1 << kPrecisionBits) + 0.5);
    }
    bounds[2 * static_cast<std::size_t>(i)] = std::min(xmin, hi - 1) - lo;
    bounds[2 * static_cast<std::size_t>(i) + 1] = n;
  }
  return ksize;
}

// One output pixel of the horizontal pass, scalar: grey rows, and the last pixel of an RGB row
// of odd width. `step` is the distance between the pixel's channels in dst (1: HWC, the plane
// size: CHW).
template <int C>
void horizontal_pixel(const std::uint8_t* in, const std::int32_t* k, int xmin, int n,
                      std::uint8_t* out, std::size_t step) {
  const std::uint8_t* p = in + static_cast<std::size_t>(xmin) * C;
  std::int32_t acc[C];
  for (int c = 0; c < C; ++c) acc[c] = kHalf;
  for (int t = 0; t < n; ++t) {
    for (int c = 0; c < C; ++c) acc[c] += k[t] * p[t * C + c];
  }
  for (int c = 0; c < C; ++c) out[c * step] = clip8(acc[c]);
}

// Where output pixel xx of row y goes (mirrored when flipping) and how far apart its channels
// are: 1 byte in HWC, a plane in CHW.
struct OutputLayout {
  std::uint8_t* dst;
  int out_w, out_h;
  bool flip;
  std::size_t pixel_step, channel_step;
  OutputLayout(std::uint8_t* dst_, int out_w_, int out_h_, bool flip_, PixelLayout layout,
               int channels)
      : dst(dst_),
        out_w(out_w_),
        out_h(out_h_),
        flip(flip_),
        pixel_step(layout == PixelLayout::hwc ? static_cast<std::size_t>(channels) : 1),
        channel_step(layout == PixelLayout::hwc ? 1 : static_cast<std::size_t>(out_w_) * out_h_) {}
  std::uint8_t* at(int y, int xx) const {
    const int xo = flip ? out_w - 1 - xx : xx;
    return dst + (static_cast<std::size_t>(y) * out_w + xo) * pixel_step;
  }
};

void horizontal_pass_grey(const std::uint8_t* rows, int row_len, const std::int32_t* coeffs,
                          const int* bounds, int ksize, const OutputLayout& out) {
  for (int y = 0; y < out.out_h; ++y) {
    const std::uint8_t* in = rows + static_cast<std::size_t>(y) * row_len;
    for (int xx = 0; xx < out.out_w; ++xx) {
      horizontal_pixel<1>(in, coeffs + static_cast<std::size_t>(xx) * ksize, bounds[2 * xx],
                          bounds[2 * xx + 1], out.at(y, xx), out.channel_step);
    }
  }
}

// RGB taps laid out for two output pixels per 8-lane vector (horizontal_pass_rgb): for pair p
// (pixels 2p and 2p+1) and tap t, 8 weights -- 4 x pixel 2p's, 4 x pixel 2p+1's -- at
// pair_coeffs[(p * ksize + t) * 8]; pair_bounds[3p ..] = the two pixels' first source bytes
// and the pair's tap count, the larger of the two (the shorter pixel's extra taps weigh 0).
void pair_taps(const std::vector<std::int32_t>& coeffs, const std::vector<int>& bounds, int ksize,
               int out_w, std::vector<std::int32_t>& pair_coeffs, std::vector<int>& pair_bounds) {
  const int pairs = out_w / 2;
  pair_coeffs.assign(static_cast<std::size_t>(pairs) * ksize * 8, 0);
  pair_bounds.resize(static_cast<std::size_t>(pairs) * 3);
  for (int p = 0; p < pairs; ++p) {
    const int a = 2 * p, b = 2 * p + 1;
    for (int t = 0; t < ksize; ++t) {
      std::int32_t* lanes = &pair_coeffs[(static_cast<std::size_t>(p) * ksize + t) * 8];
      const std::int32_t ka =
          t < bounds[2 * a + 1] ? coeffs[static_cast<std::size_t>(a) * ksize + t] : 0;
      const std::int32_t kb =
          t < bounds[2 * b + 1] ? coeffs[static_cast<std::size_t>(b) * ksize + t] : 0;
      std::fill(lanes, lanes + 4, ka);
      std::fill(lanes + 4, lanes + 8, kb);
    }
    pair_bounds[3 * static_cast<std::size_t>(p)] = bounds[2 * a] * 3;
    pair_bounds[3 * static_cast<std::size_t>(p) + 1] = bounds[2 * b] * 3;
    pair_bounds[3 * static_cast<std::size_t>(p) + 2] =
        std::max(bounds[2 * a + 1], bounds[2 * b + 1]);
  }
}

#if GB_X86_MULTIVERSION
// GCC/Clang vector types, compiled for AVX2 only: the byte shuffle below is one vpshufb there,
// but byte-by-byte code in SSE2 (measured: 3.4 ms per sample, against 0.55 ms for the scalar
// pass). The same 32-bit fixed point as the scalar pixel, so the same bytes.
using I32x8 = std::int32_t __attribute__((vector_size(32)));
using U32x8 = std::uint32_t __attribute__((vector_size(32)));
using U8x32 = std::uint8_t __attribute__((vector_size(32)));
using U8x8 = std::uint8_t __attribute__((vector_size(8)));

// The horizontal pass for RGB, two output pixels per vector: lanes 0-3 hold pixel a's R, G, B
// (and the next byte, weighted but never stored), lanes 4-7 pixel b's. Per tap: two 4-byte
// loads, one insert, one byte shuffle that widens to 32 bits, one multiply and one add (6
// instructions with AVX2) for 6 output bytes, where the scalar loop spends 3 loads, 3
// multiplies and 3 adds on 3. The loads run up to (ksize - 1) * 3 + 1 bytes past a row's end:
// into the next row, or the padding resize_crop_flip puts after the last one, always with
// weight 0.
GB_AVX2_VERSION void horizontal_pass_rgb(const std::uint8_t* rows, int row_len,
                                         const std::int32_t* pair_coeffs, const int* pair_bounds,
                                         const std::int32_t* coeffs, const int* bounds, int ksize,
                                         const OutputLayout& layout) {
  const OutputLayout out = layout;  // a local copy: stores through dst cannot change it
  const int pairs = out.out_w / 2;
  const I32x8 zero = {};
  const I32x8 max8 = zero + 255;
  const std::ptrdiff_t b_offset = static_cast<std::ptrdiff_t>(out.pixel_step) * (out.flip ? -1 : 1);
  const bool hwc = out.channel_step == 1;
  for (int y = 0; y < out.out_h; ++y) {
    const std::uint8_t* in = rows + static_cast<std::size_t>(y) * row_len;
    for (int p = 0; p < pairs; ++p) {
      const std::uint8_t* pa = in + pair_bounds[3 * p];
      const std::uint8_t* pb = in + pair_bounds[3 * p + 1];
      const int n = pair_bounds[3 * p + 2];
      const std::int32_t* k = pair_coeffs + static_cast<std::size_t>(p) * ksize * 8;
      I32x8 acc = zero + kHalf;
      for (int t = 0; t < n; ++t) {
        std::uint32_t wa, wb;
        std::memcpy(&wa, pa + 3 * t, 4);
        std::memcpy(&wb, pb + 3 * t, 4);
        // Bytes 4-15 and 20-31 are zero: the shuffle takes its zero extension from them.
        const U8x32 words = __builtin_bit_cast(U8x32, (U32x8{wa, 0, 0, 0, wb, 0, 0, 0}));
        const I32x8 pixels = __builtin_bit_cast(
            I32x8, __builtin_shufflevector(words, words, 0, 4, 4, 4, 1, 4, 4, 4, 2, 4, 4, 4, 3, 4,
                                           4, 4, 16, 20, 20, 20, 17, 20, 20, 20, 18, 20, 20, 20, 19,
                                           20, 20, 20));
        I32x8 w;
        std::memcpy(&w, k + 8 * t, sizeof w);
        acc += pixels * w;
      }
      acc >>= kPrecisionBits;
      acc = acc < zero ? zero : acc;
      acc = acc > max8 ? max8 : acc;
      const U8x32 bytes = __builtin_bit_cast(U8x32, acc);
      std::uint8_t* oa = out.at(y, 2 * p);
      if (hwc) {
        // The pair's 6 bytes are adjacent: a then b, or b then a when mirrored. Two stores.
        const U8x8 six = out.flip ? __builtin_shufflevector(bytes, bytes, 16, 20, 24, 0, 4, 8, 0, 0)
                                  : __builtin_shufflevector(bytes, bytes, 0, 4, 8, 16, 20, 24, 0, 0);
        std::memcpy(out.flip ? oa - 3 : oa, &six, 6);
        continue;
      }
      std::uint8_t* ob = oa + b_offset;
      for (int c = 0; c < 3; ++c) {
        oa[c * out.channel_step] = bytes[4 * c];
        ob[c * out.channel_step] = bytes[16 + 4 * c];
      }
    }
    if (out.out_w % 2 != 0) {
      const int xx = out.out_w - 1;
      horizontal_pixel<3>(in, coeffs + static_cast<std::size_t>(xx) * ksize, bounds[2 * xx],
                          bounds[2 * xx + 1], out.at(y, xx), out.channel_step);
    }
  }
}
#endif

// The horizontal pass for RGB without AVX2: one pixel at a time.
GB_DEFAULT_VERSION void horizontal_pass_rgb(const std::uint8_t* rows, int row_len,
                                            const std::int32_t* /*pair_coeffs*/,
                                            const int* /*pair_bounds*/, const std::int32_t* coeffs,
                                            const int* bounds, int ksize, const OutputLayout& out) {
  for (int y = 0; y < out.out_h; ++y) {
    const std::uint8_t* in = rows + static_cast<std::size_t>(y) * row_len;
    for (int xx = 0; xx < out.out_w; ++xx) {
      horizontal_pixel<3>(in, coeffs + static_cast<std::size_t>(xx) * ksize, bounds[2 * xx],
                          bounds[2 * xx + 1], out.at(y, xx), out.channel_step);
    }
  }
}

// The vertical pass: output row y = weighted sum of source rows, over row_len bytes. The
// inner loop runs over a contiguous row with one weight, so the compiler vectorises it; the
// AVX2 clone (picked at load time where the CPU has it) widens 8 bytes per instruction and
// multiplies 32-bit lanes natively (SSE2 has no 32-bit multiply).
GB_CLONE_AVX2 void vertical_pass(const std::uint8_t* base, int stride, int y_lo, int row_len,
                                 const std::int32_t* coeffs, const int* bounds, int ksize,
                                 int out_h, std::int32_t* acc, std::uint8_t* rows) {
  for (int y = 0; y < out_h; ++y) {
    const int ymin = bounds[2 * y] + y_lo;
    const int n = bounds[2 * y + 1];
    const std::int32_t* k = coeffs + static_cast<std::size_t>(y) * ksize;
    for (int i = 0; i < row_len; ++i) acc[i] = kHalf;
    for (int t = 0; t < n; ++t) {
      const std::uint8_t* row = base + static_cast<std::size_t>(ymin + t) * stride;
      const std::int32_t w = k[t];
      for (int i = 0; i < row_len; ++i) acc[i] += w * row[i];
    }
    std::uint8_t* out = rows + static_cast<std::size_t>(y) * row_len;
    for (int i = 0; i < row_len; ++i) out[i] = clip8(acc[i]);
  }
}

}  // namespace

namespace detail {

void check_image_size(int width, int height) {
  if (width <= 0 || height <= 0) {
    throw Error(ErrorKind::usage, "random_resized_crop: empty image " + std::to_string(width) +
                                      "x" + std::to_string(height));
  }
}

bool crop_attempt(int width, int height, double u_area, double u_log_ratio, CropScale scale,
                  CropRatio ratio, int& w, int& h) {
  const double area = static_cast<double>(width) * height;
  const double log_min = std::log(ratio.min);
  const double log_max = std::log(ratio.max);
  const double target_area = area * (scale.min + u_area * (scale.max - scale.min));
  const double aspect = std::exp(log_min + u_log_ratio * (log_max - log_min));
  w = round_half_even(std::sqrt(target_area * aspect));
  h = round_half_even(std::sqrt(target_area / aspect));
  return 0 < w && w <= width && 0 < h && h <= height;
}

CropBox crop_fallback(int width, int height, CropRatio ratio) {
  const double in_ratio = static_cast<double>(width) / height;
  int w = width;
  int h = height;
  if (in_ratio < std::min(ratio.min, ratio.max)) {
    h = round_half_even(w / std::min(ratio.min, ratio.max));
  } else if (in_ratio > std::max(ratio.min, ratio.max)) {
    w = round_half_even(h * std::max(ratio.min, ratio.max));
  }
  return {(width - w) / 2, (height - h) / 2, w, h};
}

int uniform_index(double u, int n) {
  return std::clamp(static_cast<int>(std::floor(u * n)), 0, n - 1);
}

}  // namespace detail

CropBox center_crop_box(int width, int height, int resize_shorter, int crop_width,
                        int crop_height) {
  if (width <= 0 || height <= 0 || resize_shorter <= 0 || crop_width <= 0 || crop_height <= 0) {
    throw Error(ErrorKind::usage, "center_crop_box: sizes must be positive");
  }
  // torchvision's Resize(int): the shorter side becomes resize_shorter, the longer
  // int(resize_shorter * long / short).
  const bool landscape = width >= height;
  const int shorter = landscape ? height : width;
  const int longer = landscape ? width : height;
  const int new_long = static_cast<int>(static_cast<double>(resize_shorter) * longer / shorter);
  const int new_w = landscape ? new_long : resize_shorter;
  const int new_h = landscape ? resize_shorter : new_long;
  const double sx = static_cast<double>(width) / new_w;
  const double sy = static_cast<double>(height) / new_h;
  const int w = std::clamp(round_half_even(crop_width * sx), 1, width);
  const int h = std::clamp(round_half_even(crop_height * sy), 1, height);
  return {(width - w) / 2, (height - h) / 2, w, h};
}

void resize_crop_flip(const std::uint8_t* src, int src_w, int src_h, int src_stride, int channels,
                      const CropRect& box, bool flip, int out_w, int out_h, std::uint8_t* dst,
                      PixelLayout dst_layout, ResizeWorkspace& ws) {
  if (channels != 1 && channels != 3) {
    throw Error(ErrorKind::usage,
                "resize_crop_flip: channels must be 1 or 3, not " + std::to_string(channels));
  }
  if (out_w <= 0 || out_h <= 0 || src_w <= 0 || src_h <= 0 || src_stride < src_w * channels) {
    throw Error(ErrorKind::usage, "resize_crop_flip: bad image or output size");
  }
  constexpr double kSlack = 1e-6;  // a DCT-scaled box may overshoot the edge by rounding
  if (!(box.width > 0 && box.height > 0 && box.x >= -kSlack && box.y >= -kSlack &&
        box.x + box.width <= src_w + kSlack && box.y + box.height <= src_h + kSlack)) {
    throw Error(ErrorKind::usage, "resize_crop_flip: crop box outside the " +
                                      std::to_string(src_w) + "x" + std::to_string(src_h) +
                                      " image");
  }
  // The source columns and rows the crop touches: taps never reach outside them.
  const int x_lo = std::clamp(static_cast<int>(std::floor(box.x + kSlack)), 0, src_w - 1);
  const int x_hi =
      std::clamp(static_cast<int>(std::ceil(box.x + box.width - kSlack)), x_lo + 1, src_w);
  const int y_lo = std::clamp(static_cast<int>(std::floor(box.y + kSlack)), 0, src_h - 1);
  const int y_hi =
      std::clamp(static_cast<int>(std::ceil(box.y + box.height - kSlack)), y_lo + 1, src_h);
  if (box.width / out_w > 30 || box.height / out_h > 30) {
    throw Error(ErrorKind::usage, "resize_crop_flip: downscale factor above 30");
  }
  const int kx = precompute_taps(box.x, box.width, x_lo, x_hi, out_w, ws.x_coeffs, ws.x_bounds);
  const int ky = precompute_taps(box.y, box.height, y_lo, y_hi, out_h, ws.y_coeffs, ws.y_bounds);

  // Vertical pass: out_h rows of the crop's columns.
  const int row_len = (x_hi - x_lo) * channels;
  // Padding after the last row for horizontal_pass_rgb's loads past a row's end.
  const std::size_t row_padding = static_cast<std::size_t>(kx) * 3 + 1;
  ws.rows.resize(static_cast<std::size_t>(out_h) * row_len + row_padding);
  ws.accum.resize(static_cast<std::size_t>(row_len));
  vertical_pass(src + static_cast<std::size_t>(x_lo) * channels, src_stride, y_lo, row_len,
                ws.y_coeffs.data(), ws.y_bounds.data(), ky, out_h, ws.accum.data(), ws.rows.data());

  // Horizontal pass: each output row from its filtered row, mirrored and laid out on the way.
  const OutputLayout out(dst, out_w, out_h, flip, dst_layout, channels);
  if (channels == 3) {
    pair_taps(ws.x_coeffs, ws.x_bounds, kx, out_w, ws.x_pair_coeffs, ws.x_pair_bounds);
    horizontal_pass_rgb(ws.rows.data(), row_len, ws.x_pair_coeffs.data(), ws.x_pair_bounds.data(),
                        ws.x_coeffs.data(), ws.x_bounds.data(), kx, out);
  } else {
    horizontal_pass_grey(ws.rows.data(), row_len, ws.x_coeffs.data(), ws.x_bounds.data(), kx, out);
  }
}

}  // namespace gb::data
