// data/jpeg_frame.hpp: a JPEG's frame header read by walking its markers, without a decoder and
// without touching the entropy-coded data: what the GPU decode path's reader threads need to
// know about each image (size, components, sampling factors, coding process, whether the first
// scan holds every component) at the cost of a few dozen byte reads.
//
//   const JpegFrame f = parse_jpeg_frame(bytes);
//   if (!f.ok) reject(f.reason);        // "not a JPEG: ...", "truncated ...", "bad marker ..."
//   f.width, f.height, f.component_count, f.coding, f.arithmetic, f.precision, f.subsampling()
//
// Markers (ITU-T T.81, Annex B): SOI, then segments (FF xx, a 16-bit length that counts itself)
// until the first SOS; stand-alone markers (TEM, RSTn) and fill bytes (FF FF ...) are skipped.
// The first SOFn is the frame; its Y = 0 (height given later by a DNL marker) is reported as
// such. Only the bytes up to the end of the first SOS header are read: a file cut short inside
// its entropy-coded data parses (its decode fails later), one cut inside a header does not.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace gb::data {

enum class JpegCoding {
  baseline,     // SOF0: 8-bit sequential DCT, Huffman
  extended,     // SOF1 (Huffman) or SOF9 (arithmetic): sequential DCT, 8 or 12 bits
  progressive,  // SOF2 / SOF10
  lossless,     // SOF3 / SOF11
  hierarchical  // SOF5-7 / SOF13-15 (differential frames), or a DHP marker
};
std::string_view to_string(JpegCoding c);  // "baseline", "extended", ...

// The chroma layout of a frame, from its sampling factors. s444 .. s410: three components, the
// two chroma ones at 1x1 and the luma one at (1x1, 2x1, 2x2, 1x2, 4x1, 4x2); gray: one
// component; other: anything else (chroma not at 1x1, four components, ...).
enum class JpegSubsampling { s444, s422, s420, s440, s411, s410, gray, other };
std::string_view to_string(JpegSubsampling s);  // "4:4:4", ..., "gray", "other"

struct JpegComponentSpec {
  std::uint8_t id = 0;
  std::uint8_t h = 0, v = 0;  // sampling factors, 1..4
  std::uint8_t quant_table = 0;
};

struct JpegFrame {
  bool ok = false;
  std::string reason;           // when !ok
  std::uint8_t sof_marker = 0;  // 0xC0 .. 0xCF
  JpegCoding coding = JpegCoding::baseline;
  bool arithmetic = false;
  int precision = 0;  // bits per sample: 8 or 12 (16 for lossless)
  int width = 0;
  int height = 0;  // 0 when a DNL marker gives it (reported as !ok by parse_jpeg_frame)
  int component_count = 0;
  static constexpr int kMaxComponents = 4;  // more than this is !ok
  std::array<JpegComponentSpec, kMaxComponents> components{};
  int first_scan_components = 0;  // Ns of the first SOS: < component_count means several scans
  bool adobe = false;             // an APP14 "Adobe" segment came before the frame
  int adobe_transform = -1;       // its transform byte (0: none / CMYK or RGB, 1: YCbCr, 2: YCCK)
  int restart_interval = 0;       // the last DRI before the first scan, 0 if none

  JpegSubsampling subsampling() const;
};

// Never throws and never reads past `jpeg`; a damaged header is !ok with the reason.
JpegFrame parse_jpeg_frame(std::span<const std::uint8_t> jpeg);

}  // namespace gb::data
