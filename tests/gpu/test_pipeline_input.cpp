// tests/gpu/test_pipeline_input.cpp: the input pipeline's one interface in each decode mode on a
// small synthetic JPEG set, against the CPU reference path: the batches come in the reference
// loader's order (epochs running on, labels equal), and every image is the reference's --
// bit for bit on the CPU path (uint8 pixels normalized on the CPU), within PSNR 30 dB of a
// full-scale libjpeg decode of the same crop and flip where nvJPEG decoded it, and unchanged (to
// 0.01 levels) where a worker decoded it in the split. next() and into() give the same
// batches; the stats count what each path decoded; the pipeline's own check passes; NHWC bf16
// is the same batch laid out and rounded.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/float_bits.hpp"
#include "data/augment.hpp"
#include "data/decode.hpp"
#include "data/loader.hpp"
#include "data/normalize.hpp"
#include "data/open.hpp"
#include "data/synth.hpp"
#include "gpu/check.hpp"
#include "gpu/cuda_raii.hpp"
#include "gpu/nvjpeg.hpp"
#include "pipeline/input_pipeline.hpp"
#include "pipeline/process.hpp"
#include "pipeline/split.hpp"

namespace gb::pipeline {
namespace {

constexpr int kSize = 64;
constexpr std::size_t kBatch = 16;
constexpr std::size_t kBatches = 7;  // 48 images: 3 batches an epoch, into a third epoch
constexpr double kShare = 0.5;

// One batch of the CPU reference path: what a host Loader with the CPU per-sample work gives.
struct Reference {
  std::uint32_t epoch = 0;
  std::size_t number = 0;
  std::vector<std::size_t> indices;
  std::vector<std::int32_t> labels;
  std::vector<std::uint8_t> pixels;  // HWC per image
};

std::vector<Reference> reference_batches(const data::Dataset& ds, const PipelineOptions& o) {
  data::Loader loader(ds, cpu_loader_options(o, 2), jpeg_train_process(2, o.image_size));
  std::uint32_t epoch = 0;
  loader.start_epoch(epoch);
  std::vector<Reference> out;
  while (out.size() < kBatches) {
    const auto b = next_batch(loader, epoch);
    if (!b) break;
    out.push_back({b->epoch,
                   b->number,
                   {b->indices.begin(), b->indices.end()},
                   {b->labels.begin(), b->labels.end()},
                   {b->data.begin(), b->data.end()}});
    loader.release(*b);
  }
  loader.stop();
  return out;
}

// The GPU path's reference for one sample: the CPU path's crop and flip draws (its Philox stream
// for the epoch and index), the crop region decoded at full scale and resized, HWC.
std::vector<std::uint8_t> full_scale_reference(const data::Dataset& ds, const PipelineOptions& o,
                                               std::uint32_t epoch, std::size_t index) {
  std::vector<std::uint8_t> bytes;
  const data::Sample s = ds.read(index, bytes);
  data::JpegDecoder jpeg;
  data::DecodeScratch scratch;
  data::AugmentOptions augment;
  augment.out_w = augment.out_h = o.image_size;
  std::vector<std::uint8_t> scaled(static_cast<std::size_t>(o.image_size) * o.image_size * 3);
  data::Philox rng(o.seed, epoch, index);
  const data::DecodeAugmentResult draw =
      jpeg.decode_augment(s.bytes, rng, augment, scaled.data(), scratch);
  const data::DecodedRegion region =
      jpeg.decode_for_crop(s.bytes, draw.box, draw.box.width, draw.box.height, scratch.pixels);
  std::vector<std::uint8_t> out(scaled.size());
  data::resize_crop_flip(region.pixels, region.width, region.height, region.stride, region.channels,
                         region.box, draw.flipped, o.image_size, o.image_size, out.data(),
                         data::PixelLayout::hwc, scratch.resize);
  return out;
}

double psnr(const std::vector<double>& got, const std::uint8_t* want) {
  double sq = 0;
  for (std::size_t i = 0; i < got.size(); ++i) sq += (got[i] - want[i]) * (got[i] - want[i]);
  const double mse = sq / static_cast<double>(got.size());
  return mse > 0 ? 10 * std::log10(255.0 * 255.0 / mse) : 99;
}

class InputPipelineGpu : public ::testing::TestWithParam<DecodeMode> {
 protected:
  void SetUp() override {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) GTEST_SKIP() << "no CUDA device";
    std::string why;
    if (GetParam() != DecodeMode::cpu &&
        !gpu::NvjpegLibrary::load(gpu::default_nvjpeg_library_names(), why))
      GTEST_SKIP() << why;
    dir_ = std::filesystem::temp_directory_path() /
           ("gb-pipeline-" + std::to_string(reinterpret_cast<std::uintptr_t>(this)));
    data::SynthOptions so;
    so.output = dir_ / "set";
    so.images = 48;
    so.classes = 3;
    so.size_scale = 0.3;
    so.threads = 2;
    data::synth_dataset(so);
    dataset_ = data::open_dataset({.path = dir_ / "set"});
  }
  void TearDown() override {
    dataset_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  PipelineOptions options() const {
    PipelineOptions o;
    o.batch = kBatch;
    o.image_size = kSize;
    o.dtype = ElementType::f32;
    o.decode = GetParam();
    if (o.decode == DecodeMode::both) o.gpu_share = kShare;
    o.workers = 2;
    o.prefetch = 3;
    o.seed = 7;
    o.drop_last = true;
    return o;
  }
  // Image j of a batch copied back (fp32 NCHW) as pixel levels, HWC.
  static std::vector<double> levels(const std::vector<float>& out, std::size_t j,
                                    const PipelineOptions& o) {
    const std::size_t plane = static_cast<std::size_t>(o.image_size) * o.image_size;
    std::vector<double> hwc(plane * 3);
    for (std::size_t p = 0; p < plane; ++p)
      for (int c = 0; c < 3; ++c)
        hwc[p * 3 + c] =
            static_cast<double>(out[(j * 3 + c) * plane + p]) * o.norm.stddev[c] + o.norm.mean[c];
    return hwc;
  }
  void expect_image(const Reference& ref, std::size_t j, const std::vector<float>& out,
                    const PipelineOptions& o);

  std::filesystem::path dir_;
  std::unique_ptr<data::Dataset> dataset_;
};

void InputPipelineGpu::expect_image(const Reference& ref, std::size_t j,
                                    const std::vector<float>& out, const PipelineOptions& o) {
  const std::size_t image = static_cast<std::size_t>(o.image_size) * o.image_size * 3;
  const std::uint8_t* cpu = ref.pixels.data() + j * image;
  const bool nvjpeg = o.decode == DecodeMode::gpu ||
                      (o.decode == DecodeMode::both && split_to_gpu(ref.indices[j], kShare));
  if (o.decode == DecodeMode::cpu) {
    const data::BatchShape one{1, o.image_size, o.image_size, 3};
    std::vector<float> want(image);
    data::normalize_reference(cpu, one, data::TensorLayout::nchw, ElementType::f32, o.norm,
                              want.data());
    const std::vector<float> got(out.begin() + static_cast<std::ptrdiff_t>(j * image),
                                 out.begin() + static_cast<std::ptrdiff_t>((j + 1) * image));
    EXPECT_EQ(got, want);
  } else if (nvjpeg) {
    const std::vector<std::uint8_t> want =
        full_scale_reference(*dataset_, o, ref.epoch, ref.indices[j]);
    EXPECT_GE(psnr(levels(out, j, o), want.data()), 30.0);
  } else {
    const std::vector<double> got = levels(out, j, o);
    double worst = 0;
    for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(got[i] - cpu[i]));
    EXPECT_LE(worst, 0.01);
  }
}

TEST_P(InputPipelineGpu, BatchesMatchTheCpuReferencePath) {
  const PipelineOptions o = options();
  const std::vector<Reference> refs = reference_batches(*dataset_, o);
  ASSERT_EQ(refs.size(), kBatches);
  std::string why_not;
  const auto in = make_input_pipeline(*dataset_, o, why_not);
  ASSERT_TRUE(in) << why_not;
  const gpu::Stream stream = gpu::Stream::create();
  gpu::DeviceBuffer fixed_images(in->tensor_bytes()), fixed_labels(kBatch * sizeof(std::int32_t));
  std::vector<float> out(in->tensor_bytes() / sizeof(float));
  std::vector<std::int32_t> labels(kBatch);
  for (std::size_t k = 0; k < kBatches; ++k) {
    SCOPED_TRACE("batch " + std::to_string(k));
    // next() and into() alternate: the same stream of batches either way.
    const auto b =
        k % 2 == 0 ? in->next(stream.get())
                   : in->into(stream.get(), fixed_images.data(), fixed_labels.as<std::int32_t>());
    ASSERT_TRUE(b);
    if (k == 0 && o.decode != DecodeMode::cpu) {
      const auto check = in->check_last_batch(8);
      ASSERT_TRUE(check);
      EXPECT_GE(check->images + check->cpu_decoded, 1u);
    }
    EXPECT_EQ(b->epoch, refs[k].epoch);
    EXPECT_EQ(b->number, refs[k].number);
    ASSERT_EQ(b->size, kBatch);
    EXPECT_EQ(b->shape, (std::array<std::int64_t, 4>{16, 3, kSize, kSize}));
    GB_CHECK_CUDA(cudaMemcpyAsync(out.data(), b->images, in->tensor_bytes(), cudaMemcpyDeviceToHost,
                                  stream.get()));
    GB_CHECK_CUDA(cudaMemcpyAsync(labels.data(), b->labels, kBatch * sizeof(std::int32_t),
                                  cudaMemcpyDeviceToHost, stream.get()));
    stream.synchronize();
    EXPECT_EQ(labels, refs[k].labels);
    for (std::size_t j = 0; j < kBatch; ++j) {
      SCOPED_TRACE("image " + std::to_string(j));
      expect_image(refs[k], j, out, o);
    }
  }
  in->drain();
  const PipelineStats s = in->stats();
  EXPECT_EQ(s.batches, kBatches);
  EXPECT_EQ(s.images, kBatches * kBatch);
  EXPECT_EQ(s.gpu_decoded + s.cpu_decoded, s.images);
  EXPECT_EQ(s.decode_failures, 0u);
  EXPECT_GE(s.data_wait_share(), 0.0);
  EXPECT_LE(s.data_wait_share(), 1.0);
  if (o.decode == DecodeMode::cpu) {
    EXPECT_EQ(s.gpu_decoded, 0u);
  }
  if (o.decode == DecodeMode::gpu) {
    EXPECT_EQ(s.cpu_decoded, 0u);
  }
  if (o.decode != DecodeMode::cpu) {
    EXPECT_EQ(s.gpu_batches, kBatches);
    EXPECT_GT(s.decode_gpu_ms, 0.0);
    EXPECT_GT(s.resize_ms, 0.0);
    EXPECT_FALSE(in->decoder().backend.empty());
  }
  if (o.decode == DecodeMode::both) {
    EXPECT_GT(s.gpu_decoded, 0u);
    EXPECT_GT(s.cpu_decoded, 0u);
  }
}

// The first batch of a pipeline, copied back.
template <typename T>
std::vector<T> first_batch(const data::Dataset& ds, const PipelineOptions& o,
                           std::array<std::int64_t, 4>& shape) {
  std::string why_not;
  const auto in = make_input_pipeline(ds, o, why_not);
  EXPECT_TRUE(in) << why_not;
  if (!in) return {};
  const gpu::Stream stream = gpu::Stream::create();
  const auto b = in->next(stream.get());
  EXPECT_TRUE(b);
  if (!b) return {};
  shape = b->shape;
  std::vector<T> host(in->tensor_bytes() / sizeof(T));
  GB_CHECK_CUDA(cudaMemcpyAsync(host.data(), b->images, in->tensor_bytes(), cudaMemcpyDeviceToHost,
                                stream.get()));
  stream.synchronize();
  return host;
}

TEST_P(InputPipelineGpu, NhwcBf16IsTheSameBatchLaidOutAndRounded) {
  const PipelineOptions nchw = options();
  PipelineOptions nhwc = nchw;
  nhwc.layout = data::TensorLayout::nhwc;
  nhwc.dtype = ElementType::bf16;
  std::array<std::int64_t, 4> shape_f32{}, shape_bf16{};
  const std::vector<float> f32 = first_batch<float>(*dataset_, nchw, shape_f32);
  const std::vector<std::uint16_t> bf16 = first_batch<std::uint16_t>(*dataset_, nhwc, shape_bf16);
  ASSERT_EQ(f32.size(), bf16.size());
  EXPECT_EQ(shape_bf16, (std::array<std::int64_t, 4>{16, kSize, kSize, 3}));
  const std::size_t plane = kSize * kSize;
  std::size_t off = 0;
  for (std::size_t j = 0; j < kBatch; ++j)
    for (std::size_t p = 0; p < plane; ++p)
      for (std::size_t c = 0; c < 3; ++c) {
        const float want = f32[(j * 3 + c) * plane + p];
        const float got = bf16_bits_to_float(bf16[(j * plane + p) * 3 + c]);
        off += std::abs(got - want) > std::abs(want) * 0x1p-8f + 1e-6f ? 1 : 0;
      }
  EXPECT_EQ(off, 0u);
}

INSTANTIATE_TEST_SUITE_P(DecodeModes, InputPipelineGpu,
                         ::testing::Values(DecodeMode::cpu, DecodeMode::gpu, DecodeMode::both),
                         [](const ::testing::TestParamInfo<DecodeMode>& i) {
                           return std::string(to_string(i.param));
                         });

}  // namespace
}  // namespace gb::pipeline
