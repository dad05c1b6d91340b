// tests/unit/test_data_jpeg_frame.cpp: the frame header read by walking a JPEG's markers
// (data/jpeg_frame.hpp), on files TurboJPEG wrote (baseline 4:4:4 / 4:2:2 / 4:2:0 / 4:4:0 /
// 4:1:1 / greyscale, progressive) and on hand-built headers for what TurboJPEG does not write
// (CMYK, YCCK, arithmetic, 12-bit, lossless, several scans, DNL) and for damage (truncated,
// bad markers); and the nvJPEG path's verdict on each (pipeline/nvjpeg_header.hpp).
#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "data/jpeg.hpp"
#include "data/jpeg_frame.hpp"
#include "pipeline/nvjpeg_header.hpp"

namespace gb::data {
namespace {

using pipeline::nvjpeg_header_verdict;

std::vector<std::uint8_t> encoded(int w, int h, ChromaSubsampling s, bool progressive = false) {
  std::vector<std::uint8_t> rgb(static_cast<std::size_t>(w) * h * 3);
  for (std::size_t i = 0; i < rgb.size(); ++i)
    rgb[i] = static_cast<std::uint8_t>((i * 37) ^ (i >> 5));
  std::vector<std::uint8_t> out;
  JpegEncoder().encode_rgb(rgb, w, h, 85, s, out, progressive);
  return out;
}

// Hand-built files: SOI, the segments, two bytes of "entropy-coded data", EOI.
struct Segment {
  std::uint8_t marker;
  std::vector<std::uint8_t> payload;
};
struct Comp {
  std::uint8_t id, hv, tq;
};

Segment sof(std::uint8_t marker, int precision, int w, int h, std::initializer_list<Comp> comps) {
  Segment s{marker,
            {static_cast<std::uint8_t>(precision), static_cast<std::uint8_t>(h >> 8),
             static_cast<std::uint8_t>(h), static_cast<std::uint8_t>(w >> 8),
             static_cast<std::uint8_t>(w), static_cast<std::uint8_t>(comps.size())}};
  for (const Comp& c : comps) s.payload.insert(s.payload.end(), {c.id, c.hv, c.tq});
  return s;
}

Segment sos(int components) {
  Segment s{0xDA, {static_cast<std::uint8_t>(components)}};
  // One byte at a time: GCC 12 warns (-Warray-bounds, wrongly) on inserting a list here.
  for (int c = 0; c < components; ++c) {
    s.payload.push_back(static_cast<std::uint8_t>(c + 1));
    s.payload.push_back(0x00);
  }
  for (const std::uint8_t b : {0x00, 0x3F, 0x00}) s.payload.push_back(b);
  return s;
}

Segment adobe(std::uint8_t transform) {
  return {0xEE, {'A', 'd', 'o', 'b', 'e', 0, 100, 0, 0, 0, 0, transform}};
}

std::vector<std::uint8_t> file(std::initializer_list<Segment> segments) {
  std::vector<std::uint8_t> b = {0xFF, 0xD8};
  for (const Segment& s : segments) {
    const std::size_t len = s.payload.size() + 2;
    b.insert(b.end(),
             {0xFF, s.marker, static_cast<std::uint8_t>(len >> 8), static_cast<std::uint8_t>(len)});
    b.insert(b.end(), s.payload.begin(), s.payload.end());
  }
  b.insert(b.end(), {0x12, 0x34, 0xFF, 0xD9});
  return b;
}

const Segment kDqt{0xDB, std::vector<std::uint8_t>(65, 1)};

TEST(JpegFrame, BaselineFilesReportTheirSizeAndSubsampling) {
  struct Case {
    ChromaSubsampling written;
    JpegSubsampling read;
  };
  for (const Case c : {Case{ChromaSubsampling::s444, JpegSubsampling::s444},
                       Case{ChromaSubsampling::s422, JpegSubsampling::s422},
                       Case{ChromaSubsampling::s420, JpegSubsampling::s420},
                       Case{ChromaSubsampling::s440, JpegSubsampling::s440},
                       Case{ChromaSubsampling::s411, JpegSubsampling::s411},
                       Case{ChromaSubsampling::gray, JpegSubsampling::gray}}) {
    const JpegFrame f = parse_jpeg_frame(encoded(77, 45, c.written));
    ASSERT_TRUE(f.ok) << f.reason;
    EXPECT_EQ(f.width, 77);
    EXPECT_EQ(f.height, 45);
    EXPECT_EQ(f.coding, JpegCoding::baseline);
    EXPECT_FALSE(f.arithmetic);
    EXPECT_EQ(f.precision, 8);
    EXPECT_EQ(f.subsampling(), c.read) << to_string(c.read);
    EXPECT_EQ(f.component_count, c.written == ChromaSubsampling::gray ? 1 : 3);
    EXPECT_EQ(f.first_scan_components, f.component_count);
  }
}

TEST(JpegFrame, TheSizeAgreesWithLibjpegOnALargeImage) {
  const auto j = encoded(500, 375, ChromaSubsampling::s420);
  const JpegFrame f = parse_jpeg_frame(j);
  const auto info = read_jpeg_header(j);
  ASSERT_TRUE(f.ok && info);
  EXPECT_EQ(f.width, info->width);
  EXPECT_EQ(f.height, info->height);
}

TEST(JpegFrame, ProgressiveFilesAreProgressiveWithAFirstScanOfDcOnly) {
  const JpegFrame f = parse_jpeg_frame(encoded(64, 48, ChromaSubsampling::s420, true));
  ASSERT_TRUE(f.ok) << f.reason;
  EXPECT_EQ(f.sof_marker, 0xC2);
  EXPECT_EQ(f.coding, JpegCoding::progressive);
  EXPECT_EQ(f.width, 64);
  EXPECT_EQ(f.height, 48);
}

TEST(JpegFrame, CmykAndYcckCarryTheAdobeTransform) {
  const Comp k4[] = {{1, 0x11, 0}, {2, 0x11, 1}, {3, 0x11, 1}, {4, 0x11, 0}};
  for (const std::uint8_t transform : {0, 2}) {
    const JpegFrame f = parse_jpeg_frame(
        file({adobe(transform), kDqt, sof(0xC0, 8, 32, 16, {k4[0], k4[1], k4[2], k4[3]}), sos(4)}));
    ASSERT_TRUE(f.ok) << f.reason;
    EXPECT_EQ(f.component_count, 4);
    EXPECT_TRUE(f.adobe);
    EXPECT_EQ(f.adobe_transform, transform);
    EXPECT_EQ(f.subsampling(), JpegSubsampling::other);
  }
}

TEST(JpegFrame, TheCodingProcessComesFromTheSofMarker) {
  struct Case {
    std::uint8_t marker;
    JpegCoding coding;
    bool arithmetic;
  };
  for (const Case c :
       {Case{0xC0, JpegCoding::baseline, false}, Case{0xC1, JpegCoding::extended, false},
        Case{0xC2, JpegCoding::progressive, false}, Case{0xC3, JpegCoding::lossless, false},
        Case{0xC5, JpegCoding::hierarchical, false}, Case{0xC9, JpegCoding::extended, true},
        Case{0xCA, JpegCoding::progressive, true}, Case{0xCB, JpegCoding::lossless, true}}) {
    const JpegFrame f = parse_jpeg_frame(file({sof(c.marker, 8, 16, 16, {{1, 0x11, 0}}), sos(1)}));
    ASSERT_TRUE(f.ok) << f.reason;
    EXPECT_EQ(f.coding, c.coding) << int(c.marker);
    EXPECT_EQ(f.arithmetic, c.arithmetic) << int(c.marker);
  }
}

TEST(JpegFrame, FillBytesStandaloneMarkersAndRestartIntervalsAreWalkedOver) {
  std::vector<std::uint8_t> b = {0xFF, 0xD8, 0xFF, 0xFF, 0xFF, 0x01};  // fill bytes, TEM
  const Segment dri{0xDD, {0x00, 0x10}};
  const auto rest = file({dri, sof(0xC0, 8, 20, 10, {{1, 0x11, 0}}), sos(1)});
  b.insert(b.end(), rest.begin() + 2, rest.end());
  const JpegFrame f = parse_jpeg_frame(b);
  ASSERT_TRUE(f.ok) << f.reason;
  EXPECT_EQ(f.restart_interval, 16);
  EXPECT_EQ(f.width, 20);
}

TEST(JpegFrame, AFrameInSeveralScansIsSeen) {
  const JpegFrame f = parse_jpeg_frame(
      file({sof(0xC0, 8, 16, 16, {{1, 0x22, 0}, {2, 0x11, 1}, {3, 0x11, 1}}), sos(1)}));
  ASSERT_TRUE(f.ok) << f.reason;
  EXPECT_EQ(f.first_scan_components, 1);
  EXPECT_EQ(f.component_count, 3);
}

TEST(JpegFrame, NotAJpegIsRejected) {
  const std::vector<std::uint8_t> png = {0x89, 'P', 'N', 'G', 0x0d, 0x0a, 0x1a, 0x0a};
  EXPECT_FALSE(parse_jpeg_frame(png).ok);
  EXPECT_FALSE(parse_jpeg_frame({}).ok);
  EXPECT_NE(parse_jpeg_frame(png).reason.find("not a JPEG"), std::string::npos);
}

TEST(JpegFrame, AFileCutInsideItsHeadersIsTruncatedAtEveryLength) {
  const auto j = encoded(40, 30, ChromaSubsampling::s420);
  // Where the first scan's header ends: past it, the cut is in the entropy-coded data.
  std::size_t sos_end = 0;
  for (std::size_t i = 2; i + 3 < j.size(); ++i) {
    if (j[i] == 0xFF && j[i + 1] == 0xDA) {
      sos_end = i + 2 + ((std::size_t{j[i + 2]} << 8) | j[i + 3]);
      break;
    }
  }
  ASSERT_GT(sos_end, 100u);
  for (std::size_t n = 0; n < sos_end; ++n) {
    const JpegFrame f = parse_jpeg_frame(std::span(j.data(), n));
    EXPECT_FALSE(f.ok) << "cut at " << n;
    if (n >= 2) {
      EXPECT_NE(f.reason.find("truncated"), std::string::npos) << n << ": " << f.reason;
    }
  }
  EXPECT_TRUE(parse_jpeg_frame(std::span(j.data(), sos_end)).ok);
  EXPECT_TRUE(parse_jpeg_frame(std::span(j.data(), sos_end + 10)).ok);
}

TEST(JpegFrame, DamagedHeadersSayWhatIsWrong) {
  auto bad_len = file({sof(0xC0, 8, 16, 16, {{1, 0x11, 0}}), sos(1)});
  bad_len[5] = 1;  // the SOF segment's length: 1
  EXPECT_NE(parse_jpeg_frame(bad_len).reason.find("length 1"), std::string::npos);

  auto no_ff = file({sof(0xC0, 8, 16, 16, {{1, 0x11, 0}}), sos(1)});
  no_ff[2] = 0x12;
  EXPECT_NE(parse_jpeg_frame(no_ff).reason.find("bad marker"), std::string::npos);

  const JpegFrame zero_sampling =
      parse_jpeg_frame(file({sof(0xC0, 8, 16, 16, {{1, 0x01, 0}}), sos(1)}));
  EXPECT_FALSE(zero_sampling.ok);
  EXPECT_NE(zero_sampling.reason.find("sampling factors"), std::string::npos);

  const JpegFrame scan_first = parse_jpeg_frame(file({sos(1)}));
  EXPECT_NE(scan_first.reason.find("before any SOF"), std::string::npos);

  const std::vector<std::uint8_t> eoi_only = {0xFF, 0xD8, 0xFF, 0xD9};
  const JpegFrame eoi_first = parse_jpeg_frame(eoi_only);
  EXPECT_NE(eoi_first.reason.find("no frame header"), std::string::npos);

  const JpegFrame dnl = parse_jpeg_frame(file({sof(0xC0, 8, 16, 0, {{1, 0x11, 0}}), sos(1)}));
  EXPECT_FALSE(dnl.ok);
  EXPECT_NE(dnl.reason.find("DNL"), std::string::npos);
}

// --- the nvJPEG path's verdict ---------------------------------------------------------------

TEST(NvjpegHeaderVerdict, BaselineCommonLayoutsAreBatchedOnTheHardware) {
  for (const ChromaSubsampling s :
       {ChromaSubsampling::s444, ChromaSubsampling::s422, ChromaSubsampling::s420,
        ChromaSubsampling::s440, ChromaSubsampling::gray}) {
    const auto v = nvjpeg_header_verdict(encoded(33, 21, s), true);
    ASSERT_TRUE(v.ok) << v.reason;
    EXPECT_TRUE(v.batched_supported) << static_cast<int>(s);
    EXPECT_EQ(v.width, 33);
    EXPECT_EQ(v.height, 21);
    EXPECT_EQ(v.components, s == ChromaSubsampling::gray ? 1 : 3);
  }
}

TEST(NvjpegHeaderVerdict, ProgressiveAndFourOneOneGoToTheSingleDecodeOnTheHardware) {
  for (const auto& j :
       {encoded(32, 32, ChromaSubsampling::s420, true), encoded(32, 32, ChromaSubsampling::s411)}) {
    const auto hw = nvjpeg_header_verdict(j, true);
    ASSERT_TRUE(hw.ok) << hw.reason;
    EXPECT_FALSE(hw.batched_supported);
    // The other backends batch everything they decode.
    const auto other = nvjpeg_header_verdict(j, false);
    ASSERT_TRUE(other.ok);
    EXPECT_TRUE(other.batched_supported);
  }
}

TEST(NvjpegHeaderVerdict, ExtendedSequentialAndSeveralScansAreNotBatchedOnTheHardware) {
  const auto extended = nvjpeg_header_verdict(
      file({sof(0xC1, 8, 16, 16, {{1, 0x11, 0}, {2, 0x11, 1}, {3, 0x11, 1}}), sos(3)}), true);
  ASSERT_TRUE(extended.ok) << extended.reason;
  EXPECT_FALSE(extended.batched_supported);
  const auto scans = nvjpeg_header_verdict(
      file({sof(0xC0, 8, 16, 16, {{1, 0x22, 0}, {2, 0x11, 1}, {3, 0x11, 1}}), sos(1)}), true);
  ASSERT_TRUE(scans.ok) << scans.reason;
  EXPECT_FALSE(scans.batched_supported);
}

TEST(NvjpegHeaderVerdict, WhatNvjpegCannotDecodeIsRejectedWithTheReason) {
  const Comp c1{1, 0x11, 0}, c2{2, 0x11, 1}, c3{3, 0x11, 1}, c4{4, 0x11, 0};
  struct Case {
    std::vector<std::uint8_t> jpeg;
    const char* says;
  };
  const Case cases[] = {
      {file({adobe(0), sof(0xC0, 8, 16, 16, {c1, c2, c3, c4}), sos(4)}), "CMYK"},
      {file({sof(0xC9, 8, 16, 16, {c1, c2, c3}), sos(3)}), "arithmetic"},
      {file({sof(0xC1, 12, 16, 16, {c1, c2, c3}), sos(3)}), "12-bit"},
      {file({sof(0xC3, 8, 16, 16, {c1}), sos(1)}), "lossless"},
      {file({sof(0xC0, 8, 16, 16, {c1, c2}), sos(2)}), "2 components"},
      {{0xFF, 0xD8, 0xFF, 0xC0, 0x00}, "truncated"},
  };
  for (const Case& c : cases) {
    const auto v = nvjpeg_header_verdict(c.jpeg, true);
    EXPECT_FALSE(v.ok) << c.says;
    EXPECT_NE(v.reason.find(c.says), std::string::npos) << v.reason;
  }
}

}  // namespace
}  // namespace gb::data
