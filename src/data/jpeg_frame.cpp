// data/jpeg_frame.cpp: the marker walk of parse_jpeg_frame (see jpeg_frame.hpp).
#include "data/jpeg_frame.hpp"

#include <cstdio>

namespace gb::data {
namespace {

constexpr std::uint8_t kSoi = 0xD8, kEoi = 0xD9, kSos = 0xDA, kDri = 0xDD, kDhp = 0xDE,
                       kApp14 = 0xEE, kTem = 0x01;

std::string hex(unsigned v) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%02X", v & 0xFFu);
  return buf;
}

bool is_sof(std::uint8_t m) {
  // C0-CF are frame markers except C4 (DHT), C8 (JPG, reserved) and CC (DAC).
  return m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC;
}

bool is_standalone(std::uint8_t m) {
  return m == kTem || (m >= 0xD0 && m <= 0xD7);
}

unsigned be16(const std::uint8_t* p) {
  return (unsigned{p[0]} << 8) | p[1];
}

JpegFrame fail(JpegFrame f, std::string reason) {
  f.ok = false;
  f.reason = std::move(reason);
  return f;
}

// The frame header's fields (B.2.2): P, Y, X, Nf, then Nf x (C, H|V, Tq).
bool read_sof(std::uint8_t marker, const std::uint8_t* p, unsigned len, JpegFrame& f,
              std::string& why) {
  if (len < 8) {
    why = "bad SOF" + hex(marker - 0xC0) + " segment: length " + std::to_string(len);
    return false;
  }
  f.sof_marker = marker;
  const unsigned kind = marker & 0x0F;  // C0..CF: low nibble
  f.arithmetic = kind >= 8;
  switch (kind & 7) {
    case 0:
      f.coding = f.arithmetic ? JpegCoding::extended : JpegCoding::baseline;
      break;
    case 1:
      f.coding = JpegCoding::extended;
      break;
    case 2:
      f.coding = JpegCoding::progressive;
      break;
    case 3:
      f.coding = JpegCoding::lossless;
      break;
    default:  // 5, 6, 7: differential (hierarchical) frames
      f.coding = JpegCoding::hierarchical;
      break;
  }
  f.precision = p[0];
  f.height = static_cast<int>(be16(p + 1));
  f.width = static_cast<int>(be16(p + 3));
  const unsigned nf = p[5];
  if (len != 8 + 3 * nf) {
    why = "bad frame header: " + std::to_string(nf) + " components in a segment of " +
          std::to_string(len) + " bytes";
    return false;
  }
  if (nf == 0) {
    why = "bad frame header: 0 components";
    return false;
  }
  f.component_count = static_cast<int>(nf);
  if (nf > JpegFrame::kMaxComponents) {
    why = std::to_string(nf) + " components in the frame (at most 4 are decoded)";
    return false;
  }
  for (unsigned c = 0; c < nf; ++c) {
    const std::uint8_t* q = p + 6 + 3 * c;
    JpegComponentSpec& s = f.components[c];
    s.id = q[0];
    s.h = q[1] >> 4;
    s.v = q[1] & 0x0F;
    s.quant_table = q[2];
    if (s.h < 1 || s.h > 4 || s.v < 1 || s.v > 4) {
      why = "bad frame header: component " + std::to_string(c) + " sampling factors " +
            std::to_string(s.h) + "x" + std::to_string(s.v);
      return false;
    }
  }
  return true;
}

}  // namespace

std::string_view to_string(JpegCoding c) {
  switch (c) {
    case JpegCoding::baseline:
      return "baseline";
    case JpegCoding::extended:
      return "extended";
    case JpegCoding::progressive:
      return "progressive";
    case JpegCoding::lossless:
      return "lossless";
    case JpegCoding::hierarchical:
      return "hierarchical";
  }
  return "baseline";
}

std::string_view to_string(JpegSubsampling s) {
  switch (s) {
    case JpegSubsampling::s444:
      return "4:4:4";
    case JpegSubsampling::s422:
      return "4:2:2";
    case JpegSubsampling::s420:
      return "4:2:0";
    case JpegSubsampling::s440:
      return "4:4:0";
    case JpegSubsampling::s411:
      return "4:1:1";
    case JpegSubsampling::s410:
      return "4:1:0";
    case JpegSubsampling::gray:
      return "gray";
    case JpegSubsampling::other:
      return "other";
  }
  return "other";
}

JpegSubsampling JpegFrame::subsampling() const {
  if (component_count == 1) return JpegSubsampling::gray;
  if (component_count != 3) return JpegSubsampling::other;
  const JpegComponentSpec& y = components[0];
  for (int c = 1; c < 3; ++c)
    if (components[c].h != 1 || components[c].v != 1) return JpegSubsampling::other;
  const int hv = y.h * 10 + y.v;
  switch (hv) {
    case 11:
      return JpegSubsampling::s444;
    case 21:
      return JpegSubsampling::s422;
    case 22:
      return JpegSubsampling::s420;
    case 12:
      return JpegSubsampling::s440;
    case 41:
      return JpegSubsampling::s411;
    case 42:
      return JpegSubsampling::s410;
    default:
      return JpegSubsampling::other;
  }
}

JpegFrame parse_jpeg_frame(std::span<const std::uint8_t> jpeg) {
  JpegFrame f;
  const std::size_t n = jpeg.size();
  const std::uint8_t* b = jpeg.data();
  if (n < 2 || b[0] != 0xFF || b[1] != kSoi) return fail(f, "not a JPEG: no start-of-image marker");
  bool have_frame = false;
  std::size_t i = 2;
  for (;;) {
    // A marker: one or more FF bytes, then the code.
    if (i >= n) {
      return fail(f, have_frame ? "truncated: the file ends before the first scan"
                                : "truncated: the file ends before the frame header");
    }
    if (b[i] != 0xFF) {
      return fail(f, "bad marker: byte " + hex(b[i]) + " at offset " + std::to_string(i) +
                         " where a marker should start");
    }
    while (i < n && b[i] == 0xFF) ++i;
    if (i >= n) return fail(f, "truncated: the file ends inside a marker");
    const std::uint8_t m = b[i++];
    if (m == 0x00) return fail(f, "bad marker: FF 00 at offset " + std::to_string(i - 2));
    if (is_standalone(m)) continue;
    if (m == kSoi)
      return fail(f, "bad marker: a second start-of-image at offset " + std::to_string(i - 2));
    if (m == kEoi) {
      return fail(f, have_frame ? "no scan: end-of-image right after the headers"
                                : "no frame header: end-of-image before any SOF marker");
    }
    if (n - i < 2) return fail(f, "truncated: the file ends inside the " + hex(m) + " marker");
    const unsigned len = be16(b + i);
    if (len < 2) return fail(f, "bad marker: " + hex(m) + " segment length " + std::to_string(len));
    if (n - i < len) {
      return fail(f, "truncated: the " + hex(m) + " segment at offset " + std::to_string(i - 2) +
                         " needs " + std::to_string(len) + " bytes, " + std::to_string(n - i) +
                         " are left");
    }
    const std::uint8_t* p = b + i + 2;  // the segment's payload
    const unsigned plen = len - 2;
    if (is_sof(m)) {
      if (have_frame) return fail(f, "bad marker: a second frame header (SOF) before any scan");
      std::string why;
      if (!read_sof(m, p, len, f, why)) return fail(f, why);
      have_frame = true;
    } else if (m == kDhp) {
      f.coding = JpegCoding::hierarchical;
    } else if (m == kDri) {
      if (plen >= 2) f.restart_interval = static_cast<int>(be16(p));
    } else if (m == kApp14) {
      if (plen >= 12 && p[0] == 'A' && p[1] == 'd' && p[2] == 'o' && p[3] == 'b' && p[4] == 'e') {
        f.adobe = true;
        f.adobe_transform = p[11];
      }
    } else if (m == kSos) {
      if (!have_frame) return fail(f, "no frame header: a scan (SOS) before any SOF marker");
      if (plen < 1) return fail(f, "bad scan header: empty SOS segment");
      f.first_scan_components = p[0];
      if (f.first_scan_components < 1 || f.first_scan_components > f.component_count ||
          plen != 4 + 2 * static_cast<unsigned>(f.first_scan_components)) {
        return fail(f, "bad scan header: " + std::to_string(f.first_scan_components) +
                           " components in a segment of " + std::to_string(len) + " bytes");
      }
      break;
    }
    i += len;
  }
  if (f.height == 0) return fail(f, "height 0 in the frame header (set later by a DNL marker)");
  if (f.width == 0) return fail(f, "width 0 in the frame header");
  f.ok = true;
  return f;
}

}  // namespace gb::data
