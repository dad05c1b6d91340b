// data/augment.cpp: RandomResizedCrop / flip / center-crop boxes, and the fused antialiased
// bilinear crop + resize + flip kernel (PIL's ImagingResample, in the same fixed point).
#include "data/augment.hpp"

#include <algorithm>
#include <cmath>
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
// function multiversioning). Elsewhere (aarch64 hosts), the one portable version.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define GB_CLONE_AVX2 __attribute__((target_clones("avx2", "default")))
#else
#define GB_CLONE_AVX2
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

// Horizontal pass over one vertically filtered row, for a fixed channel count, so the channel
// loop unrolls. Writes output row y of dst in the requested layout.
template <int C>
void horizontal_row(const std::uint8_t* in, const std::int32_t* coeffs, const int* bounds,
                    int ksize, int out_w, int out_h, int y, bool flip, std::uint8_t* dst,
                    PixelLayout layout) {
  const std::size_t plane = static_cast<std::size_t>(out_w) * out_h;
  for (int xx = 0; xx < out_w; ++xx) {
    const int xmin = bounds[2 * xx];
    const int n = bounds[2 * xx + 1];
    const std::int32_t* k = coeffs + static_cast<std::size_t>(xx) * ksize;
    const std::uint8_t* p = in + static_cast<std::size_t>(xmin) * C;
    std::int32_t acc[C];
    for (int c = 0; c < C; ++c) acc[c] = kHalf;
    for (int t = 0; t < n; ++t) {
      for (int c = 0; c < C; ++c) acc[c] += k[t] * p[t * C + c];
    }
    const int xo = flip ? out_w - 1 - xx : xx;
    if (layout == PixelLayout::hwc) {
      std::uint8_t* o = dst + (static_cast<std::size_t>(y) * out_w + xo) * C;
      for (int c = 0; c < C; ++c) o[c] = clip8(acc[c]);
    } else {
      std::uint8_t* o = dst + static_cast<std::size_t>(y) * out_w + xo;
      for (int c = 0; c < C; ++c) o[c * plane] = clip8(acc[c]);
    }
  }
}

void horizontal_pass(const std::uint8_t* rows, int row_len, int channels,
                     const std::int32_t* coeffs, const int* bounds, int ksize, int out_w, int out_h,
                     bool flip, std::uint8_t* dst, PixelLayout layout) {
  for (int y = 0; y < out_h; ++y) {
    const std::uint8_t* in = rows + static_cast<std::size_t>(y) * row_len;
    if (channels == 3) {
      horizontal_row<3>(in, coeffs, bounds, ksize, out_w, out_h, y, flip, dst, layout);
    } else {
      horizontal_row<1>(in, coeffs, bounds, ksize, out_w, out_h, y, flip, dst, layout);
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
  ws.rows.resize(static_cast<std::size_t>(out_h) * row_len);
  ws.accum.resize(static_cast<std::size_t>(row_len));
  vertical_pass(src + static_cast<std::size_t>(x_lo) * channels, src_stride, y_lo, row_len,
                ws.y_coeffs.data(), ws.y_bounds.data(), ky, out_h, ws.accum.data(), ws.rows.data());

  // Horizontal pass: each output row from its filtered row, mirrored and laid out on the way.
  horizontal_pass(ws.rows.data(), row_len, channels, ws.x_coeffs.data(), ws.x_bounds.data(), kx,
                  out_w, out_h, flip, dst, dst_layout);
}

}  // namespace gb::data
