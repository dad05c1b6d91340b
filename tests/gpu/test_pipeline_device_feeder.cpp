// tests/gpu/test_pipeline_device_feeder.cpp: the CPU decode path's device half end to end on a
// small in-memory dataset: Loader with pinned slots -> DeviceFeeder (H2D on its own stream, the
// normalization kernel on the compute stream) -> the device tensor equals the CPU reference of
// the same batch; every slot goes back to the loader; a partial last batch; the busy kernel's
// calibration.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "data/dataset.hpp"
#include "data/loader.hpp"
#include "data/normalize.hpp"
#include "gpu/busy.hpp"
#include "gpu/cuda_raii.hpp"
#include "pipeline/gpu/device_feeder.hpp"

namespace gb::pipeline {
namespace {

bool has_gpu() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

constexpr int kH = 8, kW = 6, kC = 3;

// Raw 8 x 6 x 3 images whose bytes derive from the index.
class RawImages : public data::Dataset {
 public:
  explicit RawImages(std::size_t n) : n_(n) {}
  std::string_view kind() const override { return "test"; }
  std::string source() const override { return "memory"; }
  std::size_t size() const override { return n_; }
  data::SampleFormat format() const override { return data::SampleFormat::raw_u8; }
  std::optional<data::RawShape> raw_shape() const override { return data::RawShape{kH, kW, kC}; }
  const std::vector<std::string>& class_names() const override { return names_; }
  std::int32_t label(std::size_t i) const override { return static_cast<std::int32_t>(i % 2); }
  data::Sample read(std::size_t i, std::vector<std::uint8_t>& scratch) const override {
    scratch.resize(kH * kW * kC);
    for (std::size_t k = 0; k < scratch.size(); ++k)
      scratch[k] = static_cast<std::uint8_t>(i * 31 + k * 7);
    return {scratch, label(i)};
  }
  std::string sample_name(std::size_t i) const override { return "#" + std::to_string(i); }

 private:
  std::size_t n_;
  std::vector<std::string> names_{"a", "b"};
};

TEST(PipelineDeviceFeeder, TensorsMatchTheCpuReferenceAndSlotsComeBack) {
  if (!has_gpu()) GTEST_SKIP() << "no CUDA device";
  const RawImages ds(21);  // 21 = 5 batches of 4 + a partial batch of 1
  data::LoaderOptions o;
  o.sampling.batch_size = 4;
  o.sampling.shuffle = true;
  o.sample_bytes = kH * kW * kC;
  o.workers = 2;
  o.prefetch_depth = 3;
  const auto copy = [](const data::SampleView& s, data::Philox&, std::span<std::uint8_t> dst) {
    std::memcpy(dst.data(), s.bytes.data(), dst.size());
    return data::SampleResult::good();
  };
  data::Loader loader(ds, o, copy, DeviceFeeder::pinned_slot_allocator());
  const data::Normalization norm = data::imagenet_normalization();
  DeviceFeeder feeder(gpu::NormalizeShape{4, kH, kW, kC, true}, gpu::ElementType::bf16,
                      norm.mean.data(), norm.stddev.data());
  const gpu::Stream compute = gpu::Stream::create();
  loader.start_epoch(0);
  std::size_t batches = 0;
  while (auto b = loader.next()) {
    const std::vector<std::uint8_t> host(b->data.begin(), b->data.end());  // before release
    const void* x = feeder.submit(*b, compute.get());
    const data::BatchShape shape{static_cast<int>(b->size), kH, kW, kC};
    std::vector<std::uint8_t> want(shape.elements() * 2), got(want.size());
    data::normalize_reference(host.data(), shape, data::TensorLayout::nchw, ElementType::bf16,
                              norm, want.data());
    GB_CHECK_CUDA(
        cudaMemcpyAsync(got.data(), x, got.size(), cudaMemcpyDeviceToHost, compute.get()));
    compute.synchronize();
    EXPECT_EQ(want, got) << "batch " << b->number;
    feeder.release_done(loader);
    ++batches;
  }
  feeder.release_all(loader);
  EXPECT_EQ(batches, 6u);
}

TEST(PipelineDeviceFeeder, BusyKernelRunsForTheAskedTime) {
  if (!has_gpu()) GTEST_SKIP() << "no CUDA device";
  const gpu::Stream s = gpu::Stream::create();
  const double cycles_per_us = gpu::calibrate_busy_cycles_per_us(s.get());
  EXPECT_GT(cycles_per_us, 100.0);   // > 100 MHz
  EXPECT_LT(cycles_per_us, 5000.0);  // < 5 GHz
  const gpu::Event a = gpu::Event::create(), b = gpu::Event::create();
  a.record(s.get());
  gpu::busy_for(s.get(), 5000, cycles_per_us);
  b.record(s.get());
  b.synchronize();
  EXPECT_NEAR(gpu::Event::elapsed_ms(a, b), 5.0, 0.5);
}

}  // namespace
}  // namespace gb::pipeline
