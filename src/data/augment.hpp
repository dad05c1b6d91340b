// data/augment.hpp: the loader's CPU augmentation -- torchvision's RandomResizedCrop and
// horizontal flip (training) and resize-shorter-side + center crop (validation), drawn from an
// explicit random source, and one fused kernel that crops, resizes (antialiased bilinear, as
// PIL/torchvision) and flips in a single call, writing uint8 HWC or CHW straight into its
// destination (a pinned batch slot).
//
// Randomness: the caller owns it. Any RandomSource (data/rng.hpp: anything with a uniform()
// giving doubles in [0, 1)) drives the draws; the loader passes its Philox stream keyed by
// (seed, epoch, sample), so a sample's crop does not depend on which worker draws it. The draws and
// their order are torchvision's (RandomResizedCrop.get_params, then RandomHorizontalFlip), so fixed
// draws give torchvision's box.
//
// No threads here and no hidden state: every function is safe to call from any number of
// threads with their own ResizeWorkspace.
#pragma once
#include <cstdint>
#include <vector>

#include "data/rng.hpp"

namespace gb::data {

// A crop in whole pixels of the image it was drawn on: columns x .. x+width-1, rows y ..
// y+height-1.
struct CropBox {
  int x = 0;
  int y = 0;
  int width = 0;
  int height = 0;
  bool operator==(const CropBox&) const = default;
};

// A crop with fractional edges, for a crop mapped into a DCT-scaled image (decode.hpp).
struct CropRect {
  double x = 0;
  double y = 0;
  double width = 0;
  double height = 0;
  CropRect() = default;
  CropRect(double x_, double y_, double w_, double h_) : x(x_), y(y_), width(w_), height(h_) {}
  CropRect(const CropBox& b) : x(b.x), y(b.y), width(b.width), height(b.height) {}  // NOLINT
};

struct CropScale {
  double min = 0.08;  // share of the image's area
  double max = 1.0;
};
struct CropRatio {
  double min = 3.0 / 4.0;  // width / height
  double max = 4.0 / 3.0;
};

namespace detail {
// One RandomResizedCrop attempt from its two draws: the box size, or false when it does not fit.
bool crop_attempt(int width, int height, double u_area, double u_log_ratio, CropScale scale,
                  CropRatio ratio, int& w, int& h);
// The fallback after ten misses: the center crop with the ratio clamped into range.
CropBox crop_fallback(int width, int height, CropRatio ratio);
// torch.randint(0, n) from one draw: floor(u * n).
int uniform_index(double u, int n);
void check_image_size(int width, int height);
}  // namespace detail

// torchvision.transforms.RandomResizedCrop.get_params: up to 10 attempts, each drawing an area
// share uniform in scale and an aspect ratio log-uniform in ratio (w = round(sqrt(area*ratio)),
// h = round(sqrt(area/ratio)), Python's round half to even); the first that fits draws its top
// row, then its left column, uniformly. If none fits, the center crop of the largest box whose
// ratio is clamped into range. Draws per attempt: 2, plus 2 on success. Computed in double
// (torchvision draws in float32 and converts), so a box can differ by a pixel when a size lands
// within float32 rounding of a .5.
template <RandomSource R>
CropBox random_resized_crop(int width, int height, R& rng, CropScale scale = {},
                            CropRatio ratio = {}) {
  detail::check_image_size(width, height);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double u_area = rng.uniform();
    const double u_ratio = rng.uniform();
    int w = 0, h = 0;
    if (detail::crop_attempt(width, height, u_area, u_ratio, scale, ratio, w, h)) {
      const int y = detail::uniform_index(rng.uniform(), height - h + 1);
      const int x = detail::uniform_index(rng.uniform(), width - w + 1);
      return {x, y, w, h};
    }
  }
  return detail::crop_fallback(width, height, ratio);
}

// RandomHorizontalFlip(p): flip when one draw is below p (torchvision: torch.rand(1) < p).
template <RandomSource R>
bool random_flip(R& rng, double p = 0.5) {
  return rng.uniform() < p;
}

// Validation: torchvision's Resize(resize_shorter) then CenterCrop(crop), as the box of the
// source image that the crop covers. Resize(256)+CenterCrop(224) of 500x375 is the 328x328
// box at (86, 23) resized to 224x224: equal to torchvision's up to a fraction of a pixel of
// placement (torchvision rounds the intermediate 341x256 image's size and the crop offset).
CropBox center_crop_box(int width, int height, int resize_shorter, int crop_width, int crop_height);

enum class PixelLayout {
  hwc,  // rows of width x channels bytes, channels interleaved (NHWC batches)
  chw,  // one plane per channel (NCHW batches)
};

// Filter taps and the intermediate image, reused across calls so the hot loop allocates
// nothing once they have grown. One per thread.
struct ResizeWorkspace {
  std::vector<std::int32_t> x_coeffs, y_coeffs;
  std::vector<int> x_bounds, y_bounds;      // per output pixel: first source index, tap count
  std::vector<std::int32_t> x_pair_coeffs;  // RGB: x taps laid out two output pixels at a time
  std::vector<int> x_pair_bounds;
  std::vector<std::uint8_t> rows;  // vertically filtered rows, out_h x crop columns
  std::vector<std::int32_t> accum;
};

// Crops `box` out of the src image (channels 1 or 3, uint8, rows `src_stride` bytes apart),
// resizes it to out_w x out_h with PIL's antialiased bilinear filter (a triangle filter whose
// support grows with the downscale factor; taps limited to the crop, as torchvision crops
// before it resizes), mirrors it left-right when `flip`, and writes dst: out_h*out_w*channels
// bytes in `layout`. Two separable passes in 22-bit fixed point (PIL's), vertical first so
// that the horizontal pass works on output rows only. Throws gb::Error (usage) for a box
// outside the image or bad sizes.
//
// Napkin math, 500x375 -> 224x224 RGB: the vertical pass reads ~3 rows per output row over
// <= 500x3 bytes (~1 M multiply-adds), the horizontal pass ~3 taps per output byte (~0.5 M);
// both vectorised, with AVX2 where the CPU has it (the horizontal pass: two RGB pixels per
// 8-lane vector). Measured in the loader: ~0.26 ms per sample (RandomResizedCrop boxes after
// DCT scaling; Release, x86-64 with AVX2; 0.48 ms with the scalar horizontal pass).
void resize_crop_flip(const std::uint8_t* src, int src_w, int src_h, int src_stride, int channels,
                      const CropRect& box, bool flip, int out_w, int out_h, std::uint8_t* dst,
                      PixelLayout dst_layout, ResizeWorkspace& workspace);

}  // namespace gb::data
