// tests/gpu/test_nvjpeg_decode.cpp: nvJPEG (loaded with dlopen, gpu/nvjpeg.hpp) decodes the
// synthetic ImageNet-like JPEGs (data/synth.hpp: 4:2:0, quality ~90, ImageNet's sizes) like
// libjpeg-turbo does, through the batched path (the hardware engines where the card has them)
// and the single-image DEFAULT path; the header parser agrees with the encoder on sizes; bad data
// is rejected per image without failing the rest of the batch; the loader's CPU header verdict
// (pipeline/nvjpeg_header.hpp) agrees with nvJPEG's own parse and nvjpegDecodeBatchedSupported
// on every layout TurboJPEG writes, and an image it sends to the batched decode is decoded there.
// Skipped without a GPU or without
// libnvjpeg.
//
// Tolerance: nvJPEG's IDCT and chroma upsampling are not libjpeg's (libjpeg-turbo's "fancy"
// triangular upsampling of 4:2:0 chroma, ISLOW IDCT), so pixels differ by a few levels near
// colour edges: PSNR >= 35 dB per image against libjpeg's full-size decode.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <turbojpeg.h>

#include "core/error.hpp"
#include "data/decode.hpp"
#include "data/jpeg.hpp"
#include "data/synth.hpp"
#include "gpu/cuda_raii.hpp"
#include "gpu/nvjpeg.hpp"
#include "pipeline/nvjpeg_header.hpp"

namespace gb::gpu {
namespace {

constexpr double kMinPsnrDb = 35;

bool has_gpu() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

std::vector<std::vector<std::uint8_t>> synth_jpegs(std::size_t count) {
  data::SynthOptions options;
  options.seed = 11;
  data::JpegEncoder encoder;
  std::vector<std::vector<std::uint8_t>> out(count);
  for (std::size_t i = 0; i < count; ++i)
    data::synth_jpeg(data::synth_image_spec(options, i), encoder, out[i]);
  return out;
}

// libjpeg-turbo's full-size RGB decode.
std::vector<std::uint8_t> libjpeg_decode(const std::vector<std::uint8_t>& jpeg, int& w, int& h) {
  data::JpegDecoder dec;
  const data::JpegImageInfo info = dec.read_info(jpeg);
  w = info.width;
  h = info.height;
  std::vector<std::uint8_t> scratch;
  const data::DecodedRegion r = dec.decode_for_crop(jpeg, {0, 0, w, h}, w, h, scratch);
  std::vector<std::uint8_t> px(static_cast<std::size_t>(w) * h * 3);
  for (int y = 0; y < h; ++y)
    std::copy_n(r.pixels + static_cast<std::size_t>(y) * r.stride, static_cast<std::size_t>(w) * 3,
                px.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(y) * w * 3));
  return px;
}

// libjpeg-turbo's full-size RGB decode with its plain chroma upsampling (each chroma sample
// repeated over the pixels it covers) instead of the default triangle filter.
std::vector<std::uint8_t> libjpeg_decode_plain_upsampling(const std::vector<std::uint8_t>& jpeg) {
  tjhandle tj = tjInitDecompress();
  int w = 0, h = 0, subsamp = 0, colorspace = 0;
  std::vector<std::uint8_t> px;
  if (tjDecompressHeader3(tj, jpeg.data(), jpeg.size(), &w, &h, &subsamp, &colorspace) == 0) {
    px.resize(static_cast<std::size_t>(w) * h * 3);
    if (tjDecompress2(tj, jpeg.data(), jpeg.size(), px.data(), w, w * 3, h, TJPF_RGB,
                      TJFLAG_FASTUPSAMPLE) != 0)
      px.clear();
  }
  tjDestroy(tj);
  return px;
}

double psnr_db(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b) {
  double sq = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double d = static_cast<double>(a[i]) - b[i];
    sq += d * d;
  }
  const double mse = sq / static_cast<double>(a.size());
  return mse > 0 ? 10 * std::log10(255.0 * 255.0 / mse) : 99;
}

class NvjpegDecode : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!has_gpu()) GTEST_SKIP() << "no CUDA device";
    std::string why;
    library_ = NvjpegLibrary::load(default_nvjpeg_library_names(), why);
    if (!library_) GTEST_SKIP() << why;
  }

  // Decodes `jpegs` in one call and compares each good one with libjpeg.
  void decode_and_compare(NvjpegDecoder& decoder,
                          const std::vector<std::vector<std::uint8_t>>& jpegs, int state = 0) {
    auto parser = decoder.header_parser();
    std::vector<NvjpegDecoder::Image> images;
    std::vector<DeviceBuffer> outputs;
    for (const auto& j : jpegs) {
      const JpegHeader h = parser.parse(j);
      ASSERT_TRUE(h.ok) << h.reason;
      NvjpegDecoder::Image im;
      im.jpeg = j.data();
      im.bytes = j.size();
      im.width = h.width;
      im.height = h.height;
      im.batched_supported = h.batched_supported;
      outputs.emplace_back(static_cast<std::size_t>(h.width) * h.height * 3);
      im.dst = outputs.back().as<std::uint8_t>();
      im.pitch = static_cast<std::size_t>(h.width) * 3;
      images.push_back(im);
    }
    const Stream stream = Stream::create();
    NvjpegDecoder::DecodeStatus status;
    decoder.decode(images, stream.get(), status, state);
    GB_CHECK_CUDA(cudaStreamSynchronize(stream.get()));
    for (std::size_t i = 0; i < jpegs.size(); ++i) {
      ASSERT_TRUE(status.ok[i]) << i << ": " << status.reason[i];
      int w = 0, h = 0;
      const auto want = libjpeg_decode(jpegs[i], w, h);
      ASSERT_EQ(w, images[i].width);
      ASSERT_EQ(h, images[i].height);
      std::vector<std::uint8_t> got(want.size());
      GB_CHECK_CUDA(cudaMemcpy(got.data(), images[i].dst, got.size(), cudaMemcpyDeviceToHost));
      EXPECT_GE(psnr_db(got, want), kMinPsnrDb) << "image " << i << " " << w << "x" << h;
    }
  }

  std::shared_ptr<NvjpegLibrary> library_;
};

TEST_F(NvjpegDecode, BatchedDecodeMatchesLibjpeg) {
  NvjpegDecoder decoder(library_, NvjpegBackendChoice::automatic);
  const std::string note =
      decoder.fallback_reason().empty() ? "" : " (" + decoder.fallback_reason() + ")";
  std::printf("nvJPEG %s, backend %s%s\n", library_->version().c_str(),
              std::string(to_string(decoder.backend())).c_str(), note.c_str());
  decode_and_compare(decoder, synth_jpegs(8));
}

TEST_F(NvjpegDecode, DefaultBackendMatchesLibjpeg) {
  NvjpegDecoder decoder(library_, NvjpegBackendChoice::default_backend);
  decode_and_compare(decoder, synth_jpegs(3));
}

TEST_F(NvjpegDecode, HeaderParserReadsTheEncodedSize) {
  NvjpegDecoder decoder(library_, NvjpegBackendChoice::automatic);
  auto parser = decoder.header_parser();
  data::SynthOptions options;
  options.seed = 11;
  const auto jpegs = synth_jpegs(4);
  for (std::size_t i = 0; i < jpegs.size(); ++i) {
    const data::SynthImageSpec spec = data::synth_image_spec(options, i);
    const JpegHeader h = parser.parse(jpegs[i]);
    ASSERT_TRUE(h.ok) << h.reason;
    EXPECT_EQ(h.width, spec.width);
    EXPECT_EQ(h.height, spec.height);
    EXPECT_EQ(h.components, 3);
  }
}

TEST_F(NvjpegDecode, NotAJpegIsRejectedByTheHeaderParser) {
  NvjpegDecoder decoder(library_, NvjpegBackendChoice::automatic);
  auto parser = decoder.header_parser();
  const std::vector<std::uint8_t> png = {0x89, 'P', 'N', 'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0};
  const JpegHeader h = parser.parse(png);
  EXPECT_FALSE(h.ok);
  EXPECT_FALSE(h.reason.empty());
}

TEST_F(NvjpegDecode, ACorruptImageFailsAloneNotItsBatch) {
  NvjpegDecoder decoder(library_, NvjpegBackendChoice::automatic);
  auto parser = decoder.header_parser();
  auto jpegs = synth_jpegs(4);
  // Image 1: its header intact, its entropy-coded data replaced by garbage markers.
  auto& bad = jpegs[1];
  for (std::size_t i = bad.size() / 3; i < bad.size() - 2; i += 7) bad[i] = 0xff;
  std::vector<NvjpegDecoder::Image> images;
  std::vector<DeviceBuffer> outputs;
  for (const auto& j : jpegs) {
    const JpegHeader h = parser.parse(j);
    ASSERT_TRUE(h.ok) << h.reason;
    outputs.emplace_back(static_cast<std::size_t>(h.width) * h.height * 3);
    images.push_back({j.data(), j.size(), h.width, h.height, h.batched_supported,
                      outputs.back().as<std::uint8_t>(), static_cast<std::size_t>(h.width) * 3});
  }
  const Stream stream = Stream::create();
  NvjpegDecoder::DecodeStatus status;
  EXPECT_NO_THROW(decoder.decode(images, stream.get(), status));
  GB_CHECK_CUDA(cudaStreamSynchronize(stream.get()));
  EXPECT_TRUE(status.ok[0]);
  EXPECT_TRUE(status.ok[2]);
  EXPECT_TRUE(status.ok[3]);
  // nvJPEG may decode the damaged scan into garbage without an error (the hardware engine does
  // not check everything); what matters is that it never takes the good images down with it.
  if (!status.ok[1]) {
    EXPECT_FALSE(status.reason[1].empty());
  }
}

// The batch stage alternates the decoder's batched states (one per arena): each decodes
// correctly, batches of different sizes on each (a re-initialised state), and a state the
// decoder does not have is an error, not a stray pointer.
TEST_F(NvjpegDecode, EachBatchedStateDecodesAndAStateOutOfRangeIsRefused) {
  NvjpegDecoder decoder(library_, NvjpegBackendChoice::automatic);
  const auto jpegs = synth_jpegs(6);
  for (int round = 0; round < 2; ++round) {
    for (int state = 0; state < NvjpegDecoder::kBatchedStates; ++state) {
      const std::vector<std::vector<std::uint8_t>> part(
          jpegs.begin(), jpegs.begin() + 3 + static_cast<std::ptrdiff_t>(state + round) % 4);
      decode_and_compare(decoder, part, state);
    }
  }
  const Stream stream = Stream::create();
  NvjpegDecoder::DecodeStatus status;
  EXPECT_THROW(decoder.decode({}, stream.get(), status, NvjpegDecoder::kBatchedStates), Error);
  EXPECT_THROW(decoder.decode({}, stream.get(), status, -1), Error);
}

// Every layout TurboJPEG writes: the CPU verdict (what the loader's readers use) against
// nvJPEG's own header parse and nvjpegDecodeBatchedSupported (HeaderParser), then the batch
// decoded with the CPU verdicts and compared with libjpeg.
TEST_F(NvjpegDecode, CpuHeaderVerdictAgreesWithNvjpeg) {
  NvjpegDecoder decoder(library_, NvjpegBackendChoice::automatic);
  const bool hardware = decoder.backend() == NvjpegBackend::hardware;
  auto parser = decoder.header_parser();
  struct Case {
    const char* name;
    data::ChromaSubsampling s;
    bool progressive;
  };
  const Case cases[] = {{"4:4:4", data::ChromaSubsampling::s444, false},
                        {"4:2:2", data::ChromaSubsampling::s422, false},
                        {"4:2:0", data::ChromaSubsampling::s420, false},
                        {"4:4:0", data::ChromaSubsampling::s440, false},
                        {"4:1:1", data::ChromaSubsampling::s411, false},
                        {"gray", data::ChromaSubsampling::gray, false},
                        {"4:2:0 progressive", data::ChromaSubsampling::s420, true},
                        {"4:4:4 progressive", data::ChromaSubsampling::s444, true}};
  std::vector<std::vector<std::uint8_t>> jpegs;
  for (const Case& c : cases) {
    const int w = 123, h = 77;
    std::vector<std::uint8_t> rgb(static_cast<std::size_t>(w) * h * 3);
    for (std::size_t i = 0; i < rgb.size(); ++i)
      rgb[i] = static_cast<std::uint8_t>((i % (w * 3)) * 2 + (i / (w * 3)));
    std::vector<std::uint8_t> out;
    data::JpegEncoder().encode_rgb(rgb, w, h, 90, c.s, out, c.progressive);
    const JpegHeader nv = parser.parse(out);
    const pipeline::NvjpegHeaderVerdict cpu = pipeline::nvjpeg_header_verdict(out, hardware);
    std::printf("%-18s nvJPEG ok=%d batched=%d | CPU ok=%d batched=%d\n", c.name, nv.ok,
                nv.batched_supported, cpu.ok, cpu.batched_supported);
    EXPECT_EQ(cpu.ok, nv.ok) << c.name << ": " << nv.reason << " / " << cpu.reason;
    EXPECT_EQ(cpu.width, nv.width) << c.name;
    EXPECT_EQ(cpu.height, nv.height) << c.name;
    EXPECT_EQ(cpu.components, nv.components) << c.name;
    EXPECT_EQ(cpu.batched_supported, nv.batched_supported) << c.name;
    jpegs.push_back(std::move(out));
  }
  // Decoded with the CPU verdicts, as the loader does.
  std::vector<NvjpegDecoder::Image> images;
  std::vector<DeviceBuffer> outputs;
  for (const auto& j : jpegs) {
    const pipeline::NvjpegHeaderVerdict v = pipeline::nvjpeg_header_verdict(j, hardware);
    ASSERT_TRUE(v.ok) << v.reason;
    outputs.emplace_back(static_cast<std::size_t>(v.width) * v.height * 3);
    images.push_back({j.data(), j.size(), v.width, v.height, v.batched_supported,
                      outputs.back().as<std::uint8_t>(), static_cast<std::size_t>(v.width) * 3});
  }
  const Stream stream = Stream::create();
  NvjpegDecoder::DecodeStatus status;
  decoder.decode(images, stream.get(), status);
  GB_CHECK_CUDA(cudaStreamSynchronize(stream.get()));
  EXPECT_FALSE(status.batch_failed) << "a verdict sent an image the batched decoder refused";
  for (std::size_t i = 0; i < jpegs.size(); ++i) {
    ASSERT_TRUE(status.ok[i]) << cases[i].name << ": " << status.reason[i];
    int w = 0, h = 0;
    const auto want = libjpeg_decode(jpegs[i], w, h);
    std::vector<std::uint8_t> got(want.size());
    GB_CHECK_CUDA(cudaMemcpy(got.data(), images[i].dst, got.size(), cudaMemcpyDeviceToHost));
    // This pattern changes colour every pixel, so for the subsampled layouts the chroma
    // upsampling filter alone moves pixels by more than the bound: JPEG leaves the filter to the
    // decoder, and libjpeg has two. nvJPEG must be as close to one of them as to a 4:4:4 decode.
    const auto plain = libjpeg_decode_plain_upsampling(jpegs[i]);
    ASSERT_EQ(plain.size(), want.size()) << cases[i].name;
    const double fancy_db = psnr_db(got, want), plain_db = psnr_db(got, plain);
    std::printf("%-18s nvJPEG against libjpeg: %.1f dB (triangle upsampling), %.1f dB (plain)\n",
                cases[i].name, fancy_db, plain_db);
    EXPECT_GE(std::max(fancy_db, plain_db), kMinPsnrDb) << cases[i].name;
  }
}

}  // namespace
}  // namespace gb::gpu
