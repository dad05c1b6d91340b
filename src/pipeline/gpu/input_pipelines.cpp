// pipeline/gpu/input_pipelines.cpp: the two InputPipeline implementations and the factory.
//   CpuDecodePipeline  (cpu): jpeg_train_process workers -> pinned slots -> DeviceFeeder (H2D on
//                      its own stream, normalization on the consumer's stream).
//   NvjpegPipeline     (gpu, both): reader workers (or the split's mix) -> pinned slots ->
//                      decode thread: NvjpegBatchStage::decode (nvJPEG on its own stream) ->
//                      consumer: NvjpegBatchStage::finish (one kernel on the consumer's stream).
// Both take batches across epochs (next_batch) and keep at most prefetch - 1 batches on the GPU,
// so the workers always have a slot to fill and the loader never finds its next slot still lent.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/cancel.hpp"
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

data::SlotAllocator pinned_slots() {
  return DeviceFeeder::pinned_slot_allocator();
}

// The decode thread takes each batch from the loader and runs nvJPEG's host stage for it, up
// to two batches ahead of the consumer; the consumer's next() only launches the kernel. Slots
// lent by the loader, at most prefetch - 1 at once: the batch being decoded, the ones decoded
// ahead (ready_), and the one the consumer took last (its slot and arena stay for
// check_last_batch() until the next take or drain()).
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
        max_lent_(o.prefetch - 1) {
    epoch_ = o.first_epoch;
    loader_.start_epoch(epoch_);
    for (int a = 0; a < NvjpegBatchStage::kArenas; ++a) free_arenas_.push_back(a);
    thread_ = std::thread([this] { decode_loop(); });
  }
  ~NvjpegPipeline() override {
    {
      const std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
    try {
      drain();
      // The batches decoded ahead: nvJPEG reads their pinned slots until `decoded`.
      const gpu::Event idle = gpu::Event::create(cudaEventDisableTiming);
      idle.record(stage_.stream());
      idle.wait_cancellable();
    } catch (...) {  // a failed CUDA call: the loader's stop() below still joins its workers
    }
    loader_.stop();
  }

  void drain() override {
    while (!in_flight_.empty()) {
      Entry& e = *in_flight_.front();
      e.d.done.wait_cancellable();
      give_back(e);
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
    if (in_flight_.empty() || in_flight_.back()->given_back) return std::nullopt;
    return stage_.check(in_flight_.back()->d, count, dataset_);
  }
  DecoderInfo decoder() const override {
    DecoderInfo d;
    d.backend = std::string(gpu::to_string(decoder_.backend()));
    d.backend_note = decoder_.fallback_reason();
    d.memory = std::string(gpu::to_string(decoder_.memory()));
    d.flags = gpu::nvjpeg_flags_name(decoder_.flags());
    const std::string version = library_->version();
    d.library = library_->path() + (version.empty() ? "" : " (" + version + ")");
    return d;
  }

 protected:
  std::optional<DeviceBatch> take(cudaStream_t stream, void* images, std::int32_t* labels) override;

 private:
  using Decoded = NvjpegBatchStage::Decoded;
  struct Entry {
    Decoded d;
    std::uint64_t generation = 0;
    bool given_back = false;  // the slot went back to the loader, the arena to the decode thread
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
  void decode_loop();
  std::unique_ptr<Decoded> next_decoded();
  void give_back(Entry& e);
  void account_finished();
  void note_failures(const Decoded& d);
  void account(const Entry& e);

  const data::Dataset& dataset_;
  std::shared_ptr<gpu::NvjpegLibrary> library_;
  gpu::NvjpegDecoder decoder_;
  std::size_t sample_bytes_;
  data::Loader loader_;
  NvjpegBatchStage stage_;
  std::size_t max_lent_;
  // The decode thread's: the loader's epochs (next_batch) and nvJPEG.
  std::thread thread_;
  std::uint32_t epoch_ = 0;
  // Between the decode thread and the consumer, under mu_.
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Decoded>> ready_;
  std::deque<int> free_arenas_;
  std::size_t lent_ = 0;  // slots lent by the loader and not yet given back
  bool stopping_ = false, ended_ = false;
  std::exception_ptr error_;  // the decode thread's, rethrown by next() after the batches before it
  // The consumer's: batches taken whose kernel has not been accounted, the last one held.
  std::deque<std::unique_ptr<Entry>> in_flight_;
  std::uint64_t generation_ = 0;
  Totals totals_;
};

void NvjpegPipeline::decode_loop() {
  try {
    GB_CHECK_CUDA(cudaSetDevice(options().device));
    for (;;) {
      int arena = 0;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [this] { return stopping_ || (!free_arenas_.empty() && lent_ < max_lent_); });
        if (stopping_) break;
        arena = free_arenas_.front();
        free_arenas_.pop_front();
        ++lent_;
      }
      std::optional<data::Batch> b = next_batch(loader_, epoch_);
      if (!b) {  // Ctrl-C
        const std::lock_guard lock(mu_);
        free_arenas_.push_front(arena);
        --lent_;
        break;
      }
      auto d = std::make_unique<Decoded>(stage_.decode(*b, arena));
      {
        const std::lock_guard lock(mu_);
        ready_.push_back(std::move(d));
      }
      cv_.notify_all();
    }
  } catch (...) {
    const std::lock_guard lock(mu_);
    error_ = std::current_exception();
  }
  {
    const std::lock_guard lock(mu_);
    ended_ = true;
  }
  cv_.notify_all();
}

// The next batch the decode thread finished, waiting for it; nothing once it ended (Ctrl-C), or
// its error once the batches before it are taken.
std::unique_ptr<NvjpegBatchStage::Decoded> NvjpegPipeline::next_decoded() {
  std::unique_lock lock(mu_);
  while (ready_.empty() && !ended_) cv_.wait_for(lock, std::chrono::milliseconds(50));
  if (ready_.empty()) {
    if (error_) std::rethrow_exception(error_);
    return nullptr;
  }
  std::unique_ptr<Decoded> d = std::move(ready_.front());
  ready_.pop_front();
  return d;
}

// The slot goes back to the loader once nvJPEG has read it, the arena to the decode thread
// (which waits for the kernel that reads it before writing it again).
void NvjpegPipeline::give_back(Entry& e) {
  if (e.given_back) return;
  e.d.decoded.wait_cancellable();
  loader_.release(e.d.batch);
  e.given_back = true;
  {
    const std::lock_guard lock(mu_);
    free_arenas_.push_back(e.d.arena);
    --lent_;
  }
  cv_.notify_all();
}

// Batches given back whose kernel is done leave the queue with their times.
void NvjpegPipeline::account_finished() {
  while (!in_flight_.empty() && in_flight_.front()->given_back &&
         in_flight_.front()->d.done.done()) {
    account(*in_flight_.front());
    in_flight_.pop_front();
  }
}

std::optional<DeviceBatch> NvjpegPipeline::take(cudaStream_t stream, void* images,
                                                std::int32_t* labels) {
  if (cancel_requested()) return std::nullopt;
  account_finished();
  // A bounded queue of batches whose kernels the consumer's stream has not reached yet.
  while (in_flight_.size() > max_lent_ + 2) {
    in_flight_.front()->d.done.wait_cancellable();
    account_finished();
  }
  std::unique_ptr<Decoded> d = next_decoded();
  if (!d) return std::nullopt;
  if (!in_flight_.empty()) give_back(*in_flight_.back());  // the batch taken before
  in_flight_.push_back(std::make_unique<Entry>(Entry{std::move(*d), generation_, false}));
  Entry& e = *in_flight_.back();
  stage_.finish(e.d, stream, images, labels);
  totals_.gpu_decoded += e.d.gpu_decoded;
  totals_.cpu_decoded += e.d.batch.size - e.d.gpu_decoded;
  totals_.single += e.d.single_decodes;
  note_failures(e.d);
  return device_batch(e.d.batch, images, labels);
}

void NvjpegPipeline::note_failures(const Decoded& d) {
  if (d.failures == 0) return;
  for (std::size_t j = 0; j < d.batch.size; ++j) {
    if (d.ok[j]) continue;
    const std::string what = dataset_.sample_name(d.batch.indices[j]) + ": " + d.reason[j];
    if (options().strict) throw Error(ErrorKind::usage, "bad sample " + what);
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
  totals_.decode_gpu_ms += gpu::Event::elapsed_ms(e.d.begin, e.d.decoded);
  totals_.resize_ms += gpu::Event::elapsed_ms(e.d.resize, e.d.done);
  totals_.decode_host_ms += e.d.decode_host_s * 1e3;
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
  // A slot for each arena (held, decoded ahead, being decoded) and one the workers fill.
  o.prefetch = std::max<std::size_t>(o.prefetch, NvjpegBatchStage::kArenas + 1);
  return std::make_unique<NvjpegPipeline>(dataset, o, workers, std::move(library),
                                          *gpu::parse_nvjpeg_backend(options.nvjpeg_backend));
}

}  // namespace gb::pipeline
