// pipeline/nvjpeg_header.hpp: what the nvJPEG decode path does with an image, decided on the CPU
// from its frame header (data/jpeg_frame.hpp) in the reader threads, without nvJPEG: whether it
// is decoded at all, and whether the batched hardware decoder (NVJPEG_BACKEND_HARDWARE, the NVJPG
// engines of A100/A30/H100/H200) takes it or it goes to the one-by-one DEFAULT-backend decode.
//
// Why not nvjpegJpegStreamParseHeader + nvjpegDecodeBatchedSupported in the readers: both take
// the decoder's nvjpegHandle_t, and calls on it from reader threads while the consumer ran the
// batched decode on the same handle hung the pipeline for good; serialising every call on the
// handle with one lock cost about a quarter of the GPU decode rate (bench/NOTES.md, b1). The
// readers now never touch nvJPEG; the lock covers only the consumer's decode.
//
// The rules replicate what nvJPEG documents and reports:
//   decoded at all (any backend): 8-bit samples, Huffman coding, baseline / extended sequential /
//     progressive DCT, 1 or 3 components (greyscale, YCbCr), width and height 1..65535;
//   batched on the hardware backend: additionally baseline (SOF0), the chroma components at 1x1
//     and the luma at 1x1, 2x1, 2x2 or 1x2 (4:4:4, 4:2:2, 4:2:0, 4:4:0; greyscale), one
//     interleaved scan holding every component. Progressive, extended-sequential, 4:1:1 and 4:1:0
//     images, and frames coded in several scans, go to the single decode.
// A wrong "batched" verdict costs speed, not correctness: a batched call that fails is redone
// image by image (gpu/nvjpeg.hpp). tests/gpu/test_nvjpeg_decode.cpp checks these verdicts
// against nvJPEG's own on a GPU host.
#pragma once
#include <cstdint>
#include <span>
#include <string>

#include "data/jpeg_frame.hpp"

namespace gb::pipeline {

struct NvjpegHeaderVerdict {
  bool ok = false;
  std::string reason;  // when !ok: why the GPU path does not decode it
  int width = 0;
  int height = 0;
  int components = 0;
  bool batched_supported = true;  // the batched (hardware) decoder takes it
};

// `hardware_backend`: the decoder runs NVJPEG_BACKEND_HARDWARE (otherwise every decoded image is
// batched, as nvJPEG's other backends take all it decodes).
NvjpegHeaderVerdict nvjpeg_header_verdict(const data::JpegFrame& frame, bool hardware_backend);

// parse_jpeg_frame, then the verdict.
NvjpegHeaderVerdict nvjpeg_header_verdict(std::span<const std::uint8_t> jpeg,
                                          bool hardware_backend);

}  // namespace gb::pipeline
