// pipeline/gpu/nvjpeg_check.cpp: the GPU paths' check against the CPU path, before anything is
// timed or trained on: the first images of a batch, GPU (nvJPEG + kernel, fp32) against the CPU
// path's pixels for the same crop and flip (libjpeg decode of the crop region +
// data::resize_crop_flip), as PSNR over the uint8 levels. nvJPEG's IDCT and chroma upsampling
// are not libjpeg's, so they differ by a level here and there; a wrong decode or a wrong crop is
// far below 30 dB. A sample the CPU already decoded (the split) must come out of the kernel as
// its own pixels, to rounding.
#include <cmath>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "data/augment.hpp"
#include "data/decode.hpp"
#include "pipeline/gpu/nvjpeg_batch.hpp"
#include "pipeline/process.hpp"

namespace gb::pipeline {

namespace {

constexpr double kMinPsnrDb = 30;
constexpr double kMaxCpuSampleChange = 0.01;  // levels

// Image j of the fp32 NCHW output, back in pixel levels, channel c at pixel p.
struct LevelsView {
  const std::vector<float>& out;
  std::size_t plane;
  const float* mean;
  const float* stddev;
  double level(std::size_t j, int c, std::size_t p) const {
    const float v = out[(j * 3 + static_cast<std::size_t>(c)) * plane + p];
    return static_cast<double>(v) * stddev[c] + mean[c];
  }
};

// The largest difference between a CPU-decoded sample's HWC pixels and the tensor's levels.
double worst_change(const LevelsView& got, std::size_t j, const std::uint8_t* px) {
  double worst = 0;
  for (std::size_t p = 0; p < got.plane; ++p)
    for (int c = 0; c < 3; ++c)
      worst =
          std::max(worst, std::abs(got.level(j, c, p) - px[p * 3 + static_cast<std::size_t>(c)]));
  return worst;
}

// Sum of squared level differences against `want` (HWC).
double squared_error(const LevelsView& got, std::size_t j, const std::vector<std::uint8_t>& want) {
  double sq = 0;
  for (std::size_t p = 0; p < got.plane; ++p)
    for (int c = 0; c < 3; ++c) {
      const double d = got.level(j, c, p) - want[p * 3 + static_cast<std::size_t>(c)];
      sq += d * d;
    }
  return sq;
}

double psnr(double sq, std::size_t values) {
  const double mse = sq / static_cast<double>(values);
  return mse > 0 ? 10 * std::log10(255.0 * 255.0 / mse) : 99;
}

}  // namespace

DecodeCheck NvjpegBatchStage::check(const Decoded& d, std::size_t count,
                                    const data::Dataset& dataset) {
  const data::Batch& b = d.batch;
  count = std::min(count, b.size);
  DecodeCheck out;
  const std::vector<float> gpu_out = as_f32(d.arena, count);
  const int size = options_.image_size;
  const LevelsView got{gpu_out, static_cast<std::size_t>(size) * size, mean_, stddev_};
  data::JpegDecoder jpeg;
  data::DecodeScratch scratch;
  std::vector<std::uint8_t> want(got.plane * 3);
  double sq = 0;
  for (std::size_t j = 0; j < count; ++j) {
    if (!d.ok[j]) continue;
    const SlotRecord& r = slot_record(b, j, sample_bytes_);
    const std::uint8_t* payload = slot_payload(b, j, sample_bytes_);
    if (r.decoded) {
      const double worst = worst_change(got, j, payload);
      if (worst > kMaxCpuSampleChange) {
        throw Error(ErrorKind::runtime, "CPU/GPU split: a CPU-decoded sample (" +
                                            dataset.sample_name(b.indices[j]) +
                                            ") changed on its way to the tensor by up to " +
                                            std::to_string(worst) + " levels (expected none)");
      }
      ++out.cpu_decoded;
      continue;
    }
    try {
      const data::DecodedRegion region = jpeg.decode_for_crop(
          {payload, r.jpeg_bytes}, r.box, r.box.width, r.box.height, scratch.pixels);
      data::resize_crop_flip(region.pixels, region.width, region.height, region.stride,
                             region.channels, region.box, r.flip != 0, size, size, want.data(),
                             data::PixelLayout::hwc, scratch.resize);
    } catch (const data::DecodeError&) {
      continue;  // libjpeg rejects what nvJPEG took: nothing to compare
    }
    const double sample_sq = squared_error(got, j, want);
    const double sample_psnr = psnr(sample_sq, got.plane * 3);
    if (sample_psnr < kMinPsnrDb) {
      throw Error(ErrorKind::runtime, "GPU decode path disagrees with the CPU path on " +
                                          dataset.sample_name(b.indices[j]) + ": PSNR " +
                                          std::to_string(sample_psnr) +
                                          " dB (expected >= 30 dB): a wrong decode or crop");
    }
    sq += sample_sq;
    ++out.images;
  }
  if (out.images > 0) out.psnr_db = psnr(sq, out.images * got.plane * 3);
  return out;
}

}  // namespace gb::pipeline
