// data/jpeg.cpp: TurboJPEG 2.x calls (tjCompress2, tjDecompressHeader3, tjDecompress2).
#include "data/jpeg.hpp"

#include <turbojpeg.h>

#include <string>
#include <utility>

#include "core/error.hpp"

namespace gb::data {
namespace {

// decode_jpeg_rgb's limit: a 100-byte file may claim 65535 x 65535 pixels, 12.9 GB of RGB; the
// size is checked before anything is allocated (64 MP: 192 MB).
constexpr std::size_t kMaxFullDecodePixels = std::size_t{64} << 20;

int tj_subsampling(ChromaSubsampling s) {
  switch (s) {
    case ChromaSubsampling::s444:
      return TJSAMP_444;
    case ChromaSubsampling::s422:
      return TJSAMP_422;
    case ChromaSubsampling::s420:
      return TJSAMP_420;
    case ChromaSubsampling::gray:
      return TJSAMP_GRAY;
    case ChromaSubsampling::s440:
      return TJSAMP_440;
    case ChromaSubsampling::s411:
      return TJSAMP_411;
  }
  return TJSAMP_420;
}

ChromaSubsampling from_tj(int s) {
  switch (s) {
    case TJSAMP_444:
      return ChromaSubsampling::s444;
    case TJSAMP_422:
      return ChromaSubsampling::s422;
    case TJSAMP_GRAY:
      return ChromaSubsampling::gray;
    case TJSAMP_440:
      return ChromaSubsampling::s440;
    case TJSAMP_411:
      return ChromaSubsampling::s411;
    default:
      return ChromaSubsampling::s420;
  }
}

// A decompressor handle for one call.
class Decompressor {
 public:
  Decompressor() : handle_(tjInitDecompress()) {
    if (handle_ == nullptr) throw Error(ErrorKind::runtime, "TurboJPEG: tjInitDecompress failed");
  }
  Decompressor(const Decompressor&) = delete;
  Decompressor& operator=(const Decompressor&) = delete;
  ~Decompressor() { tjDestroy(handle_); }
  tjhandle get() const { return handle_; }

 private:
  tjhandle handle_;
};

}  // namespace

JpegEncoder::JpegEncoder() : handle_(tjInitCompress()) {
  if (handle_ == nullptr) throw Error(ErrorKind::runtime, "TurboJPEG: tjInitCompress failed");
}

JpegEncoder::JpegEncoder(JpegEncoder&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)) {}

JpegEncoder& JpegEncoder::operator=(JpegEncoder&& other) noexcept {
  if (this != &other) {
    if (handle_ != nullptr) tjDestroy(handle_);
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}

JpegEncoder::~JpegEncoder() {
  if (handle_ != nullptr) tjDestroy(handle_);
}

void JpegEncoder::encode_rgb(std::span<const std::uint8_t> rgb, int width, int height, int quality,
                             ChromaSubsampling subsampling, std::vector<std::uint8_t>& out,
                             bool progressive) {
  if (width <= 0 || height <= 0 || rgb.size() < std::size_t(width) * height * 3) {
    throw Error(ErrorKind::runtime, "JpegEncoder: pixel buffer smaller than the image");
  }
  // Encode into a buffer of the worst-case size, so TurboJPEG never reallocates.
  out.resize(tjBufSize(width, height, tj_subsampling(subsampling)));
  unsigned char* dst = out.data();
  unsigned long size = out.size();
  const int rc =
      tjCompress2(static_cast<tjhandle>(handle_), rgb.data(), width, width * 3, height, TJPF_RGB,
                  &dst, &size, tj_subsampling(subsampling), quality,
                  TJFLAG_NOREALLOC | (progressive ? TJFLAG_PROGRESSIVE : 0));
  if (rc != 0) {
    throw Error(ErrorKind::runtime,
                std::string("TurboJPEG: tjCompress2 failed: ") + tjGetErrorStr2(handle_));
  }
  out.resize(size);
}

std::optional<JpegInfo> read_jpeg_header(std::span<const std::uint8_t> jpeg) {
  Decompressor d;
  int w = 0, h = 0, subsamp = 0, colorspace = 0;
  if (tjDecompressHeader3(d.get(), jpeg.data(), jpeg.size(), &w, &h, &subsamp, &colorspace) != 0) {
    return std::nullopt;
  }
  return JpegInfo{w, h, from_tj(subsamp)};
}

std::optional<std::vector<std::uint8_t>> decode_jpeg_rgb(std::span<const std::uint8_t> jpeg,
                                                         JpegInfo* info) {
  Decompressor d;
  int w = 0, h = 0, subsamp = 0, colorspace = 0;
  if (tjDecompressHeader3(d.get(), jpeg.data(), jpeg.size(), &w, &h, &subsamp, &colorspace) != 0) {
    return std::nullopt;
  }
  if (w <= 0 || h <= 0 || std::size_t(w) * std::size_t(h) > kMaxFullDecodePixels)
    return std::nullopt;
  std::vector<std::uint8_t> rgb(std::size_t(w) * h * 3);
  // Warnings (e.g. a premature end of data, which libjpeg pads with grey) count as failures.
  if (tjDecompress2(d.get(), jpeg.data(), jpeg.size(), rgb.data(), w, w * 3, h, TJPF_RGB,
                    TJFLAG_STOPONWARNING) != 0) {
    return std::nullopt;
  }
  if (info != nullptr) *info = {w, h, from_tj(subsamp)};
  return rgb;
}

}  // namespace gb::data
