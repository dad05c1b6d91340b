// bench/gpu/loader_nvjpeg.cpp: the loader's GPU decode path (`gpubase loader --decode gpu`),
// measured end to end: files on disk (or in the page cache) to the normalized bf16 NCHW batch
// tensor in device memory.
//
//   reader threads (data::Loader workers)    consumer thread (this file)         GPU stream
//   read file, nvJPEG header parse,          nvjpegDecodeBatched (host stage) -> NVJPG engines /
//   crop + flip draw (data/augment.hpp,      items H2D (crop, flip, pointers) -> CUDA decode
//   same Philox stream as the CPU path),     resize_crop_normalize kernel     -> into the tensor
//   copy the JPEG into a pinned slot         release slots once their batch's GPU work is done
//
// A sample's place in a pinned batch slot holds a 64-byte record (sizes, crop, flip, batchable)
// followed by its JPEG bytes, so a slot is `--gpu-max-jpeg-kb` + 64 bytes per sample; a larger
// file is a bad sample (counted, with the reason). Decoded images are packed into one device
// arena per batch (each image w x h x 3 bytes, 256-byte aligned), grown when a batch needs more
// (a stream sync and a new allocation, counted: after the warm-up it is rare).
//
// Napkin math at the 15,000 images/s target, ImageNet-like 500x375 JPEGs of ~110 KB:
//   H2D of the JPEG bytes 110 KB x 15,000/s = 1.65 GB/s (3 % of PCIe Gen5 x16's ~55 GB/s);
//   decoded pixels 562 KB x 15,000/s = 8.4 GB/s written + read by the kernel (< 0.5 % of HBM);
//   the kernel ~0.1 ms per batch of 256 (gpu/resize_crop.hpp); host work per image: a read of
//   110 KB from the page cache (~20 us), a header parse (~5 us) and a 110 KB copy (~10 us): ~35
//   us, so ~30,000 images/s per reader thread before the consumer's nvJPEG host stage.
// The decode itself is the bound: torchvision's batched nvJPEG decode alone ran ~21,000
// images/s of 500x375 JPEGs on an H200 (docs/pytorch-figures.md); see bench/NOTES.md "d3".
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>
#include <memory>
#include <vector>

#include "bench/gpu/loader_device.hpp"
#include "bench/loader.hpp"
#include "core/cancel.hpp"
#include "core/error.hpp"
#include "core/stats.hpp"
#include "data/augment.hpp"
#include "data/decode.hpp"
#include "data/normalize.hpp"
#include "gpu/check.hpp"
#include "gpu/cuda_raii.hpp"
#include "gpu/nvjpeg.hpp"
#include "gpu/resize_crop.hpp"
#include "sys/host_membw.hpp"
#include "sys/procfs.hpp"

namespace gb::bench {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Leading each sample's place in the slot; the JPEG bytes follow at kRecordBytes.
struct SampleRecord {
  std::uint32_t jpeg_bytes = 0;
  std::int32_t width = 0, height = 0;
  data::CropBox box;
  std::uint8_t flip = 0;
  std::uint8_t batched_supported = 1;
  // CPU/GPU split: 1 when a worker already decoded, cropped, resized and flipped the sample on
  // the CPU; image_size^2 x 3 HWC pixels follow instead of JPEG bytes (width = height = size).
  std::uint8_t decoded = 0;
};
constexpr std::size_t kRecordBytes = 64;
static_assert(sizeof(SampleRecord) <= kRecordBytes);

// The reader threads' per-sample work: header, the CPU path's draws, the copy into the slot.
data::ProcessFn nvjpeg_reader_process(const gpu::NvjpegDecoder& decoder, unsigned workers,
                                      std::size_t max_jpeg_bytes) {
  // One header parser per worker, made in the worker's own thread on its first sample.
  auto parsers =
      std::make_shared<std::vector<std::optional<gpu::NvjpegDecoder::HeaderParser>>>(workers);
  const data::AugmentOptions augment;  // decode_augment's defaults: the CPU path's draws
  return [parsers, augment, &decoder, max_jpeg_bytes](
             const data::SampleView& sample, data::Philox& rng, std::span<std::uint8_t> dst) {
    auto& parser = (*parsers)[sample.worker];
    if (!parser) parser.emplace(decoder.header_parser());
    const auto t0 = Clock::now();
    const gpu::JpegHeader h = parser->parse(sample.bytes);
    if (!h.ok) return data::SampleResult::bad(h.reason);
    if (sample.bytes.size() > max_jpeg_bytes) {
      return data::SampleResult::bad(std::to_string(sample.bytes.size()) +
                                     " bytes: larger than the GPU path's sample slot of " +
                                     std::to_string(max_jpeg_bytes / 1024) +
                                     " KiB (--gpu-max-jpeg-kb)");
    }
    // The same draws, in the same order, as JpegDecoder::decode_augment.
    SampleRecord rec;
    rec.jpeg_bytes = static_cast<std::uint32_t>(sample.bytes.size());
    rec.width = h.width;
    rec.height = h.height;
    rec.box = data::random_resized_crop(h.width, h.height, rng, augment.scale, augment.ratio);
    rec.flip = data::random_flip(rng, augment.flip_probability) ? 1 : 0;
    rec.batched_supported = h.batched_supported ? 1 : 0;
    const auto t1 = Clock::now();
    std::memcpy(dst.data(), &rec, sizeof rec);
    std::memcpy(dst.data() + kRecordBytes, sample.bytes.data(), sample.bytes.size());
    const auto t2 = Clock::now();
    data::SampleResult r;
    r.stage_s[0] = std::chrono::duration<double>(t1 - t0).count();
    r.stage_s[1] = std::chrono::duration<double>(t2 - t1).count();
    return r;
  };
}

// The CPU/GPU split's per-sample work: split_to_gpu() sends the sample to nvJPEG (the reader's
// work above, stages "header" and "copy") or decodes it here with the CPU path's process (stages
// "decode" and "augment"), behind a record that says so. Either path draws the crop and flip
// from the same Philox stream in the same order.
data::ProcessFn split_process(const gpu::NvjpegDecoder& decoder, unsigned workers,
                              std::size_t max_jpeg_bytes, int image_size, double gpu_share) {
  data::ProcessFn to_gpu = nvjpeg_reader_process(decoder, workers, max_jpeg_bytes);
  data::ProcessFn on_cpu = jpeg_train_process(workers, image_size);
  const std::size_t pixels = static_cast<std::size_t>(image_size) * image_size * 3;
  return [to_gpu, on_cpu, pixels, image_size, gpu_share](
             const data::SampleView& sample, data::Philox& rng, std::span<std::uint8_t> dst) {
    if (split_to_gpu(sample.index, gpu_share)) return to_gpu(sample, rng, dst);
    data::SampleResult r = on_cpu(sample, rng, dst.subspan(kRecordBytes, pixels));
    if (!r.ok) return r;
    SampleRecord rec;
    rec.decoded = 1;
    rec.width = rec.height = image_size;
    std::memcpy(dst.data(), &rec, sizeof rec);
    r.stage_s[2] = r.stage_s[0];  // decode, augment after the reader's header, copy
    r.stage_s[3] = r.stage_s[1];
    r.stage_s[0] = r.stage_s[1] = 0;
    return r;
  };
}

double process_cpu_s() {
  rusage u{};
  if (getrusage(RUSAGE_SELF, &u) != 0) return 0;
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// The consumer's device side: decodes a batch slot's JPEGs into the arena and runs the kernel.
class GpuBatchPipeline {
 public:
  GpuBatchPipeline(gpu::NvjpegDecoder& decoder, const LoaderBenchOptions& o,
                   std::size_t sample_bytes)
      : decoder_(decoder),
        sample_bytes_(sample_bytes),
        stream_(gpu::Stream::create()),
        items_device_(o.batch_size * sizeof(gpu::ResizeCropItem)) {
    shape_ =
        gpu::NormalizeShape{static_cast<int>(o.batch_size), o.image_size, o.image_size, 3, true};
    const std::size_t tensor_bytes = o.batch_size * static_cast<std::size_t>(o.image_size) *
                                     o.image_size * 3 * gpu::element_bytes(gpu::ElementType::bf16);
    for (auto& t : tensors_) t = gpu::DeviceBuffer(tensor_bytes);
    const data::Normalization norm = data::imagenet_normalization();
    std::copy(norm.mean.begin(), norm.mean.end(), mean_);
    std::copy(norm.stddev.begin(), norm.stddev.end(), stddev_);
  }

  struct Submitted {
    data::Batch batch;
    gpu::Event begin, decoded, done;
    double decode_host_s = 0;
    std::size_t failures = 0;
    std::size_t gpu_decoded = 0;  // positions nvJPEG decoded (the rest: a worker, on the CPU)
  };

  cudaStream_t stream() const { return stream_.get(); }
  std::size_t arena_grows() const { return arena_grows_; }
  const std::vector<gpu::ResizeCropItem>& items() const { return items_; }
  const gpu::ResizeCropItem* items_device() const {
    return items_device_.as<gpu::ResizeCropItem>();
  }
  const gpu::NvjpegDecoder::DecodeStatus& status() const { return status_; }

  static const SampleRecord& record(const data::Batch& b, std::size_t j, std::size_t sample_bytes) {
    return *reinterpret_cast<const SampleRecord*>(b.data.data() + j * sample_bytes);
  }

  // Enqueues batch b's decode and kernel; the batch stays lent until its `done` event. Samples a
  // worker already decoded (the CPU/GPU split) are copied into the arena as they are and go
  // through the same kernel with the whole image as the crop: at scale 1 its filter has one tap
  // of weight 1, so their pixels reach the tensor unchanged.
  Submitted submit(const data::Batch& b) {
    const std::size_t n = b.size;
    // Arena layout: image j at offsets_[j], 256-byte aligned.
    offsets_.resize(n);
    std::size_t total = 0;
    for (std::size_t j = 0; j < n; ++j) {
      const SampleRecord& r = record(b, j, sample_bytes_);
      offsets_[j] = total;
      total += (static_cast<std::size_t>(r.width) * r.height * 3 + 255) / 256 * 256;
    }
    if (total > arena_.bytes()) {
      // The previous batches' kernels may still read the old arena.
      GB_CHECK_CUDA(cudaStreamSynchronize(stream_.get()));
      arena_ = gpu::DeviceBuffer(total + total / 4);
      ++arena_grows_;
    }
    images_.clear();
    to_gpu_.clear();
    for (std::size_t j = 0; j < n; ++j) {
      const SampleRecord& r = record(b, j, sample_bytes_);
      if (r.decoded) continue;
      gpu::NvjpegDecoder::Image im;
      im.jpeg = b.data.data() + j * sample_bytes_ + kRecordBytes;
      im.bytes = r.jpeg_bytes;
      im.width = r.width;
      im.height = r.height;
      im.batched_supported = r.batched_supported != 0;
      im.dst = arena_.as<std::uint8_t>() + offsets_[j];
      im.pitch = static_cast<std::size_t>(r.width) * 3;
      images_.push_back(im);
      to_gpu_.push_back(j);
    }
    Submitted s{b, gpu::Event::create(), gpu::Event::create(), gpu::Event::create()};
    s.begin.record(stream_.get());
    const auto h0 = Clock::now();
    if (!images_.empty()) decoder_.decode(images_, stream_.get(), gpu_status_);
    s.decode_host_s = seconds_since(h0);
    // Per batch position: the decoder's verdict for its images, ok for the CPU-decoded ones.
    status_.ok.assign(n, 1);
    status_.reason.assign(n, std::string());
    status_.single_decodes = images_.empty() ? 0 : gpu_status_.single_decodes;
    status_.batch_failed = !images_.empty() && gpu_status_.batch_failed;
    for (std::size_t k = 0; k < to_gpu_.size(); ++k) {
      status_.ok[to_gpu_[k]] = gpu_status_.ok[k];
      status_.reason[to_gpu_[k]] = gpu_status_.reason[k];
    }
    s.gpu_decoded = to_gpu_.size();
    for (std::size_t j = 0; j < n; ++j) {
      const SampleRecord& r = record(b, j, sample_bytes_);
      if (!r.decoded) continue;
      // From the pinned slot, which stays lent until `done`.
      GB_CHECK_CUDA(cudaMemcpyAsync(arena_.as<std::uint8_t>() + offsets_[j],
                                    b.data.data() + j * sample_bytes_ + kRecordBytes,
                                    static_cast<std::size_t>(r.width) * r.height * 3,
                                    cudaMemcpyHostToDevice, stream_.get()));
    }
    s.decoded.record(stream_.get());

    items_.resize(n);
    for (std::size_t j = 0; j < n; ++j) {
      const SampleRecord& r = record(b, j, sample_bytes_);
      gpu::ResizeCropItem& it = items_[j];
      it.src = arena_.as<std::uint8_t>() + offsets_[j];
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
      it.valid = status_.ok[j];
      if (!status_.ok[j]) ++s.failures;
    }
    // From pageable memory: the call returns once items_ is staged, so it can be refilled.
    GB_CHECK_CUDA(cudaMemcpyAsync(items_device_.data(), items_.data(),
                                  n * sizeof(gpu::ResizeCropItem), cudaMemcpyHostToDevice,
                                  stream_.get()));
    gpu::NormalizeShape shape = shape_;
    shape.n = static_cast<int>(n);
    gpu::resize_crop_normalize(items_device(), shape, gpu::ElementType::bf16, mean_, stddev_,
                               tensors_[next_].data(), stream_.get());
    next_ = 1 - next_;
    s.done.record(stream_.get());
    return s;
  }

  // The first `count` images of the last submitted batch again, as fp32, for the check.
  std::vector<float> last_as_f32(std::size_t count, int size) {
    const std::size_t elements = count * static_cast<std::size_t>(size) * size * 3;
    gpu::DeviceBuffer out(elements * sizeof(float));
    gpu::NormalizeShape shape = shape_;
    shape.n = static_cast<int>(count);
    gpu::resize_crop_normalize(items_device(), shape, gpu::ElementType::f32, mean_, stddev_,
                               out.data(), stream_.get());
    std::vector<float> host(elements);
    GB_CHECK_CUDA(cudaMemcpyAsync(host.data(), out.data(), elements * sizeof(float),
                                  cudaMemcpyDeviceToHost, stream_.get()));
    GB_CHECK_CUDA(cudaStreamSynchronize(stream_.get()));
    return host;
  }

  const float* mean() const { return mean_; }
  const float* stddev() const { return stddev_; }

 private:
  gpu::NvjpegDecoder& decoder_;
  std::size_t sample_bytes_;
  gpu::Stream stream_;
  gpu::NormalizeShape shape_;
  gpu::DeviceBuffer arena_;
  std::size_t arena_grows_ = 0;
  gpu::DeviceBuffer items_device_;
  gpu::DeviceBuffer tensors_[2];
  int next_ = 0;
  float mean_[4] = {0, 0, 0, 0};
  float stddev_[4] = {1, 1, 1, 1};
  std::vector<std::size_t> offsets_;
  std::vector<gpu::NvjpegDecoder::Image> images_;
  std::vector<gpu::ResizeCropItem> items_;
  std::vector<std::size_t> to_gpu_;                 // batch position of each of images_
  gpu::NvjpegDecoder::DecodeStatus gpu_status_;     // per image of images_
  gpu::NvjpegDecoder::DecodeStatus status_;         // per batch position
};

// Check before timing: the first images of the first batch, GPU (nvJPEG + kernel, fp32) against
// the CPU path's pixels for the same crop and flip (libjpeg full-scale decode of the crop region
// + data::resize_crop_flip), as PSNR over the uint8 levels. nvJPEG's IDCT and chroma upsampling
// are not libjpeg's, so they differ by a level here and there; a wrong decode or a wrong crop
// is far below 30 dB. A sample the CPU already decoded (the split) must come out of the kernel
// as its own pixels, to rounding. `compared` counts the nvJPEG-decoded images the PSNR covers.
double check_against_cpu(GpuBatchPipeline& pipe, const data::Batch& b, std::size_t sample_bytes,
                         int size, std::size_t count, const data::Dataset& dataset,
                         std::size_t& compared) {
  compared = 0;
  const std::vector<float> gpu_out = pipe.last_as_f32(count, size);
  data::JpegDecoder jpeg;
  data::DecodeScratch scratch;
  const std::size_t plane = static_cast<std::size_t>(size) * size;
  std::vector<std::uint8_t> want(plane * 3);
  double sq = 0;
  std::size_t values = 0;
  for (std::size_t j = 0; j < count; ++j) {
    if (!pipe.status().ok[j]) continue;
    const SampleRecord& r = GpuBatchPipeline::record(b, j, sample_bytes);
    if (r.decoded) {
      const std::uint8_t* px = b.data.data() + j * sample_bytes + kRecordBytes;
      double worst = 0;
      for (std::size_t p = 0; p < plane; ++p)
        for (int c = 0; c < 3; ++c) {
          const float v = gpu_out[(j * 3 + c) * plane + p];
          const double level = static_cast<double>(v) * pipe.stddev()[c] + pipe.mean()[c];
          worst = std::max(worst, std::abs(level - px[p * 3 + c]));
        }
      if (worst > 0.01) {
        throw Error(ErrorKind::runtime,
                    "CPU/GPU split: a CPU-decoded sample (" + dataset.sample_name(b.indices[j]) +
                        ") changed on its way to the tensor by up to " + std::to_string(worst) +
                        " levels (expected none): not timed");
      }
      continue;
    }
    ++compared;
    const std::span<const std::uint8_t> bytes(b.data.data() + j * sample_bytes + kRecordBytes,
                                              r.jpeg_bytes);
    try {
      const data::DecodedRegion region =
          jpeg.decode_for_crop(bytes, r.box, r.box.width, r.box.height, scratch.pixels);
      data::resize_crop_flip(region.pixels, region.width, region.height, region.stride,
                             region.channels, region.box, r.flip != 0, size, size, want.data(),
                             data::PixelLayout::hwc, scratch.resize);
    } catch (const data::DecodeError&) {
      continue;  // libjpeg rejects what nvJPEG took: nothing to compare
    }
    double sample_sq = 0;
    for (std::size_t p = 0; p < plane; ++p)
      for (int c = 0; c < 3; ++c) {
        const float v = gpu_out[(j * 3 + c) * plane + p];
        const double level = static_cast<double>(v) * pipe.stddev()[c] + pipe.mean()[c];
        const double d = level - want[p * 3 + c];
        sample_sq += d * d;
      }
    const double mse = sample_sq / static_cast<double>(plane * 3);
    const double psnr = mse > 0 ? 10 * std::log10(255.0 * 255.0 / mse) : 99;
    if (psnr < 30) {
      throw Error(ErrorKind::runtime,
                  "GPU decode path disagrees with the CPU path on " +
                      dataset.sample_name(b.indices[j]) + ": PSNR " + std::to_string(psnr) +
                      " dB (expected >= 30 dB): a wrong decode or crop, not timed");
    }
    sq += sample_sq;
    values += plane * 3;
  }
  if (values == 0) return 0;
  const double mse = sq / static_cast<double>(values);
  return mse > 0 ? 10 * std::log10(255.0 * 255.0 / mse) : 99;
}

void add_cpu_usage(const sys::CpuTimes& before, const sys::CpuTimes& after, double interval_s,
                   GpuDecodeMeasurement& m) {
  const sys::CpuUsage usage = sys::cpu_usage_between(before, after, interval_s);
  double sum = 0;
  int n = 0;
  for (const int cpu : sys::allowed_cpus()) {
    const auto it = usage.per_cpu.find(cpu);
    if (it == usage.per_cpu.end()) continue;
    m.cpu_busiest_core_pct = std::max(m.cpu_busiest_core_pct.value_or(0.0), it->second.busy_pct);
    sum += it->second.busy_pct;
    ++n;
  }
  if (n > 0) m.cpu_mean_pct = sum / n;
}

}  // namespace

std::optional<GpuDecodeMeasurement> measure_gpu_decode(const data::Dataset& dataset,
                                                       const LoaderBenchOptions& o,
                                                       ResultSink& sink, std::string& why_not,
                                                       std::optional<DecodeSplit> split) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    why_not = "no GPU found: the GPU decode path needs one";
    return std::nullopt;
  }
  const auto choice = gpu::parse_nvjpeg_backend(o.nvjpeg_backend);
  if (!choice) {
    throw Error(ErrorKind::usage, "--nvjpeg-backend: '" + o.nvjpeg_backend +
                                      "' is not one of auto, hardware, gpu_hybrid, default");
  }
  auto library = gpu::NvjpegLibrary::load(gpu::default_nvjpeg_library_names(), why_not);
  if (!library) return std::nullopt;
  gpu::NvjpegDecoder decoder(library, *choice);

  GpuDecodeMeasurement m;
  m.backend = std::string(gpu::to_string(decoder.backend()));
  m.backend_note = decoder.fallback_reason();
  const std::string version = library->version();
  m.library = library->path() + (version.empty() ? "" : " (" + version + ")");
  const unsigned cores =
      static_cast<unsigned>(std::max<std::size_t>(sys::allowed_cpus().size(), 1));
  m.workers = split ? split->workers
                    : (o.gpu_decode_workers > 0 ? o.gpu_decode_workers : std::min(4u, cores));
  m.gpu_share = split ? split->gpu_share : 1.0;
  if (!split) {
    sink.add_fact({"loader.gpu_decode.library", "nvJPEG library", m.library});
    sink.add_fact(
        {"loader.gpu_decode.backend", "nvJPEG backend",
         m.backend + (m.backend_note.empty() ? " (NVJPG engines)" : " (" + m.backend_note + ")")});
    sink.add_fact({"loader.gpu_decode.output", "GPU path output",
                   std::to_string(o.image_size) + "x" + std::to_string(o.image_size) +
                       "x3 normalized, bf16 NCHW, in device memory"});
  }

  data::LoaderOptions lo = loader_options(o, m.workers);
  const std::size_t pixels = static_cast<std::size_t>(o.image_size) * o.image_size * 3;
  lo.sample_bytes = kRecordBytes + (split ? std::max(o.gpu_max_jpeg_bytes, pixels)
                                          : o.gpu_max_jpeg_bytes);
  lo.prefetch_depth = std::max<std::size_t>(o.prefetch_depth, 2);
  lo.process_stages = {"header", "copy"};
  if (split) lo.process_stages = {"header", "copy", "decode", "augment"};
  GpuBatchPipeline pipe(decoder, o, lo.sample_bytes);
  data::Loader loader(dataset, lo,
                      split ? split_process(decoder, m.workers, o.gpu_max_jpeg_bytes,
                                            o.image_size, split->gpu_share)
                            : nvjpeg_reader_process(decoder, m.workers, o.gpu_max_jpeg_bytes),
                      DeviceFeeder::pinned_slot_allocator());

  std::uint32_t epoch = 0;
  loader.start_epoch(epoch);
  // At most depth - 1 batches on the GPU, so the readers always have a slot to fill and next()
  // never finds its slot still lent.
  const std::size_t max_in_flight = lo.prefetch_depth - 1;
  std::deque<GpuBatchPipeline::Submitted> in_flight;
  bool timing = false;
  std::vector<double> decode_ms, resize_ms, decode_host_ms;
  auto retire_oldest = [&](bool wait) {
    GpuBatchPipeline::Submitted& s = in_flight.front();
    if (wait) {
      s.done.synchronize();
    } else {
      const cudaError_t rc = cudaEventQuery(s.done.get());
      if (rc == cudaErrorNotReady) return false;
      GB_CHECK_CUDA(rc);
    }
    if (timing) {
      decode_ms.push_back(gpu::Event::elapsed_ms(s.begin, s.decoded));
      resize_ms.push_back(gpu::Event::elapsed_ms(s.decoded, s.done));
      decode_host_ms.push_back(s.decode_host_s * 1e3);
    }
    loader.release(s.batch);
    in_flight.pop_front();
    return true;
  };
  auto note_failures = [&](const GpuBatchPipeline::Submitted& s) {
    if (s.failures == 0) return;
    const auto& st = pipe.status();
    for (std::size_t j = 0; j < s.batch.size; ++j) {
      if (st.ok[j]) continue;
      const std::string what = dataset.sample_name(s.batch.indices[j]) + ": " + st.reason[j];
      if (o.strict) {
        GB_CHECK_CUDA(cudaStreamSynchronize(pipe.stream()));  // nothing reads the slots after
        throw Error(ErrorKind::usage, "bad sample " + what);
      }
      ++m.decode_failures;
      if (m.bad_examples.size() < 5) m.bad_examples.push_back(what);
    }
  };

  // Warm-up: three batches (nvJPEG's internal buffers, the arena, clocks), the first one checked
  // against the CPU path before anything is timed.
  constexpr int kWarmupBatches = 3;
  for (int k = 0; k < kWarmupBatches; ++k) {
    auto b = next_batch(loader, epoch);
    if (!b) {
      m.interrupted = true;
      return m;
    }
    in_flight.push_back(pipe.submit(*b));
    note_failures(in_flight.back());
    if (k == 0) {
      m.check_psnr_db = check_against_cpu(pipe, *b, lo.sample_bytes, o.image_size,
                                          std::min<std::size_t>(b->size, 8), dataset,
                                          m.check_images);
      sink.progress("  checked against the CPU path: PSNR " +
                    std::to_string(static_cast<int>(m.check_psnr_db)) + " dB on " +
                    std::to_string(m.check_images) + " images");
    }
    while (in_flight.size() >= max_in_flight) retire_oldest(true);
  }
  while (!in_flight.empty()) retire_oldest(true);
  {
    const data::LoaderStats warm = loader.stats();
    m.bad_samples = warm.bad_samples;
    for (const std::string& e : warm.bad_examples)
      if (m.bad_examples.size() < 5) m.bad_examples.push_back(e);
  }

  loader.reset_stats();
  timing = true;
  const auto cpu_before = sys::read_proc_stat();
  const double cpu_s0 = process_cpu_s();
  const auto t0 = Clock::now();
  auto last = t0;
  std::size_t single = 0;
  while (seconds_since(t0) < o.seconds_per_point) {
    while (!in_flight.empty() && retire_oldest(false)) {
    }
    while (in_flight.size() >= max_in_flight) retire_oldest(true);
    auto b = next_batch(loader, epoch);
    if (!b) {
      m.interrupted = true;
      break;
    }
    in_flight.push_back(pipe.submit(*b));
    note_failures(in_flight.back());
    single += pipe.status().single_decodes;
    m.gpu_decoded += in_flight.back().gpu_decoded;
    m.cpu_decoded += b->size - in_flight.back().gpu_decoded;
    m.images += b->size;
    ++m.batches;
    const auto now = Clock::now();
    const double dt = std::chrono::duration<double>(now - last).count();
    last = now;
    if (dt > 0) m.batch_images_per_s.push_back(static_cast<double>(b->size) / dt);
  }
  while (!in_flight.empty()) retire_oldest(true);
  const double wall_s = seconds_since(t0);
  const double cpu_s = process_cpu_s() - cpu_s0;
  const auto cpu_after = sys::read_proc_stat();
  const data::LoaderStats s = loader.stats();
  loader.stop();

  m.single_decodes = single;
  m.wall_images_per_s = wall_s > 0 ? static_cast<double>(m.images) / wall_s : 0;
  if (wall_s > 0) m.cpu_cores_used = cpu_s / wall_s;
  if (cpu_before && cpu_after) add_cpu_usage(*cpu_before, *cpu_after, wall_s, m);
  const double batches = static_cast<double>(std::max<std::size_t>(m.batches, 1));
  m.host_read_ms = (s.read.total_s + s.process.total_s) * 1e3 / batches;
  m.consumer_wait_ms = s.consumer_wait.total_s * 1e3 / batches;
  auto mean = [](const std::vector<double>& v) {
    double t = 0;
    for (const double x : v) t += x;
    return v.empty() ? 0.0 : t / static_cast<double>(v.size());
  };
  m.decode_ms = mean(decode_ms);
  m.resize_ms = mean(resize_ms);
  m.decode_host_ms = mean(decode_host_ms);
  // The split's CPU stages are zero for the samples sent to nvJPEG: average over the CPU's share.
  const double cpu_fraction =
      m.images ? static_cast<double>(m.cpu_decoded) / static_cast<double>(m.images) : 0;
  for (const data::StageTotal& st : s.stages) {
    const double cpu_samples = static_cast<double>(st.time.count) * cpu_fraction;
    const double ms = cpu_samples > 0 ? st.time.total_s * 1e3 / cpu_samples : 0;
    if (st.name == "decode") m.cpu_decode_ms = ms;
    if (st.name == "augment") m.cpu_augment_ms = ms;
  }
  m.bad_samples += s.bad_samples;
  for (const std::string& e : s.bad_examples)
    if (m.bad_examples.size() < 5) m.bad_examples.push_back(e);
  if (pipe.arena_grows() > 1) {
    sink.progress("  decoded-image arena grew " + std::to_string(pipe.arena_grows()) +
                  " times (a larger image than any before)");
  }
  m.interrupted = m.interrupted || cancel_requested();
  return m;
}

}  // namespace gb::bench
