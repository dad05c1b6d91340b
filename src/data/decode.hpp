// data/decode.hpp: the loader's JPEG decode -- libjpeg-turbo's libjpeg API with DCT-domain
// scaling and crop-region decoding, so a RandomResizedCrop decodes only the rows and columns it
// needs at the smallest scale that still covers the output -- and decode_augment(), the whole
// CPU path of one training sample: header, crop + flip draw, region decode, fused resize.
//
// Why it pays: a JPEG cropped to 224x224 from a box of 500x500 decodes at 4/8 (libjpeg's scaled
// IDCT does the first downscale almost free), and any box decodes only the iMCU rows and columns
// under it, not every pixel of the image.
//
// Bad data never crashes: truncated files, corrupt entropy data, non-JPEG bytes and colour
// spaces we do not handle throw DecodeError (a gb::Error, runtime) with a DecodeFailure the
// loader counts. libjpeg warnings (e.g. "premature end of JPEG file", which libjpeg would pad
// with grey) count as corrupt data. libjpeg reports errors by longjmp: every libjpeg call runs
// inside a small function that holds no C++ object, so no destructor is ever skipped.
//
// Only what is decoded is checked: a file cut short below the crop decodes fine when the crop
// is above the cut (the bytes read are valid), exactly as the pixels it returns are.
//
// A JpegDecoder keeps libjpeg's state between images (no per-image setup) and is not shared
// between threads: one per worker.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "data/augment.hpp"

namespace gb::data {

enum class DecodeFailure {
  not_jpeg,     // empty, or no JPEG start-of-image marker (a PNG, random bytes)
  truncated,    // the data ends before the image does
  corrupt,      // bad markers, tables or entropy-coded data; any libjpeg warning
  unsupported,  // CMYK/YCCK, 12-bit samples, images too large to decode
};
std::string_view to_string(DecodeFailure failure);

class DecodeError : public Error {
 public:
  DecodeError(DecodeFailure failure, const std::string& message)
      : Error(ErrorKind::runtime, message), failure_(failure) {}
  DecodeFailure failure() const { return failure_; }

 private:
  DecodeFailure failure_;
};

// What the header says, without decoding (so a crop can be drawn first).
struct JpegImageInfo {
  int width = 0;
  int height = 0;
  int components = 0;  // 1 (grey, decoded as RGB) or 3
};

// The smallest libjpeg scale M/8 (M = 1, 2, 4 or 8) at which a crop_w x crop_h crop still has
// at least out_w x out_h pixels; 8 (full size) when the crop must be upscaled anyway. Powers of
// two only: those are the scales libjpeg-turbo decodes with SIMD IDCTs.
int dct_scale_for_crop(int crop_w, int crop_h, int out_w, int out_h);

// Pixels of the decoded part of an image: RGB, `height` rows of `stride` bytes, covering
// columns x0 .. x0+width-1 and rows y0 .. y0+height-1 of the image scaled by scale_num/8.
// `box` is the requested crop in these pixels' coordinates (fractional after scaling).
struct DecodedRegion {
  const std::uint8_t* pixels = nullptr;  // into the caller's scratch
  int width = 0;
  int height = 0;
  int stride = 0;
  int channels = 3;
  int x0 = 0;
  int y0 = 0;
  int scale_num = 8;  // scale_num / 8 of the full image
  CropRect box;
};

// What decode_augment does to one sample.
struct AugmentOptions {
  int out_w = 224;
  int out_h = 224;
  PixelLayout layout = PixelLayout::hwc;
  bool train = true;  // RandomResizedCrop + flip; false: resize shorter side + center crop
  CropScale scale;
  CropRatio ratio;
  double flip_probability = 0.5;
  int resize_shorter = 256;  // validation only
};

// Buffers reused across samples (one per worker): no allocation once grown.
struct DecodeScratch {
  std::vector<std::uint8_t> pixels;
  ResizeWorkspace resize;
};

struct DecodeAugmentResult {
  JpegImageInfo info;
  CropBox box;  // in full-size image pixels
  bool flipped = false;
  int scale_num = 8;
  std::int64_t decode_ns = 0;   // header + region decode
  std::int64_t augment_ns = 0;  // crop draw + resize + flip + layout
};

class JpegDecoder {
 public:
  JpegDecoder();  // throws gb::Error (runtime) if libjpeg cannot allocate its state
  JpegDecoder(JpegDecoder&&) noexcept;
  JpegDecoder& operator=(JpegDecoder&&) noexcept;
  ~JpegDecoder();

  // Header only. Throws DecodeError.
  JpegImageInfo read_info(std::span<const std::uint8_t> jpeg);

  // Decodes the part of the image under `box` (full-size pixels), at dct_scale_for_crop(box,
  // out_w, out_h), into scratch. Throws DecodeError, or gb::Error (usage) for a box outside
  // the image.
  DecodedRegion decode_for_crop(std::span<const std::uint8_t> jpeg, const CropBox& box, int out_w,
                                int out_h, std::vector<std::uint8_t>& scratch);

  // The whole sample: read the header, draw the crop (train: RandomResizedCrop then the flip,
  // in torchvision's order; validation: center_crop_box, no draw), decode the region, resize,
  // flip and write options.out_w x out_h x 3 bytes to dst in options.layout.
  template <RandomSource R>
  DecodeAugmentResult decode_augment(std::span<const std::uint8_t> jpeg, R& rng,
                                     const AugmentOptions& options, std::uint8_t* dst,
                                     DecodeScratch& scratch) {
    using Clock = std::chrono::steady_clock;
    DecodeAugmentResult result;
    const auto t0 = Clock::now();
    result.info = begin(jpeg);
    const auto t1 = Clock::now();
    if (options.train) {
      result.box = random_resized_crop(result.info.width, result.info.height, rng, options.scale,
                                       options.ratio);
      result.flipped = random_flip(rng, options.flip_probability);
    } else {
      result.box = center_crop_box(result.info.width, result.info.height, options.resize_shorter,
                                   options.out_w, options.out_h);
    }
    const auto t2 = Clock::now();
    result.decode_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count();
    result.augment_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t2 - t1).count();
    finish_augment(options, dst, scratch, result);
    return result;
  }

  struct State;  // libjpeg's decompressor and error manager (decode.cpp)

 private:
  JpegImageInfo begin(std::span<const std::uint8_t> jpeg);
  DecodedRegion decode_region(const CropBox& box, int out_w, int out_h,
                              std::vector<std::uint8_t>& scratch);
  // decode_augment after the draw: region decode and resize, their times added to result's.
  void finish_augment(const AugmentOptions& options, std::uint8_t* dst, DecodeScratch& scratch,
                      DecodeAugmentResult& result);
  std::unique_ptr<State> state_;
};

}  // namespace gb::data
