// pipeline/gpu/input_pipelines.cpp: the two InputPipeline implementations and the factory.
//   CpuDecodePipeline  (cpu): jpeg_train_process workers -> pinned slots -> DeviceFeeder (H2D on
//                      its own stream, normalization on the consumer's stream).
//   NvjpegPipeline     (gpu, both): reader workers (or the split's mix) -> pinned slots ->
//                      NvjpegBatchStage (nvJPEG on its own stream, one kernel on the consumer's).
// Both take batches across epochs (next_batch) and keep at most prefetch - 1 batches on the GPU,
// so the workers always have a slot to fill and the loader never finds its next slot still lent.
#include <algorithm>
#include <chrono>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "core/cancel.hpp"
#include "core/cancel_wait.hpp"
#include "core/error.hpp"
#include "gpu/check.hpp"
#include "pipeline/gpu/device_feeder.hpp"
#include "pipeline/gpu/nvjpeg_batch.hpp"
#include "pipeline/input_pipeline.hpp"
#include "pipeline/process.hpp"
#include "pipeline/split.hpp"

namespace gb::pipeline {

namespace {

using Clock = std::chrono::steady_clock;

// What both share: the output tensors of next() (made on first use) and the consumer's clock.
class PipelineBase : public InputPipeline {
 public:
  std::optional<DeviceBatch> next(StreamHandle stream) final {
    if (!out_images_[0].data()) {
      for (int k = 0; k < 2; ++k) {
        out_images_[k] = gpu::DeviceBuffer(tensor_bytes());
        out_labels_[k] = gpu::DeviceBuffer(options().batch * sizeof(std::int32_t));
      }
    }
    const int k = next_out_;
    next_out_ = 1 - next_out_;
    return into(stream, out_images_[k].data(), out_labels_[k].as<std::int32_t>());
  }

  std::optional<DeviceBatch> into(StreamHandle stream, void* images, std::int32_t* labels) final {
    const auto t0 = Clock::now();
    if (!clock_started_) {
      clock_started_ = true;
      first_call_ = t0;
    }
    std::optional<DeviceBatch> b = take(stream, images, labels);
    const auto t1 = Clock::now();
    in_pipeline_s_ += std::chrono::duration<double>(t1 - t0).count();
    wall_s_ = std::chrono::duration<double>(t1 - first_call_).count();
    if (b) {
      ++batches_;
      images_ += b->size;
    }
    return b;
  }

 protected:
  using InputPipeline::InputPipeline;
  virtual std::optional<DeviceBatch> take(cudaStream_t stream, void* images,
                                          std::int32_t* labels) = 0;
  // The consumer's side of the stats; the implementation adds its own.
  PipelineStats base_stats() const {
    PipelineStats s;
    s.decode = options().decode;
    s.workers = workers();
    s.batches = batches_;
    s.images = images_;
    s.wall_s = wall_s_;
    s.in_pipeline_s = in_pipeline_s_;
    return s;
  }
  void reset_base_stats() {
    clock_started_ = false;
    batches_ = images_ = 0;
    wall_s_ = in_pipeline_s_ = 0;
  }

 private:
  gpu::DeviceBuffer out_images_[2], out_labels_[2];
  int next_out_ = 0;
  bool clock_started_ = false;
  Clock::time_point first_call_;
  std::size_t batches_ = 0, images_ = 0;
  double wall_s_ = 0, in_pipeline_s_ = 0;
};

class CpuDecodePipeline final : public PipelineBase {
 public:
  CpuDecodePipeline(const data::Dataset& dataset, const PipelineOptions& o, unsigned workers)
      : PipelineBase(o, workers),
        loader_(dataset, cpu_loader_options(o, workers), jpeg_train_process(workers, o.image_size),
                DeviceFeeder::pinned_slot_allocator()),
        feeder_(gpu::NormalizeShape{static_cast<int>(o.batch), o.image_size, o.image_size, 3,
                                    o.layout == data::TensorLayout::nchw},
                o.dtype, o.norm.mean.data(), o.norm.stddev.data()) {
    epoch_ = o.first_epoch;
    loader_.start_epoch(epoch_);
  }
  ~CpuDecodePipeline() override {
    try {
      feeder_.release_all(loader_);
    } catch (...) {  // a failed copy: the loader's stop() below still joins its workers
    }
    loader_.stop();
  }

  void drain() override { feeder_.release_all(loader_); }
  PipelineStats stats() const override {
    PipelineStats s = base_stats();
    s.loader = loader_.stats();
    s.cpu_decoded = s.images;
    return s;
  }
  void reset_stats() override {
    reset_base_stats();
    loader_.reset_stats();
  }
  std::optional<DecodeCheck> check_last_batch(std::size_t) override { return std::nullopt; }
  DecoderInfo decoder() const override { return {}; }

 protected:
  std::optional<DeviceBatch> take(cudaStream_t stream, void* images,
                                  std::int32_t* labels) override {
    feeder_.release_done(loader_);
    feeder_.release_until(loader_, options().prefetch - 1);  // a free slot for next()
    const auto b = next_batch(loader_, epoch_);
    if (!b) return std::nullopt;
    feeder_.submit_into(*b, stream, images, labels);
    return device_batch(*b, images, labels);
  }

 private:
  data::Loader loader_;
  DeviceFeeder feeder_;
  std::uint32_t epoch_ = 0;
};

}  // namespace

namespace {

bool event_done(const gpu::Event& e) {
  const cudaError_t rc = cudaEventQuery(e.get());
  if (rc == cudaErrorNotReady) return false;
  GB_CHECK_CUDA(rc);
  return true;
}

// cudaEventSynchronize, but Ctrl-C ends it (a signal handler cannot wake the driver's wait).
void wait_event(const gpu::Event& e) {
  wait_cancellable([&e] { return event_done(e); });
}

data::SlotAllocator pinned_slots() {
  return DeviceFeeder::pinned_slot_allocator();
}

class NvjpegPipeline final : public PipelineBase {
 public:
  NvjpegPipeline(const data::Dataset& dataset, const PipelineOptions& o, unsigned workers,
                 std::shared_ptr<gpu::NvjpegLibrary> library, gpu::NvjpegBackendChoice choice)
      : PipelineBase(o, workers),
        dataset_(dataset),
        library_(library),
        decoder_(std::move(library), choice),
        sample_bytes_(nvjpeg_sample_bytes(o)),
        loader_(dataset, loader_options(o, workers, sample_bytes_), process(o, workers),
                pinned_slots()),
        stage_(decoder_, o, sample_bytes_),
        max_in_flight_(o.prefetch - 1) {
    epoch_ = o.first_epoch;
    loader_.start_epoch(epoch_);
  }
  ~NvjpegPipeline() override {
    try {
      drain();
    } catch (...) {  // a failed CUDA call: the loader's stop() below still joins its workers
    }
    loader_.stop();
  }

  void drain() override {
    while (!in_flight_.empty()) {
      Entry& e = in_flight_.front();
      wait_event(e.s.done);
      if (!e.released) loader_.release(e.s.batch);
      account(e);
      in_flight_.pop_front();
    }
  }
  PipelineStats stats() const override;
  void reset_stats() override {
    reset_base_stats();
    loader_.reset_stats();
    ++generation_;
    totals_ = {};
  }
  std::optional<DecodeCheck> check_last_batch(std::size_t count) override {
    if (in_flight_.empty() || in_flight_.back().released) return std::nullopt;
    return stage_.check(in_flight_.back().s.batch, count, dataset_);
  }
  DecoderInfo decoder() const override {
    DecoderInfo d;
    d.backend = std::string(gpu::to_string(decoder_.backend()));
    d.backend_note = decoder_.fallback_reason();
    const std::string version = library_->version();
    d.library = library_->path() + (version.empty() ? "" : " (" + version + ")");
    return d;
  }

 protected:
  std::optional<DeviceBatch> take(cudaStream_t stream, void* images, std::int32_t* labels) override;

 private:
  struct Entry {
    NvjpegBatchStage::Submitted s;
    std::uint64_t generation = 0;
    bool released = false;  // the slot went back to the loader
  };
  struct Totals {
    std::size_t gpu_decoded = 0, cpu_decoded = 0, failures = 0, single = 0, left_out = 0;
    std::vector<std::string> examples;
    std::size_t gpu_batches = 0;
    double decode_gpu_ms = 0, decode_host_ms = 0, resize_ms = 0;
  };

  static data::LoaderOptions loader_options(const PipelineOptions& o, unsigned workers,
                                            std::size_t sample_bytes) {
    data::LoaderOptions lo = cpu_loader_options(o, workers);
    lo.sample_bytes = sample_bytes;
    lo.process_stages = {"header", "copy"};
    if (o.decode == DecodeMode::both) lo.process_stages = {"header", "copy", "decode", "augment"};
    return lo;
  }
  data::ProcessFn process(const PipelineOptions& o, unsigned workers) const {
    data::ProcessFn reader = nvjpeg_reader_process(decoder_, o.max_jpeg_bytes);
    if (o.decode != DecodeMode::both) return reader;
    return split_process(std::move(reader), jpeg_train_process(workers, o.image_size), o.image_size,
                         o.gpu_share.value_or(1));
  }
  void release_finished();
  void note_failures(const Entry& e);
  void account(const Entry& e);

  const data::Dataset& dataset_;
  std::shared_ptr<gpu::NvjpegLibrary> library_;
  gpu::NvjpegDecoder decoder_;
  std::size_t sample_bytes_;
  data::Loader loader_;
  NvjpegBatchStage stage_;
  std::size_t max_in_flight_;
  std::deque<Entry> in_flight_;
  std::uint32_t epoch_ = 0;
  std::uint64_t generation_ = 0;
  Totals totals_;
};

// Slots whose decode has read them go back (oldest first, without waiting); batches whose
// kernel is done too leave the queue with their times.
void NvjpegPipeline::release_finished() {
  for (Entry& e : in_flight_) {
    if (e.released) continue;
    if (!event_done(e.s.decoded)) break;
    loader_.release(e.s.batch);
    e.released = true;
  }
  while (!in_flight_.empty() && in_flight_.front().released &&
         event_done(in_flight_.front().s.done)) {
    account(in_flight_.front());
    in_flight_.pop_front();
  }
}

std::optional<DeviceBatch> NvjpegPipeline::take(cudaStream_t stream, void* images,
                                                std::int32_t* labels) {
  release_finished();
  // At most prefetch - 1 slots lent to the GPU (the loader's next slot is then free), and a
  // bounded queue of batches whose kernels the consumer's stream has not reached yet.
  std::size_t held = 0;
  for (const Entry& e : in_flight_) held += e.released ? 0 : 1;
  for (Entry& e : in_flight_) {
    if (held < max_in_flight_) break;
    if (e.released) continue;
    wait_event(e.s.decoded);
    loader_.release(e.s.batch);
    e.released = true;
    --held;
  }
  while (in_flight_.size() > max_in_flight_ + 2) {
    wait_event(in_flight_.front().s.done);
    release_finished();
  }
  const auto b = next_batch(loader_, epoch_);
  if (!b) return std::nullopt;
  in_flight_.push_back(Entry{stage_.submit(*b, stream, images, labels), generation_, false});
  const Entry& e = in_flight_.back();
  totals_.gpu_decoded += e.s.gpu_decoded;
  totals_.cpu_decoded += b->size - e.s.gpu_decoded;
  totals_.single += e.s.single_decodes;
  note_failures(e);
  return device_batch(*b, images, labels);
}

void NvjpegPipeline::note_failures(const Entry& e) {
  if (e.s.failures == 0) return;
  const auto& st = stage_.status();
  for (std::size_t j = 0; j < e.s.batch.size; ++j) {
    if (st.ok[j]) continue;
    const std::string what = dataset_.sample_name(e.s.batch.indices[j]) + ": " + st.reason[j];
    if (options().strict) {
      GB_CHECK_CUDA(cudaStreamSynchronize(stage_.stream()));  // nothing reads the slots after
      throw Error(ErrorKind::usage, "bad sample " + what);
    }
    ++totals_.failures;
    if (totals_.examples.size() < 5) {
      totals_.examples.push_back(what);
    } else {
      ++totals_.left_out;
    }
  }
}

void NvjpegPipeline::account(const Entry& e) {
  if (e.generation != generation_) return;  // taken before reset_stats()
  ++totals_.gpu_batches;
  totals_.decode_gpu_ms += gpu::Event::elapsed_ms(e.s.begin, e.s.decoded);
  totals_.resize_ms += gpu::Event::elapsed_ms(e.s.resize, e.s.done);
  totals_.decode_host_ms += e.s.decode_host_s * 1e3;
}

PipelineStats NvjpegPipeline::stats() const {
  PipelineStats s = base_stats();
  s.loader = loader_.stats();
  s.gpu_decoded = totals_.gpu_decoded;
  s.cpu_decoded = totals_.cpu_decoded;
  s.decode_failures = totals_.failures;
  s.decode_failure_examples = totals_.examples;
  s.bad_examples_left_out = totals_.left_out;
  s.single_decodes = totals_.single;
  s.gpu_batches = totals_.gpu_batches;
  s.decode_gpu_ms = totals_.decode_gpu_ms;
  s.decode_host_ms = totals_.decode_host_ms;
  s.resize_ms = totals_.resize_ms;
  s.arena_grows = stage_.arena_grows();
  return s;
}

}  // namespace

std::unique_ptr<InputPipeline> make_input_pipeline(const data::Dataset& dataset,
                                                   const PipelineOptions& options,
                                                   std::string& why_not) {
  validate(options);
  check_jpeg_dataset(dataset);
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    (void)cudaGetLastError();
    why_not = options.decode == DecodeMode::cpu ? "no GPU found: the input pipeline feeds one"
                                                : "no GPU found: the GPU decode path needs one";
    return nullptr;
  }
  if (options.device >= count)
    throw Error(ErrorKind::usage, "--device " + std::to_string(options.device) +
                                      ": this machine has " + std::to_string(count) +
                                      (count == 1 ? " GPU" : " GPUs"));
  GB_CHECK_CUDA(cudaSetDevice(options.device));
  const unsigned workers = resolved_workers(options);
  if (options.decode == DecodeMode::cpu)
    return std::make_unique<CpuDecodePipeline>(dataset, options, workers);
  auto library = gpu::NvjpegLibrary::load(gpu::default_nvjpeg_library_names(), why_not);
  if (!library) return nullptr;
  PipelineOptions o = options;
  o.prefetch = std::max<std::size_t>(o.prefetch, 2);  // one slot on the GPU, one being filled
  return std::make_unique<NvjpegPipeline>(dataset, o, workers, std::move(library),
                                          *gpu::parse_nvjpeg_backend(options.nvjpeg_backend));
}

}  // namespace gb::pipeline
