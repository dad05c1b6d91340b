// python/batch_source.cpp: the binding's C++ half (passes, batch memory, the worker sweep,
// statistics); see batch_source.hpp.
#include "python/batch_source.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <utility>

#include "core/error.hpp"
#include "data/normalize.hpp"
#include "data/open.hpp"
#include "data/sampler.hpp"
#include "pipeline/calibrate.hpp"
#include "pipeline/process.hpp"
#include "sys/host_membw.hpp"

#ifdef GPUBASE_WITH_CUDA
#include <cuda_runtime.h>

#include "gpu/check.hpp"
#endif

namespace gb::python {

namespace {

using Clock = std::chrono::steady_clock;

double now_s() {
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

// Host blocks, kept for reuse: every batch has the same two sizes, so after the first few
// batches no allocation (and no page fault on fresh memory) happens.
class HostMemory final : public TensorMemory {
 public:
  ~HostMemory() override {
    for (auto& [bytes, p] : free_) std::free(p);
  }
  void* allocate(std::size_t bytes, pipeline::StreamHandle) override {
    {
      std::lock_guard lock(mutex_);
      const auto it = free_.find(bytes);
      if (it != free_.end()) {
        void* p = it->second;
        free_.erase(it);
        return p;
      }
    }
    const std::size_t rounded = (bytes + 4095) / 4096 * 4096;
    void* p = std::aligned_alloc(4096, std::max<std::size_t>(rounded, 4096));
    if (!p) throw Error(ErrorKind::runtime, "out of host memory for a batch");
    return p;
  }
  void release(void* p, std::size_t bytes, pipeline::StreamHandle) noexcept override {
    std::lock_guard lock(mutex_);
    if (free_.size() >= kKeep) {
      std::free(p);
      return;
    }
    free_.emplace(bytes, p);
  }

 private:
  static constexpr std::size_t kKeep = 32;  // images + labels of 16 batches
  std::mutex mutex_;
  std::multimap<std::size_t, void*> free_;
};

#ifdef GPUBASE_WITH_CUDA
// Device blocks from a private stream-ordered pool (cudaMallocFromPoolAsync): a block freed on
// the consumer's stream is reused by a later batch on it without any host synchronization, and
// the pool keeps its memory (release threshold: unlimited) instead of returning it each sync.
class DeviceMemory final : public TensorMemory {
 public:
  explicit DeviceMemory(int device) {
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypeNone;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    GB_CHECK_CUDA(cudaMemPoolCreate(&pool_, &props));
    std::uint64_t keep = UINT64_MAX;
    GB_CHECK_CUDA(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &keep));
  }
  ~DeviceMemory() override {
    // Every block is back (each holds a reference to this pool); frees still pending on a
    // stream complete first (cudaMemPoolDestroy defers the release). Errors are ignored: at
    // interpreter exit the CUDA runtime may already be shut down.
    if (cudaMemPoolDestroy(pool_) != cudaSuccess) (void)cudaGetLastError();
  }
  void* allocate(std::size_t bytes, pipeline::StreamHandle stream) override {
    void* p = nullptr;
    GB_CHECK_CUDA(cudaMallocFromPoolAsync(&p, bytes, pool_, stream));
    return p;
  }
  void release(void* p, std::size_t, pipeline::StreamHandle stream) noexcept override {
    // During interpreter shutdown the CUDA runtime may already be gone: nothing to free then.
    if (cudaFreeAsync(p, stream) != cudaSuccess) (void)cudaGetLastError();
  }

 private:
  cudaMemPool_t pool_ = nullptr;
};

// Sets a device for the scope and restores the caller's (PyTorch keeps its own current device).
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    GB_CHECK_CUDA(cudaGetDevice(&previous_));
    if (previous_ != device) GB_CHECK_CUDA(cudaSetDevice(device));
  }
  ~DeviceScope() { GB_CHECK_CUDA_NOTHROW(cudaSetDevice(previous_)); }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = 0;
};
#endif

std::size_t image_elements(const pipeline::PipelineOptions& o) {
  return static_cast<std::size_t>(o.image_size) * o.image_size * 3;
}

// The CPU path's per-sample work for CPU tensors: jpeg_train_process into per-worker uint8
// pixels, then normalized into the sample's place in the batch (C x s x s or s x s x C elements
// of the dtype), so normalizing runs on all workers and the batch is ready when it is complete.
data::ProcessFn normalized_process(unsigned workers, const pipeline::PipelineOptions& o) {
  auto decode = pipeline::jpeg_train_process(workers, o.image_size);
  auto pixels = std::make_shared<std::vector<std::vector<std::uint8_t>>>(
      workers, std::vector<std::uint8_t>(image_elements(o)));
  const data::BatchShape shape{1, o.image_size, o.image_size, 3};
  return [decode, pixels, shape, layout = o.layout, dtype = o.dtype, norm = o.norm](
             const data::SampleView& sample, data::Philox& rng, std::span<std::uint8_t> dst) {
    std::vector<std::uint8_t>& px = (*pixels)[sample.worker];
    data::SampleResult r = decode(sample, rng, std::span<std::uint8_t>(px));
    if (!r.ok) return r;
    const auto t0 = Clock::now();
    data::normalize_reference(px.data(), shape, layout, dtype, norm, dst.data());
    r.stage_s[2] = std::chrono::duration<double>(Clock::now() - t0).count();
    return r;
  };
}

data::LoaderOptions host_loader_options(const pipeline::PipelineOptions& o, unsigned workers) {
  data::LoaderOptions lo = pipeline::cpu_loader_options(o, workers);
  lo.sample_bytes = image_elements(o) * element_bytes(o.dtype);
  lo.process_stages = {"decode", "augment", "normalize"};
  return lo;
}

std::unique_ptr<data::Dataset> open_jpeg_dataset(const SourceOptions& o) {
  data::DatasetSpec spec;
  spec.path = o.path;
  auto dataset = data::open_dataset(spec);
  pipeline::check_jpeg_dataset(*dataset);
  return dataset;
}

// 1, 2, 4, ... up to the count the pipeline would use by default (included).
std::vector<unsigned> sweep_points(pipeline::DecodeMode mode) {
  const std::size_t cores = std::max<std::size_t>(sys::allowed_cpus().size(), 1);
  const unsigned top = pipeline::default_workers(mode, static_cast<unsigned>(cores));
  std::vector<unsigned> points;
  for (unsigned n = 1; n < top; n *= 2) points.push_back(n);
  points.push_back(top);
  return points;
}

}  // namespace

// ---- Block ----------------------------------------------------------------------------------

Block::Block(std::shared_ptr<TensorMemory> memory, std::size_t bytes,
             pipeline::StreamHandle stream)
    : memory_(std::move(memory)), bytes_(bytes), stream_(stream) {
  ptr_ = memory_->allocate(bytes, stream);
}
Block::~Block() {
  if (ptr_) memory_->release(ptr_, bytes_, stream_);
}
Block::Block(Block&& other) noexcept
    : memory_(std::move(other.memory_)),
      ptr_(std::exchange(other.ptr_, nullptr)),
      bytes_(other.bytes_),
      stream_(other.stream_) {}
Block& Block::operator=(Block&& other) noexcept {
  if (this != &other) {
    if (ptr_) memory_->release(ptr_, bytes_, stream_);
    memory_ = std::move(other.memory_);
    ptr_ = std::exchange(other.ptr_, nullptr);
    bytes_ = other.bytes_;
    stream_ = other.stream_;
  }
  return *this;
}

// ---- the CPU-tensor path --------------------------------------------------------------------

struct BatchSource::Host {
  Host(const data::Dataset& dataset, const pipeline::PipelineOptions& o, unsigned workers)
      : loader(dataset, host_loader_options(o, workers), normalized_process(workers, o)) {}
  data::Loader loader;
  bool epoch_done = false;  // the last epoch begun delivered all its batches
};

// ---- BatchSource ----------------------------------------------------------------------------

BatchSource::BatchSource(const SourceOptions& options) : options_(options) {
  pipeline::PipelineOptions& po = options_.pipeline;
  {
    // decode='both' without a share: the share is measured below, once the GPU is open.
    pipeline::PipelineOptions checked = po;
    if (checked.decode == pipeline::DecodeMode::both && !checked.gpu_share) checked.gpu_share = 0.5;
    pipeline::validate(checked);
  }
  if (!options_.on_gpu && po.decode != pipeline::DecodeMode::cpu)
    throw Error(ErrorKind::usage, "decode='" + std::string(pipeline::to_string(po.decode)) +
                                      "' decodes on a GPU: it needs a CUDA device, not 'cpu'");
  if (!options_.on_gpu && po.dtype != ElementType::f32 && po.dtype != ElementType::f16 &&
      po.dtype != ElementType::bf16)
    throw Error(ErrorKind::usage, "dtype: float32, float16 or bfloat16");
  dataset_ = open_jpeg_dataset(options_);
  data::SamplerOptions so = pipeline::cpu_loader_options(po, 1).sampling;
  num_batches_ = data::Sampler(dataset_->size(), so).num_batches();
  if (num_batches_ == 0)
    throw Error(ErrorKind::usage, options_.path.string() + ": " +
                                      std::to_string(dataset_->size()) +
                                      " samples make no full batch of " + std::to_string(po.batch) +
                                      " for this rank (drop_last)");
  if (options_.on_gpu) {
#ifdef GPUBASE_WITH_CUDA
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
      (void)cudaGetLastError();
      throw Error(ErrorKind::no_gpu, "no GPU found: device " + std::to_string(po.device) +
                                         " asked for (use device='cpu' for CPU tensors)");
    }
    if (po.device >= count)
      throw Error(ErrorKind::usage, "device " + std::to_string(po.device) + ": this machine has " +
                                        std::to_string(count) + (count == 1 ? " GPU" : " GPUs"));
    // Everything below runs on the asked device and leaves the caller's current one as it was.
    DeviceScope scope(po.device);
    if (po.decode == pipeline::DecodeMode::both && !po.gpu_share) {
      if (po.workers == 0) {
        // The knee of the CPU path first: the share balances that path against nvJPEG.
        po.decode = pipeline::DecodeMode::cpu;
        choose_workers();
        po.decode = pipeline::DecodeMode::both;
      }
      std::string why_not;
      const auto share = pipeline::balanced_share(*dataset_, po, 4, why_not);
      if (!share) throw Error(ErrorKind::no_gpu, "decode='both': " + why_not);
      po.gpu_share = share->gpu_share;
    }
    memory_ = std::make_shared<DeviceMemory>(po.device);
    choose_workers();
    open_pipeline(0);
#else
    throw Error(ErrorKind::no_gpu,
                "built without CUDA: GPU tensors cannot be made (use device='cpu')");
#endif
  } else {
    memory_ = std::make_shared<HostMemory>();
    choose_workers();
    host_ = std::make_unique<Host>(*dataset_, po, workers_);
  }
}

void BatchSource::choose_workers() {
  pipeline::PipelineOptions& po = options_.pipeline;
  if (po.workers == 0) {
    sweep_ = sweep_workers();
    po.workers = sweep_.knee;
  }
  workers_ = po.workers;
}

BatchSource::~BatchSource() { close(); }

void BatchSource::close() {
  if (closed_) return;
  closed_ = true;
#ifdef GPUBASE_WITH_CUDA
  if (pipeline_) {
    DeviceScope scope(options_.pipeline.device);
    pipeline_.reset();
  }
#endif
  host_.reset();
}

std::size_t BatchSource::dataset_size() const { return dataset_->size(); }

void BatchSource::open_pipeline(std::uint32_t first_epoch) {
#ifdef GPUBASE_WITH_CUDA
  DeviceScope scope(options_.pipeline.device);
  pipeline_.reset();  // joins the old workers before the new ones start
  pipeline::PipelineOptions po = options_.pipeline;
  po.first_epoch = first_epoch;
  std::string why_not;
  pipeline_ = pipeline::make_input_pipeline(*dataset_, po, why_not);
  if (!pipeline_) throw Error(ErrorKind::no_gpu, why_not);
  pipeline_at_boundary_ = true;
  pipeline_next_ = first_epoch;
#else
  (void)first_epoch;
  throw Error(ErrorKind::no_gpu, "built without CUDA");
#endif
}

void BatchSource::begin_pass() {
  if (closed_) throw Error(ErrorKind::usage, "the loader is closed");
  pass_epoch_ = next_epoch_;
  next_epoch_ = pass_epoch_ + 1;
  delivered_ = 0;
  pass_open_ = true;
  if (host_) {
    host_->epoch_done = false;
    host_->loader.start_epoch(pass_epoch_);  // adopts the look-ahead when it is the next epoch
    return;
  }
  // The pipeline runs epochs back to back: reuse it when its next batch opens this epoch.
  if (!pipeline_ || !pipeline_at_boundary_ || pipeline_next_ != pass_epoch_)
    open_pipeline(pass_epoch_);
  pipeline_at_boundary_ = false;
}

std::optional<OutBatch> BatchSource::next(pipeline::StreamHandle stream) {
  if (closed_) throw Error(ErrorKind::usage, "the loader is closed");
  if (!pass_open_) return std::nullopt;
  const double t0 = now_s();
  if (!clock_started_) {
    clock_started_ = true;
    clock_origin_s_ = t0;
  }
  const auto finish = [&](std::optional<OutBatch> b) {
    const double t1 = now_s();
    wait_s_ += t1 - t0;
    wall_s_ = t1 - clock_origin_s_;
    if (b) {
      ++batches_;
      images_ += b->size;
    }
    return b;
  };
  if (delivered_ == num_batches_) {
    pass_open_ = false;
    if (pipeline_) {
      pipeline_at_boundary_ = true;
      pipeline_next_ = pass_epoch_ + 1;
    }
    return std::nullopt;
  }
  const pipeline::PipelineOptions& po = options_.pipeline;
  const std::size_t per_image = image_elements(po) * element_bytes(po.dtype);
  OutBatch out;
  const std::int64_t s = po.image_size;
  if (host_) {
    auto b = host_->loader.next();
    if (!b) {  // the loader was stopped
      pass_open_ = false;
      return finish(std::nullopt);
    }
    out.images = Block(memory_, po.batch * per_image, stream);
    out.labels = Block(memory_, po.batch * sizeof(std::int32_t), stream);
    std::memcpy(out.images.data(), b->data.data(), b->size * per_image);
    std::memcpy(out.labels.data(), b->labels.data(), b->size * sizeof(std::int32_t));
    out.size = b->size;
    out.epoch = b->epoch;
    out.number = b->number;
    host_->loader.release(*b);
  } else {
#ifdef GPUBASE_WITH_CUDA
    DeviceScope scope(po.device);
    out.images = Block(memory_, po.batch * per_image, stream);
    out.labels = Block(memory_, po.batch * sizeof(std::int32_t), stream);
    const auto b =
        pipeline_->into(stream, out.images.data(), static_cast<std::int32_t*>(out.labels.data()));
    if (!b) {
      pass_open_ = false;
      return finish(std::nullopt);
    }
    if (b->epoch != pass_epoch_ || b->number != delivered_)
      throw Error(ErrorKind::runtime, "input pipeline out of step: batch " +
                                          std::to_string(b->number) + " of epoch " +
                                          std::to_string(b->epoch) + " where batch " +
                                          std::to_string(delivered_) + " of epoch " +
                                          std::to_string(pass_epoch_) + " was due");
    out.size = b->size;
    out.epoch = b->epoch;
    out.number = b->number;
#endif
  }
  ++delivered_;
  const std::int64_t n = static_cast<std::int64_t>(out.size);
  out.shape = {n, 3, s, s};
  if (po.layout == data::TensorLayout::nchw) {
    out.strides = {3 * s * s, s * s, s, 1};
  } else {
    out.strides = {3 * s * s, 1, 3 * s, 3};
  }
  return finish(std::move(out));
}

WorkerSweep BatchSource::sweep_workers() {
  WorkerSweep sweep;
  const pipeline::PipelineOptions& po = options_.pipeline;
  // Short: a warm-up batch, then about 0.4 s or 3 batches per point, whichever is longer.
  constexpr double kPointSeconds = 0.4;
  constexpr std::size_t kMinBatches = 3;
  for (const unsigned n : sweep_points(po.decode)) {
    double rate = 0;
    if (options_.on_gpu) {
      pipeline::PipelineOptions o = po;
      o.workers = n;
      std::string why_not;
      const auto r = pipeline::measure_images_per_s(*dataset_, o, 1, kMinBatches + n, why_not);
      if (!r) throw Error(ErrorKind::no_gpu, "worker sweep: " + why_not);
      rate = *r;
    } else {
      pipeline::PipelineOptions o = po;
      o.workers = n;
      data::Loader loader(*dataset_, host_loader_options(o, n), normalized_process(n, o));
      std::uint32_t epoch = 0;
      loader.start_epoch(epoch);
      const auto take = [&]() -> std::size_t {
        for (;;) {
          if (auto b = loader.next()) {
            const std::size_t size = b->size;
            loader.release(*b);
            return size;
          }
          loader.start_epoch(++epoch);
        }
      };
      take();  // warm-up
      const auto t0 = Clock::now();
      std::size_t images = 0, batches = 0;
      double elapsed = 0;
      while (batches < kMinBatches || elapsed < kPointSeconds) {
        images += take();
        ++batches;
        elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
      }
      rate = static_cast<double>(images) / elapsed;
    }
    sweep.workers.push_back(n);
    sweep.images_per_s.push_back(rate);
  }
  const double best = *std::max_element(sweep.images_per_s.begin(), sweep.images_per_s.end());
  for (std::size_t k = 0; k < sweep.workers.size(); ++k) {
    if (sweep.images_per_s[k] >= kKneeShare * best) {
      sweep.knee = sweep.workers[k];
      break;
    }
  }
  return sweep;
}

std::string BatchSource::describe() const {
  const pipeline::PipelineOptions& po = options_.pipeline;
  std::string where = options_.on_gpu ? "cuda:" + std::to_string(po.device) : std::string("cpu");
  std::string what;
  if (pipeline_) {
    what = pipeline_->describe();
  } else {
    what = "CPU decode, " + std::to_string(workers_) + (workers_ == 1 ? " worker" : " workers") +
           ", prefetch " + std::to_string(po.prefetch);
  }
  return what + " -> " + std::string(data::to_string(po.layout)) + " " +
         std::string(to_string(po.dtype)) + " on " + where;
}

SourceStats BatchSource::stats() const {
  SourceStats out;
  auto& n = out.numbers;
  data::LoaderStats ls;
  if (host_) {
    ls = host_->loader.stats();
  } else if (pipeline_) {
    const pipeline::PipelineStats ps = pipeline_->stats();
    ls = ps.loader;
    n["gpu_decoded"] = static_cast<double>(ps.gpu_decoded);
    n["cpu_decoded"] = static_cast<double>(ps.cpu_decoded);
    n["decode_failures"] = static_cast<double>(ps.decode_failures);
    n["gpu_batches_timed"] = static_cast<double>(ps.gpu_batches);
    if (ps.gpu_batches > 0) {
      const double per_batch = 1.0 / static_cast<double>(ps.gpu_batches);
      n["gpu_decode_ms_per_batch"] = ps.decode_gpu_ms * per_batch;
      n["gpu_decode_host_ms_per_batch"] = ps.decode_host_ms * per_batch;
      n["gpu_resize_ms_per_batch"] = ps.resize_ms * per_batch;
    }
    out.bad_examples = ps.decode_failure_examples;
  }
  n["workers"] = workers_;
  n["batches"] = static_cast<double>(batches_);
  n["images"] = static_cast<double>(images_);
  n["wall_s"] = wall_s_;
  n["wait_s"] = wait_s_;
  n["data_wait_share"] = wall_s_ > 0 ? wait_s_ / wall_s_ : 0;
  n["images_per_s"] = wall_s_ > 0 ? static_cast<double>(images_) / wall_s_ : 0;
  n["substituted"] = static_cast<double>(ls.substituted);
  n["bad_samples"] = static_cast<double>(ls.bad_samples);
  n["epochs_cancelled"] = static_cast<double>(ls.epochs_cancelled);
  n["worker_idle_share"] = ls.worker_idle_share();
  const auto per_image_ms = [&](const data::TimeTotal& t) {
    return t.count == 0 ? 0.0 : t.total_s * 1e3 / static_cast<double>(t.count);
  };
  n["read_ms_per_image"] = per_image_ms(ls.read);
  n["process_ms_per_image"] = per_image_ms(ls.process);
  for (const data::StageTotal& st : ls.stages)
    n[st.name + "_ms_per_image"] = per_image_ms(st.time);
  n["batch_latency_ms"] = ls.batch_latency.mean_s() * 1e3;
  n["worker_wait_slot_s"] = ls.wait_slot_s;
  for (const std::string& e : ls.bad_examples) out.bad_examples.push_back(e);
  return out;
}

void BatchSource::reset_stats() {
  if (host_) host_->loader.reset_stats();
  if (pipeline_) pipeline_->reset_stats();
  clock_started_ = false;
  wall_s_ = wait_s_ = 0;
  batches_ = images_ = 0;
}

ReferenceBatch reference_batch(const SourceOptions& options, std::uint32_t epoch,
                               std::size_t number) {
  const auto dataset = open_jpeg_dataset(options);
  const pipeline::PipelineOptions& po = options.pipeline;
  const unsigned workers = std::max(po.workers, 1u);
  data::Loader loader(*dataset, pipeline::cpu_loader_options(po, workers),
                      pipeline::jpeg_train_process(workers, po.image_size));
  loader.start_epoch(epoch);
  for (std::size_t k = 0;; ++k) {
    auto b = loader.next();
    if (!b)
      throw Error(ErrorKind::usage, "epoch " + std::to_string(epoch) + " has no batch " +
                                        std::to_string(number));
    if (k == number) {
      ReferenceBatch r;
      r.size = b->size;
      r.pixels.assign(b->data.begin(), b->data.begin() + b->size * image_elements(po));
      r.labels.assign(b->labels.begin(), b->labels.end());
      loader.release(*b);
      return r;
    }
    loader.release(*b);
  }
}

}  // namespace gb::python
