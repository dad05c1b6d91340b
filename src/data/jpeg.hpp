// data/jpeg.hpp: the small TurboJPEG (libjpeg-turbo) surface the dataset layer needs: encoding
// RGB pixels for `dataset synth` and the tests, reading a JPEG's header, and a plain full-size
// decode for checks. The loader's fast path (DCT-domain scaling, crop-region decode) lives with
// the loader. Handles are RAII and not shared between threads: one encoder per worker.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace gb::data {

enum class ChromaSubsampling { s444, s422, s420, gray, s440, s411 };

struct JpegInfo {
  int width = 0;
  int height = 0;
  ChromaSubsampling subsampling = ChromaSubsampling::s420;
};

class JpegEncoder {
 public:
  JpegEncoder();  // throws gb::Error (runtime) if TurboJPEG cannot allocate a handle
  JpegEncoder(JpegEncoder&&) noexcept;
  JpegEncoder& operator=(JpegEncoder&&) noexcept;
  ~JpegEncoder();

  // rgb: height rows of width*3 bytes. Appends nothing: `out` is replaced by the JPEG file.
  // `progressive`: a progressive JPEG (SOF2, several scans) instead of a baseline one.
  void encode_rgb(std::span<const std::uint8_t> rgb, int width, int height, int quality,
                  ChromaSubsampling subsampling, std::vector<std::uint8_t>& out,
                  bool progressive = false);

 private:
  void* handle_ = nullptr;
};

// Header only (no decode); nullopt when the bytes are not a JPEG TurboJPEG can parse.
std::optional<JpegInfo> read_jpeg_header(std::span<const std::uint8_t> jpeg);

// Full decode to RGB (width*height*3 bytes); nullopt when the data is corrupt or truncated.
std::optional<std::vector<std::uint8_t>> decode_jpeg_rgb(std::span<const std::uint8_t> jpeg,
                                                         JpegInfo* info = nullptr);

}  // namespace gb::data
