// data/decode.cpp: libjpeg (libjpeg-turbo) region decode with DCT scaling, and decode_augment.
//
// Error handling: libjpeg calls error_exit on fatal errors and emit_message(-1) on warnings;
// both longjmp back to the setjmp of the phase function that made the call. The phase
// functions (read_header_phase, start_phase, read_rows_phase) hold only plain C data and write
// their results into State, so the jump skips no destructor and no register-cached local is
// read after it.
#include "data/decode.hpp"

#include <csetjmp>
#include <cstdio>  // jpeglib.h needs FILE

#include <jerror.h>
#include <jpeglib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

namespace gb::data {

std::string_view to_string(DecodeFailure failure) {
  switch (failure) {
    case DecodeFailure::not_jpeg:
      return "not_jpeg";
    case DecodeFailure::truncated:
      return "truncated";
    case DecodeFailure::corrupt:
      return "corrupt";
    case DecodeFailure::unsupported:
      return "unsupported";
  }
  return "corrupt";
}

int dct_scale_for_crop(int crop_w, int crop_h, int out_w, int out_h) {
  // Powers of two only: libjpeg-turbo's 1/8, 2/8 and 4/8 IDCTs are SIMD, the 3/8, 5/8, 6/8
  // and 7/8 ones plain C (13 % of all instructions per image). Decoding a larger region and
  // resizing more costs less: +6.6 % images per core (bench/NOTES.md d4).
  for (int m = 1; m < 8; m *= 2) {
    // crop * m / 8 >= out, in integers.
    if (static_cast<long>(crop_w) * m >= 8L * out_w &&
        static_cast<long>(crop_h) * m >= 8L * out_h) {
      return m;
    }
  }
  return 8;
}

namespace {

// The largest region decoded at once (pixels): 64 MP, 192 MB of RGB. Larger crops of huge
// images are refused as unsupported rather than exhausting a worker's memory.
constexpr long kMaxRegionPixels = 64L << 20;

struct ErrorManager {
  jpeg_error_mgr pub;  // first: libjpeg sees a jpeg_error_mgr*
  std::jmp_buf jump;
  int msg_code;
  bool warning;
  char message[JMSG_LENGTH_MAX];
};

void record_and_jump(j_common_ptr cinfo, bool warning) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  err->msg_code = err->pub.msg_code;
  err->warning = warning;
  (*err->pub.format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

void on_error_exit(j_common_ptr cinfo) {
  record_and_jump(cinfo, false);
}

// Level -1 is a warning (corrupt data libjpeg would paper over): fatal here. Levels >= 0 are
// trace messages: ignored.
void on_emit_message(j_common_ptr cinfo, int msg_level) {
  if (msg_level < 0) record_and_jump(cinfo, true);
}

void on_output_message(j_common_ptr) {}

}  // namespace

struct JpegDecoder::State {
  jpeg_decompress_struct cinfo;
  ErrorManager err;
  bool started = false;  // between jpeg_read_header and the abort that resets cinfo
  JpegImageInfo info;
  // start_phase's inputs and outputs, in scaled pixels.
  int scale_num = 8;
  JDIMENSION crop_x = 0, crop_w = 0;  // in: wanted columns; out: iMCU-aligned columns
  JDIMENSION row0 = 0, rows = 0;      // the rows wanted
  JDIMENSION scaled_w = 0, scaled_h = 0;
  // read_rows_phase's input.
  std::uint8_t* out = nullptr;
  std::size_t out_stride = 0;
};

namespace {

using State = JpegDecoder::State;

// Phase 1: parse the header. Returns false after a libjpeg error (err holds it).
bool read_header_phase(State& s, const std::uint8_t* data, std::size_t size) {
  if (setjmp(s.err.jump) != 0) return false;
  jpeg_mem_src(&s.cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&s.cinfo, TRUE);
  return true;
}

// Phase 2: start decompression at scale_num/8, RGB out; crop to the wanted columns; skip to
// the first wanted row.
bool start_phase(State& s) {
  if (setjmp(s.err.jump) != 0) return false;
  s.cinfo.scale_num = static_cast<unsigned>(s.scale_num);
  s.cinfo.scale_denom = 8;
  s.cinfo.out_color_space = JCS_RGB;
  s.cinfo.dct_method = JDCT_ISLOW;  // what PIL and TurboJPEG use by default
  s.cinfo.do_fancy_upsampling = TRUE;
  jpeg_start_decompress(&s.cinfo);
  s.scaled_w = s.cinfo.output_width;
  s.scaled_h = s.cinfo.output_height;
  if (s.crop_x + s.crop_w > s.scaled_w) s.crop_w = s.scaled_w - s.crop_x;
  if (s.row0 + s.rows > s.scaled_h) s.rows = s.scaled_h - s.row0;
  if (s.crop_x != 0 || s.crop_w != s.scaled_w) jpeg_crop_scanline(&s.cinfo, &s.crop_x, &s.crop_w);
  if (s.row0 > 0) jpeg_skip_scanlines(&s.cinfo, s.row0);
  return true;
}

// Phase 3: read the wanted rows into s.out; finish the file when they reach its end (so a cut
// in the last rows is noticed), else stop early.
bool read_rows_phase(State& s) {
  if (setjmp(s.err.jump) != 0) return false;
  JDIMENSION done = 0;
  while (done < s.rows) {
    JSAMPROW row_pointers[16];
    const JDIMENSION want = std::min<JDIMENSION>(16, s.rows - done);
    for (JDIMENSION i = 0; i < want; ++i) row_pointers[i] = s.out + (done + i) * s.out_stride;
    const JDIMENSION got = jpeg_read_scanlines(&s.cinfo, row_pointers, want);
    if (got == 0) {  // suspension cannot happen with a memory source; treat as truncation
      ERREXIT(&s.cinfo, JERR_INPUT_EOF);
    }
    done += got;
  }
  if (s.cinfo.output_scanline >= s.cinfo.output_height) {
    jpeg_finish_decompress(&s.cinfo);
  } else {
    jpeg_abort_decompress(&s.cinfo);
  }
  return true;
}

DecodeFailure classify(const ErrorManager& err) {
  switch (err.msg_code) {
    case JERR_NO_SOI:
    case JERR_INPUT_EMPTY:
      return DecodeFailure::not_jpeg;
    case JERR_INPUT_EOF:
    case JWRN_JPEG_EOF:
      return DecodeFailure::truncated;
    case JERR_BAD_PRECISION:
    case JERR_CONVERSION_NOTIMPL:
    case JERR_IMAGE_TOO_BIG:
      return DecodeFailure::unsupported;
    default:
      return DecodeFailure::corrupt;
  }
}

}  // namespace

JpegDecoder::JpegDecoder() : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.cinfo.err = jpeg_std_error(&s.err.pub);
  s.err.pub.error_exit = on_error_exit;
  s.err.pub.emit_message = on_emit_message;
  s.err.pub.output_message = on_output_message;
  if (setjmp(s.err.jump) != 0) {
    throw Error(ErrorKind::runtime,
                std::string("libjpeg: cannot create a decompressor: ") + s.err.message);
  }
  jpeg_create_decompress(&s.cinfo);
}

JpegDecoder::JpegDecoder(JpegDecoder&&) noexcept = default;
JpegDecoder& JpegDecoder::operator=(JpegDecoder&&) noexcept = default;

JpegDecoder::~JpegDecoder() {
  if (state_) jpeg_destroy_decompress(&state_->cinfo);
}

JpegImageInfo JpegDecoder::begin(std::span<const std::uint8_t> jpeg) {
  State& s = *state_;
  if (s.started) {
    jpeg_abort_decompress(&s.cinfo);
    s.started = false;
  }
  if (jpeg.size() < 3 || jpeg[0] != 0xFF || jpeg[1] != 0xD8) {
    throw DecodeError(DecodeFailure::not_jpeg, jpeg.empty()
                                                   ? "not a JPEG: no data"
                                                   : "not a JPEG: no start-of-image marker");
  }
  s.started = true;
  if (!read_header_phase(s, jpeg.data(), jpeg.size())) {
    jpeg_abort_decompress(&s.cinfo);
    s.started = false;
    throw DecodeError(classify(s.err), std::string("JPEG header: ") + s.err.message);
  }
  const J_COLOR_SPACE cs = s.cinfo.jpeg_color_space;
  if (!((cs == JCS_GRAYSCALE && s.cinfo.num_components == 1) ||
        ((cs == JCS_YCbCr || cs == JCS_RGB) && s.cinfo.num_components == 3))) {
    jpeg_abort_decompress(&s.cinfo);
    s.started = false;
    throw DecodeError(DecodeFailure::unsupported,
                      "JPEG colour space not supported (CMYK/YCCK or unusual components: " +
                          std::to_string(s.cinfo.num_components) + ")");
  }
  s.info = {static_cast<int>(s.cinfo.image_width), static_cast<int>(s.cinfo.image_height),
            s.cinfo.num_components};
  return s.info;
}

DecodedRegion JpegDecoder::decode_region(const CropBox& box, int out_w, int out_h,
                                         std::vector<std::uint8_t>& scratch) {
  State& s = *state_;
  const JpegImageInfo& info = s.info;
  if (box.width <= 0 || box.height <= 0 || box.x < 0 || box.y < 0 ||
      box.x + box.width > info.width || box.y + box.height > info.height || out_w <= 0 ||
      out_h <= 0) {
    jpeg_abort_decompress(&s.cinfo);
    s.started = false;
    throw Error(ErrorKind::usage, "decode_for_crop: crop box outside the " +
                                      std::to_string(info.width) + "x" +
                                      std::to_string(info.height) + " image");
  }
  // The crop in scaled pixels; the whole pixels it touches.
  const int m = dct_scale_for_crop(box.width, box.height, out_w, out_h);
  const double f = m / 8.0;
  const CropRect scaled{box.x * f, box.y * f, box.width * f, box.height * f};
  const int x_lo = static_cast<int>(std::floor(scaled.x));
  const int x_hi = static_cast<int>(std::ceil(scaled.x + scaled.width));
  const int y_lo = static_cast<int>(std::floor(scaled.y));
  const int y_hi = static_cast<int>(std::ceil(scaled.y + scaled.height));
  s.scale_num = m;
  s.crop_x = static_cast<JDIMENSION>(x_lo);
  s.crop_w = static_cast<JDIMENSION>(x_hi - x_lo);
  s.row0 = static_cast<JDIMENSION>(y_lo);
  s.rows = static_cast<JDIMENSION>(y_hi - y_lo);
  if (!start_phase(s)) {
    jpeg_abort_decompress(&s.cinfo);
    s.started = false;
    throw DecodeError(classify(s.err), std::string("JPEG decode: ") + s.err.message);
  }
  if (static_cast<long>(s.crop_w) * s.rows > kMaxRegionPixels) {
    jpeg_abort_decompress(&s.cinfo);
    s.started = false;
    throw DecodeError(DecodeFailure::unsupported,
                      "JPEG crop region too large: " + std::to_string(s.crop_w) + "x" +
                          std::to_string(s.rows) + " pixels");
  }
  s.out_stride = static_cast<std::size_t>(s.crop_w) * 3;
  scratch.resize(s.out_stride * s.rows);
  s.out = scratch.data();
  const bool ok = read_rows_phase(s);
  s.started = false;  // finished or aborted either way
  if (!ok) {
    jpeg_abort_decompress(&s.cinfo);
    throw DecodeError(classify(s.err), std::string("JPEG decode: ") + s.err.message);
  }
  DecodedRegion r;
  r.pixels = scratch.data();
  r.width = static_cast<int>(s.crop_w);
  r.height = static_cast<int>(s.rows);
  r.stride = static_cast<int>(s.out_stride);
  r.channels = 3;
  r.x0 = static_cast<int>(s.crop_x);
  r.y0 = y_lo;
  r.scale_num = m;
  // The scaled image is ceil(W*m/8) wide; the box's right edge stays inside it.
  r.box = CropRect{scaled.x - r.x0, scaled.y - r.y0,
                   std::min(scaled.width, r.width - (scaled.x - r.x0)),
                   std::min(scaled.height, r.height - (scaled.y - r.y0))};
  return r;
}

JpegImageInfo JpegDecoder::read_info(std::span<const std::uint8_t> jpeg) {
  const JpegImageInfo info = begin(jpeg);
  jpeg_abort_decompress(&state_->cinfo);
  state_->started = false;
  return info;
}

DecodedRegion JpegDecoder::decode_for_crop(std::span<const std::uint8_t> jpeg, const CropBox& box,
                                           int out_w, int out_h,
                                           std::vector<std::uint8_t>& scratch) {
  begin(jpeg);
  return decode_region(box, out_w, out_h, scratch);
}

void JpegDecoder::finish_augment(const AugmentOptions& options, std::uint8_t* dst,
                                 DecodeScratch& scratch, DecodeAugmentResult& result) {
  using Clock = std::chrono::steady_clock;
  const auto ns = [](Clock::duration d) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
  };
  const auto t0 = Clock::now();
  const DecodedRegion region =
      decode_region(result.box, options.out_w, options.out_h, scratch.pixels);
  const auto t1 = Clock::now();
  resize_crop_flip(region.pixels, region.width, region.height, region.stride, region.channels,
                   region.box, result.flipped, options.out_w, options.out_h, dst, options.layout,
                   scratch.resize);
  const auto t2 = Clock::now();
  result.scale_num = region.scale_num;
  result.decode_ns += ns(t1 - t0);
  result.augment_ns += ns(t2 - t1);
}

}  // namespace gb::data
