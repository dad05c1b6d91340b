// bench/gpu/train_run.cpp: one training-throughput configuration on the GPU (see
// bench/train.hpp): build the Trainer, make its synthetic batch (or start the loader with
// --data), warm up (the CUDA graph is captured here), then time `steps` steps with an event
// between consecutive steps (and, fed by the loader, one right before each step, for the share
// of time the GPU waited for data) and read the events once at the end. The engine's errors (out of memory at this batch: how much was
// needed and a batch that fits) land in TrainMeasurement::error; they never end the run.
//
// Without the engine in this build (GPUBASE_WITH_NN undefined) this file is empty and
// run_train_bench() reports every configuration skipped with the reason.
#include <cuda_runtime_api.h>

#include <chrono>
#include <string>
#include <vector>

#include "bench/gpu/loader_device.hpp"
#include "bench/loader.hpp"
#include "bench/train.hpp"
#include "core/cancel.hpp"
#include "core/error.hpp"
#include "gpu/check.hpp"
#include "gpu/cuda_raii.hpp"
#include "data/normalize.hpp"
#include "data/open.hpp"
#include "sys/host_membw.hpp"
#include "sys/telemetry.hpp"

#ifdef GPUBASE_WITH_NN
#include "nn/trainer.hpp"
#endif

namespace gb::bench {

#ifdef GPUBASE_WITH_NN

namespace {

std::string layout_text(const nn::InputFormat& f) {
  const char* dtype = f.dtype == nn::InputFormat::DType::f32   ? "fp32"
                      : f.dtype == nn::InputFormat::DType::f16 ? "fp16"
                                                               : "bf16";
  return std::string(f.nhwc ? "NHWC " : "NCHW ") + dtype;
}

// Device memory in use now (total - free), for the before/after difference.
std::optional<std::size_t> device_used_now(std::size_t* total) {
  std::size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
    (void)cudaGetLastError();
    return std::nullopt;
  }
  if (total) *total = total_bytes;
  return total_bytes - free_bytes;
}

// `gpubase train --data`: the loader feeds the steps. Its workers decode and augment into pinned
// slots; DeviceFeeder copies each batch on its own stream and normalizes it, in the trainer's
// input layout and type, into two fixed device buffers (images, labels), so a captured graph
// reads the same pointers every step. Stream order keeps the next batch's normalization behind
// the step that reads the buffers.
class LoaderFeed {
 public:
  LoaderFeed(const TrainBenchOptions& o, const TrainConfig& c, const nn::Trainer& trainer,
             const nn::InputShape& in)
      : dataset_(data::open_dataset({.path = o.data})),
        prefetch_(o.data_prefetch),
        workers_(o.data_workers > 0
                     ? o.data_workers
                     : static_cast<unsigned>(std::max<std::size_t>(
                           sys::allowed_cpus().size() > 1 ? sys::allowed_cpus().size() - 1 : 1,
                           1))),
        loader_(*dataset_, options(o, c, in, workers_, *dataset_),
                jpeg_train_process(workers_, in.height), DeviceFeeder::pinned_slot_allocator()),
        feeder_(gpu::NormalizeShape{c.batch, in.height, in.width, 3, !trainer.input_format().nhwc},
                element_type(trainer.input_format()), data::imagenet_normalization().mean.data(),
                data::imagenet_normalization().stddev.data()),
        images_(feeder_.tensor_bytes()),
        labels_(static_cast<std::size_t>(c.batch) * sizeof(std::int32_t)) {
    loader_.start_epoch(epoch_);
  }
  LoaderFeed(const LoaderFeed&) = delete;
  LoaderFeed& operator=(const LoaderFeed&) = delete;
  ~LoaderFeed() {
    try {
      feeder_.release_all(loader_);
    } catch (...) {  // a failed copy: the loader's stop() below still joins its workers
    }
    loader_.stop();
  }

  // One step on the next batch; `before` (if given) is recorded right before the step itself.
  // False when Ctrl-C ended the loading.
  bool step(nn::Trainer& trainer, const gpu::Event* before) {
    feeder_.release_until(loader_, prefetch_ - 1);  // the ring needs a free slot for next()
    const auto b = next_batch(loader_, epoch_);
    if (!b) return false;
    feeder_.submit_into(*b, trainer.stream(), images_.data(), labels_.as<std::int32_t>());
    if (before) before->record(trainer.stream());
    trainer.train_step(nn::DeviceBatch{images_.data(), labels_.as<std::int32_t>()});
    feeder_.release_done(loader_);
    return true;
  }

  std::string source() const {
    return std::string(dataset_->kind()) + " " + dataset_->source() + " (" +
           std::to_string(dataset_->size()) + " samples), " + std::to_string(workers_) +
           " workers, prefetch " + std::to_string(prefetch_);
  }
  std::size_t bad_samples() const { return loader_.stats().bad_samples; }

 private:
  static data::LoaderOptions options(const TrainBenchOptions& o, const TrainConfig& c,
                                     const nn::InputShape& in, unsigned workers,
                                     const data::Dataset& ds) {
    if (ds.format() != data::SampleFormat::jpeg)
      throw Error(ErrorKind::usage, "--data: " + ds.source() + " holds " +
                                        std::string(data::to_string(ds.format())) +
                                        " samples; training from the loader needs JPEGs");
    if (ds.size() < static_cast<std::size_t>(c.batch))
      throw Error(ErrorKind::usage, "--data: " + ds.source() + " has " +
                                        std::to_string(ds.size()) +
                                        " samples, fewer than one batch of " +
                                        std::to_string(c.batch));
    if (ds.class_names().size() > static_cast<std::size_t>(in.classes))
      throw Error(ErrorKind::usage, "--data: " + ds.source() + " has " +
                                        std::to_string(ds.class_names().size()) +
                                        " classes; the model has " + std::to_string(in.classes));
    LoaderBenchOptions lb;
    lb.batch_size = static_cast<std::size_t>(c.batch);
    lb.image_size = in.height;
    lb.prefetch_depth = o.data_prefetch;
    lb.seed = o.seed;
    data::LoaderOptions lo = loader_options(lb, workers);
    lo.sampling.drop_last = true;  // every step a full batch: the graph's shapes are fixed
    return lo;
  }
  static gpu::ElementType element_type(const nn::InputFormat& f) {
    return f.dtype == nn::InputFormat::DType::f32   ? gpu::ElementType::f32
           : f.dtype == nn::InputFormat::DType::f16 ? gpu::ElementType::f16
                                                    : gpu::ElementType::bf16;
  }

  std::unique_ptr<data::Dataset> dataset_;
  std::size_t prefetch_;
  unsigned workers_;
  data::Loader loader_;
  DeviceFeeder feeder_;
  gpu::DeviceBuffer images_, labels_;
  std::uint32_t epoch_ = 0;
};

// The loader's next batch is empty only after Ctrl-C.
[[noreturn]] void throw_loader_stopped() {
  throw_if_cancelled();
  throw Error(ErrorKind::runtime, "the loader stopped without a batch");
}

void run_config(const TrainConfig& c, const TrainBenchOptions& o, const DeviceContext& ctx,
                ResultSink& sink, TrainMeasurement& m) {
  const auto model = parse_model(c.model);
  const auto precision = parse_precision(c.precision);
  if (!model || !precision)
    throw Error(ErrorKind::usage, "the training engine does not know " + c.model + " " +
                                      c.precision);
  std::size_t total = 0;
  const std::optional<std::size_t> used_before = device_used_now(&total);

  nn::TrainerOptions to;
  to.model = *model;
  to.precision = *precision;
  to.batch = c.batch;
  to.input = nn::default_input(*model);
  to.seed = o.seed;
  to.cuda_graph = c.cuda_graph;
  nn::Trainer trainer(to);
  m.parameter_count = trainer.parameter_count();
  m.input_layout = layout_text(trainer.input_format());
  std::optional<LoaderFeed> feed;
  if (o.data.empty()) {
    trainer.make_synthetic_batch(o.seed + 1);
  } else {
    feed.emplace(o, c, trainer, to.input);
    m.data_source = feed->source();
  }
  sink.progress("  built: " + std::to_string(m.parameter_count) + " parameters, input " +
                m.input_layout + (feed ? " from " + m.data_source : std::string()) +
                "; warming up");
  // One step on the synthetic batch or the loader's next; false when Ctrl-C stopped the loader.
  auto step = [&](const gpu::Event* before) {
    if (feed) return feed->step(trainer, before);
    trainer.train_step_synthetic();
    return true;
  };

  // Warm-up. One host synchronisation after the first step for its loss (the sanity figure
  // next to the last), one at the end so the timed steps start on an empty queue.
  for (int i = 0; i < o.warmup; ++i) {
    throw_if_cancelled();
    if (!step(nullptr)) throw_loader_stopped();
    if (i == 0) m.first_loss = trainer.last_step().loss;
  }
  if (o.warmup > 0) (void)trainer.last_step();
  const std::size_t skipped_before = trainer.scaler_stats().skipped;

  // Timed: event k is recorded before step k, event k+1 after it; step k's time is the time
  // between them, host gaps included (a launch-bound step is a slow step).
  const cudaStream_t stream = trainer.stream();
  std::vector<gpu::Event> events, befores;
  events.reserve(static_cast<std::size_t>(o.steps) + 1);
  befores.reserve(static_cast<std::size_t>(o.steps));
  sys::TelemetrySampler sampler(ctx.nvml, std::chrono::milliseconds(20));
  sampler.start();
  events.push_back(gpu::Event::create());
  events.back().record(stream);
  // Ctrl-C ends the timed steps early: the steps that ran are this configuration's figure, and
  // the suite throws Cancelled once it is reported (run_train_bench).
  for (int i = 0; i < o.steps && !cancel_requested(); ++i) {
    if (feed) befores.push_back(gpu::Event::create());
    if (!step(feed ? &befores.back() : nullptr)) {
      if (feed) befores.pop_back();
      if (!cancel_requested()) throw_loader_stopped();
      break;
    }
    events.push_back(gpu::Event::create());
    events.back().record(stream);
  }
  events.back().synchronize();
  m.telemetry = sampler.stop();
  m.interrupted = cancel_requested();
  for (std::size_t k = 0; k + 1 < events.size(); ++k)
    m.step_ms.push_back(gpu::Event::elapsed_ms(events[k], events[k + 1]));
  for (std::size_t k = 0; k < befores.size() && k + 1 < events.size(); ++k)
    m.gpu_step_ms.push_back(gpu::Event::elapsed_ms(befores[k], events[k + 1]));
  if (feed) m.bad_samples = feed->bad_samples();

  const nn::StepResult last = trainer.last_step();
  m.final_loss = last.loss;
  if (*precision == Precision::fp16) {
    const nn::Trainer::ScalerStats s = trainer.scaler_stats();
    m.loss_scale = s.scale;
    m.skipped_steps = s.skipped - skipped_before;
  }
  m.trainer_bytes = trainer.device_bytes();
  const std::optional<std::size_t> used_after = device_used_now(nullptr);
  if (used_before && used_after) {
    m.used_bytes = *used_after > *used_before ? *used_after - *used_before : 0;
    m.total_bytes = total;
  }
}

}  // namespace

TrainMeasurement measure_train(const TrainConfig& c, const TrainBenchOptions& o,
                               const DeviceContext& ctx, ResultSink& sink) {
  TrainMeasurement m;
  m.config = c;
  m.warmup = o.warmup;
  m.steps_asked = o.steps;
  m.device_name = ctx.device.name;
  try {
    run_config(c, o, ctx, sink, m);
  } catch (const Cancelled&) {
    throw;  // Ctrl-C is the suite runner's, not a failed configuration
  } catch (const Error& e) {
    m.error = e.what();
  } catch (const std::exception& e) {
    m.error = std::string("the training engine failed: ") + e.what();
  }
  // A failed allocation leaves its (non-sticky) error behind; the next configuration must not
  // read it as its own.
  (void)cudaGetLastError();
  return m;
}

#endif

}  // namespace gb::bench
