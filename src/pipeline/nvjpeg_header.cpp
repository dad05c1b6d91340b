// pipeline/nvjpeg_header.cpp: the nvJPEG path's per-image verdict (see nvjpeg_header.hpp).
#include "pipeline/nvjpeg_header.hpp"

namespace gb::pipeline {

NvjpegHeaderVerdict nvjpeg_header_verdict(const data::JpegFrame& f, bool hardware_backend) {
  NvjpegHeaderVerdict v;
  if (!f.ok) {
    v.reason = "JPEG header: " + f.reason;
    return v;
  }
  if (f.component_count != 1 && f.component_count != 3) {
    v.reason = std::to_string(f.component_count) + " components" +
               (f.component_count == 4 ? " (CMYK or YCCK)" : "") +
               " (only greyscale and YCbCr are decoded)";
    return v;
  }
  if (f.arithmetic) {
    v.reason = "arithmetic coding (nvJPEG decodes Huffman-coded JPEGs only)";
    return v;
  }
  if (f.coding == data::JpegCoding::lossless || f.coding == data::JpegCoding::hierarchical) {
    v.reason = std::string(data::to_string(f.coding)) + " JPEG (not decoded by nvJPEG)";
    return v;
  }
  if (f.precision != 8) {
    v.reason = std::to_string(f.precision) + "-bit samples (nvJPEG decodes 8-bit JPEGs only)";
    return v;
  }
  if (f.width < 1 || f.height < 1 || f.width > 65535 || f.height > 65535) {
    v.reason = "image size " + std::to_string(f.width) + "x" + std::to_string(f.height);
    return v;
  }
  v.width = f.width;
  v.height = f.height;
  v.components = f.component_count;
  if (hardware_backend) {
    const data::JpegSubsampling s = f.subsampling();
    const bool layout_ok = s == data::JpegSubsampling::s444 || s == data::JpegSubsampling::s422 ||
                           s == data::JpegSubsampling::s420 || s == data::JpegSubsampling::s440 ||
                           s == data::JpegSubsampling::gray;
    v.batched_supported = f.coding == data::JpegCoding::baseline && layout_ok &&
                          f.first_scan_components == f.component_count;
  }
  v.ok = true;
  return v;
}

NvjpegHeaderVerdict nvjpeg_header_verdict(std::span<const std::uint8_t> jpeg,
                                          bool hardware_backend) {
  return nvjpeg_header_verdict(data::parse_jpeg_frame(jpeg), hardware_backend);
}

}  // namespace gb::pipeline
