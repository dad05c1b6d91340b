// pipeline/gpu/nvjpeg_batch.cpp: the nvJPEG path's reader work and batch stage; see
// nvjpeg_batch.hpp.
#include "pipeline/gpu/nvjpeg_batch.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "core/cancel.hpp"
#include "core/error.hpp"
#include "data/augment.hpp"
#include "data/decode.hpp"
#include "gpu/check.hpp"
#include "pipeline/nvjpeg_header.hpp"
#include "pipeline/process.hpp"

namespace gb::pipeline {

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kArenaAlign = 256;

std::size_t image_bytes(const SlotRecord& r) {
  return static_cast<std::size_t>(r.width) * static_cast<std::size_t>(r.height) * 3;
}

}  // namespace

data::ProcessFn nvjpeg_reader_process(const gpu::NvjpegDecoder& decoder,
                                      std::size_t max_jpeg_bytes) {
  const data::AugmentOptions augment;  // decode_augment's defaults: the CPU path's draws
  const bool hardware = decoder.backend() == gpu::NvjpegBackend::hardware;
  return [augment, hardware, max_jpeg_bytes](const data::SampleView& sample, data::Philox& rng,
                                             std::span<std::uint8_t> dst) {
    const auto t0 = Clock::now();
    const NvjpegHeaderVerdict h = nvjpeg_header_verdict(sample.bytes, hardware);
    if (!h.ok) return data::SampleResult::bad(h.reason);
    if (sample.bytes.size() > max_jpeg_bytes) {
      return data::SampleResult::bad(std::to_string(sample.bytes.size()) +
                                     " bytes: larger than the GPU path's sample slot of " +
                                     std::to_string(max_jpeg_bytes / 1024) +
                                     " KiB (--gpu-max-jpeg-kb)");
    }
    // The same draws, in the same order, as JpegDecoder::decode_augment.
    SlotRecord rec;
    rec.jpeg_bytes = static_cast<std::uint32_t>(sample.bytes.size());
    rec.width = h.width;
    rec.height = h.height;
    rec.box = data::random_resized_crop(h.width, h.height, rng, augment.scale, augment.ratio);
    rec.flip = data::random_flip(rng, augment.flip_probability) ? 1 : 0;
    rec.batched_supported = h.batched_supported ? 1 : 0;
    const auto t1 = Clock::now();
    std::memcpy(dst.data(), &rec, sizeof rec);
    std::memcpy(dst.data() + kSlotRecordBytes, sample.bytes.data(), sample.bytes.size());
    const auto t2 = Clock::now();
    data::SampleResult r;
    r.stage_s[0] = std::chrono::duration<double>(t1 - t0).count();
    r.stage_s[1] = std::chrono::duration<double>(t2 - t1).count();
    return r;
  };
}

std::size_t nvjpeg_sample_bytes(const PipelineOptions& o) {
  const std::size_t pixels = static_cast<std::size_t>(o.image_size) * o.image_size * 3;
  const std::size_t payload =
      o.decode == DecodeMode::both ? std::max(o.max_jpeg_bytes, pixels) : o.max_jpeg_bytes;
  return (kSlotRecordBytes + payload + 63) / 64 * 64;
}

NvjpegBatchStage::NvjpegBatchStage(gpu::NvjpegDecoder& decoder, const PipelineOptions& o,
                                   std::size_t sample_bytes)
    : decoder_(decoder),
      options_(o),
      sample_bytes_(sample_bytes),
      stream_(gpu::Stream::create_high_priority()),
      shape_{static_cast<int>(o.batch), o.image_size, o.image_size, 3,
             o.layout == data::TensorLayout::nchw},
      out_(o.dtype) {
  for (int c = 0; c < 4; ++c) {
    mean_[c] = o.norm.mean[c];
    stddev_[c] = o.norm.stddev[c];
  }
  for (int a = 0; a < kArenas; ++a) {
    items_device_[a] = gpu::DeviceBuffer(o.batch * sizeof(gpu::ResizeCropItem));
    labels_[a] = gpu::DeviceBuffer(o.batch * sizeof(std::int32_t));
    consumed_[a] = gpu::Event::create(cudaEventDisableTiming);
  }
}

// Arena a's layout for b (image j at offsets_[j], 256-byte aligned), grown when b needs more.
void NvjpegBatchStage::lay_out(const data::Batch& b, int a) {
  offsets_.resize(b.size);
  std::size_t total = 0;
  for (std::size_t j = 0; j < b.size; ++j) {
    offsets_[j] = total;
    total += (image_bytes(slot_record(b, j, sample_bytes_)) + kArenaAlign - 1) / kArenaAlign *
             kArenaAlign;
  }
  if (total > arena_[a].bytes()) {  // decode() waited for the kernel that read the old one
    arena_[a] = gpu::DeviceBuffer(total + total / 4);
    ++arena_grows_;
  }
}

// nvJPEG for the JPEG samples, the pixels of the CPU-decoded ones, the labels: all into arena a
// and its label buffer on the stage's stream; per-position status.
void NvjpegBatchStage::enqueue_decode(const data::Batch& b, int a, Decoded& d) {
  const std::size_t n = b.size;
  std::uint8_t* arena = arena_[a].as<std::uint8_t>();
  images_.clear();
  to_gpu_.clear();
  for (std::size_t j = 0; j < n; ++j) {
    const SlotRecord& r = slot_record(b, j, sample_bytes_);
    if (r.decoded) continue;
    gpu::NvjpegDecoder::Image im;
    im.jpeg = slot_payload(b, j, sample_bytes_);
    im.bytes = r.jpeg_bytes;
    im.width = r.width;
    im.height = r.height;
    im.batched_supported = r.batched_supported != 0;
    im.dst = arena + offsets_[j];
    im.pitch = static_cast<std::size_t>(r.width) * 3;
    images_.push_back(im);
    to_gpu_.push_back(j);
  }
  d.begin.record(stream_.get());
  const auto h0 = Clock::now();
  if (!images_.empty()) decoder_.decode(images_, stream_.get(), gpu_status_, a);
  d.decode_host_s = std::chrono::duration<double>(Clock::now() - h0).count();
  d.ok.assign(n, 1);
  d.reason.assign(n, std::string());
  for (std::size_t k = 0; k < to_gpu_.size(); ++k) {
    d.ok[to_gpu_[k]] = gpu_status_.ok[k];
    d.reason[to_gpu_[k]] = gpu_status_.reason[k];
  }
  d.gpu_decoded = to_gpu_.size();
  d.single_decodes = images_.empty() ? 0 : gpu_status_.single_decodes;
  for (std::size_t j = 0; j < n; ++j) {
    const SlotRecord& r = slot_record(b, j, sample_bytes_);
    if (!r.decoded) continue;
    // From the pinned slot, which stays lent until `decoded`.
    GB_CHECK_CUDA(cudaMemcpyAsync(arena + offsets_[j], slot_payload(b, j, sample_bytes_),
                                  image_bytes(r), cudaMemcpyHostToDevice, stream_.get()));
  }
  GB_CHECK_CUDA(cudaMemcpyAsync(labels_[a].data(), b.labels.data(), n * sizeof(std::int32_t),
                                cudaMemcpyHostToDevice, stream_.get()));
}

// The kernel's items for b (crop and flip, or the whole image for a CPU-decoded sample), copied
// to the device on the stage's stream.
void NvjpegBatchStage::fill_items(const data::Batch& b, int a, Decoded& d) {
  const std::size_t n = b.size;
  items_.resize(n);
  for (std::size_t j = 0; j < n; ++j) {
    const SlotRecord& r = slot_record(b, j, sample_bytes_);
    gpu::ResizeCropItem& it = items_[j];
    it.src = arena_[a].as<std::uint8_t>() + offsets_[j];
    it.width = r.width;
    it.height = r.height;
    it.pitch = r.width * 3;
    if (r.decoded) {
      it.crop_x = it.crop_y = 0;
      it.crop_w = static_cast<float>(r.width);
      it.crop_h = static_cast<float>(r.height);
      it.flip = 0;
    } else {
      it.crop_x = static_cast<float>(r.box.x);
      it.crop_y = static_cast<float>(r.box.y);
      it.crop_w = static_cast<float>(r.box.width);
      it.crop_h = static_cast<float>(r.box.height);
      it.flip = r.flip;
    }
    it.valid = d.ok[j];
    if (!d.ok[j]) ++d.failures;
  }
  // From pageable memory: the call returns once items_ is staged, so it can be refilled.
  GB_CHECK_CUDA(cudaMemcpyAsync(items_device_[a].data(), items_.data(),
                                n * sizeof(gpu::ResizeCropItem), cudaMemcpyHostToDevice,
                                stream_.get()));
}

NvjpegBatchStage::Decoded NvjpegBatchStage::decode(const data::Batch& b, int a) {
  if (a < 0 || a >= kArenas)
    throw Error(ErrorKind::runtime, "nvJPEG stage: no arena " + std::to_string(a));
  Decoded d{b, a, gpu::Event::create(), gpu::Event::create(), gpu::Event::create(),
            gpu::Event::create()};
  // Arena a, its items and labels are rewritten, and nvJPEG's batched state a reused, only once
  // the consumer's kernel has read them. The host waits for that (mostly done long ago), with a
  // wait Ctrl-C ends: the hardware backend's batched decode writes its outputs when called,
  // without waiting for the work queued before it on the stream, and nvJPEG's own wait for a
  // state's previous batch (gpu/nvjpeg.hpp, kBatchedStates) is one no signal interrupts, so it
  // must find that batch done.
  if (used_[a]) consumed_[a].wait_cancellable();
  used_[a] = true;
  lay_out(b, a);
  enqueue_decode(b, a, d);
  fill_items(b, a, d);
  d.decoded.record(stream_.get());
  return d;
}

void NvjpegBatchStage::finish(Decoded& d, cudaStream_t compute, void* dst, std::int32_t* labels) {
  const int a = d.arena;
  GB_CHECK_CUDA(cudaStreamWaitEvent(compute, d.decoded.get(), 0));
  d.resize.record(compute);
  gpu::NormalizeShape shape = shape_;
  shape.n = static_cast<int>(d.batch.size);
  gpu::resize_crop_normalize(items_device_[a].as<gpu::ResizeCropItem>(), shape, out_, mean_,
                             stddev_, dst, compute);
  GB_CHECK_CUDA(cudaMemcpyAsync(labels, labels_[a].data(), d.batch.size * sizeof(std::int32_t),
                                cudaMemcpyDeviceToDevice, compute));
  consumed_[a].record(compute);
  d.done.record(compute);
}

std::vector<float> NvjpegBatchStage::as_f32(int arena, std::size_t count) {
  const std::size_t elements =
      count * static_cast<std::size_t>(options_.image_size) * options_.image_size * 3;
  gpu::DeviceBuffer out(elements * sizeof(float));
  gpu::NormalizeShape shape = shape_;
  shape.n = static_cast<int>(count);
  shape.nchw = true;
  gpu::resize_crop_normalize(items_device_[arena].as<gpu::ResizeCropItem>(), shape,
                             gpu::ElementType::f32, mean_, stddev_, out.data(), stream_.get());
  std::vector<float> host(elements);
  GB_CHECK_CUDA(cudaMemcpyAsync(host.data(), out.data(), elements * sizeof(float),
                                cudaMemcpyDeviceToHost, stream_.get()));
  const gpu::Event copied = gpu::Event::create(cudaEventDisableTiming);
  copied.record(stream_.get());
  copied.wait_cancellable();
  return host;
}

}  // namespace gb::pipeline
