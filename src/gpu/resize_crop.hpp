// gpu/resize_crop.hpp: the GPU decode path's one kernel after nvJPEG: for every image of a batch,
// crop its RandomResizedCrop box out of the decoded RGB image, resize it to the output size with
// PIL's antialiased bilinear filter (the CPU path's data::resize_crop_flip: a triangle filter
// whose support grows with the downscale factor, taps limited to the crop), mirror it when the
// flip was drawn, round to a uint8 level as the CPU path's batch slot holds, then normalize,
// lay out (NCHW / NHWC) and convert (fp32 / fp16 / bf16) exactly as gpu/normalize.hpp does.
//
// One thread per output pixel computes the separable filter as a 2-D sum (rows of taps times
// columns of taps) in float, where the CPU runs two passes in 22-bit fixed point with a uint8
// row buffer in between: the two agree within one level (tests/gpu/test_resize_crop.cpp).
// Antialiasing is the CPU path's: a downscale by s widens the triangle to s source pixels each
// side, so a > 2x downscale averages every source pixel under the output pixel (no aliasing).
//
// Napkin math, batch 256 of 224x224 from ~500x375 decoded images: a crop of ~300x300 px is a
// ~1.4x downscale: <= 5 taps per axis, <= 25 taps x 3 channels per output pixel: 256 x 50,176 x
// 75 ~ 1 G multiply-adds (~0.1 ms of an H200's FP32), reads ~256 x 300 x 300 x 3 = 69 MB of
// decoded pixels (mostly once; neighbours hit L1/L2), writes 154 MB of fp32 (38.5 MB bf16):
// ~0.1 ms at HBM speed. Large downscales cost (2s+1)^2 taps per pixel: a 2,000 px crop to 224
// (s ~ 9) is ~360 taps, still well under a millisecond per batch when rare.
//
// No dependency on data/: the crop boxes and flips come in plain structs (the GPU loader fills
// them from data::random_resized_crop draws).
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "gpu/host_numeric.hpp"
#include "gpu/normalize.hpp"

namespace gb::gpu {

// One image of the batch, in device memory.
struct ResizeCropItem {
  const std::uint8_t* src = nullptr;  // interleaved RGB, rows `pitch` bytes apart
  int width = 0, height = 0;
  int pitch = 0;
  float crop_x = 0, crop_y = 0, crop_w = 0, crop_h = 0;  // in source pixels, inside the image
  int flip = 0;                                          // mirror left-right
  int valid = 1;  // 0: no image (a failed decode): the output is all zeros (the mean colour)
};

// items: n ResizeCropItem in device memory; dst: the batch tensor (shape.n = n, shape.c = 3) of
// type `out`, mean and stddev per channel in pixel units. Asynchronous on `stream`; launch errors
// are checked. Throws gb::Error (usage) for a shape with c != 3 or an output type that is not
// fp32, fp16 or bf16. Crops must lie inside their images (the caller's contract, as on the CPU).
void resize_crop_normalize(const ResizeCropItem* items, const NormalizeShape& shape,
                           ElementType out, const float mean[4], const float stddev[4], void* dst,
                           cudaStream_t stream);

}  // namespace gb::gpu
