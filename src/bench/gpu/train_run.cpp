// bench/gpu/train_run.cpp: one training-throughput configuration on the GPU (see
// bench/train.hpp): build the Trainer, make its synthetic batch (or start the input pipeline
// with --data, decoded as --decode says), warm up (the CUDA graph is captured here), then time
// `steps` steps with an event between consecutive steps (and, fed by the pipeline, one right
// before each step, for the share of time the GPU waited for data) and read the events once at
// the end. The engine's errors (out of memory at this batch: how much was needed and a batch
// that fits) land in TrainMeasurement::error; they never end the run.
//
// Without the engine in this build (GPUBASE_WITH_NN undefined) this file is empty and
// run_train_bench() reports every configuration skipped with the reason.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench/train.hpp"
#include "core/cancel.hpp"
#include "core/error.hpp"
#include "data/open.hpp"
#include "gpu/check.hpp"
#include "gpu/cuda_raii.hpp"
#include "pipeline/calibrate.hpp"
#include "pipeline/input_pipeline.hpp"
#include "sys/cpu_time.hpp"
#include "sys/telemetry.hpp"

#ifdef GPUBASE_WITH_NN
#include "nn/kernels.hpp"
#include "nn/trainer.hpp"
#endif

namespace gb::bench {

#ifdef GPUBASE_WITH_NN

namespace {

std::string layout_text(const nn::InputFormat& f) {
  return std::string(f.nhwc ? "NHWC " : "NCHW ") + std::string(to_string(f.dtype));
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

// `gpubase train --data`: the input pipeline (src/pipeline) feeds the steps, whatever decodes
// (--decode cpu|gpu|both), into two fixed device buffers (images in the trainer's input layout
// and type, labels), so a captured graph reads the same pointers every step. Stream order keeps
// the next batch's writes behind the step that reads the buffers.
class LoaderFeed {
 public:
  LoaderFeed(std::unique_ptr<data::Dataset> dataset, const pipeline::PipelineOptions& po)
      : dataset_(std::move(dataset)),
        images_(pipeline::tensor_bytes(po, po.batch)),
        labels_(po.batch * sizeof(std::int32_t)) {}
  LoaderFeed(const LoaderFeed&) = delete;
  LoaderFeed& operator=(const LoaderFeed&) = delete;

  // The pipeline, or false with why_not when it cannot run here.
  bool open(const pipeline::PipelineOptions& po, std::string& why_not) {
    in_ = pipeline::make_input_pipeline(*dataset_, po, why_not);
    return in_ != nullptr;
  }

  // One step on the next batch; `before` (if given) is recorded right before the step itself.
  // False when Ctrl-C ended the loading.
  bool step(nn::Trainer& trainer, const gpu::Event* before) {
    if (!in_->into(trainer.stream(), images_.data(), labels_.as<std::int32_t>())) return false;
    if (before) before->record(trainer.stream());
    trainer.train_step(nn::DeviceBatch{images_.data(), labels_.as<std::int32_t>()});
    return true;
  }

  // Random images and labels in the feed's own buffers, and one step on them without taking a
  // batch from the pipeline: the model alone, on the pointers its graph will keep.
  void fill_random(const nn::Trainer& trainer, const nn::InputShape& in, std::size_t batch,
                   std::uint64_t seed) {
    const std::size_t elements =
        batch * static_cast<std::size_t>(in.channels) * in.height * in.width;
    nn::fill_normal(images_.data(), elements, trainer.input_format().dtype, seed, trainer.stream());
    nn::fill_labels(labels_.as<std::int32_t>(), batch, in.classes, seed, trainer.stream());
  }
  void step_without_data(nn::Trainer& trainer) {
    trainer.train_step(nn::DeviceBatch{images_.data(), labels_.as<std::int32_t>()});
  }

  const data::Dataset& dataset() const { return *dataset_; }
  std::string source() const {
    return std::string(dataset_->kind()) + " " + dataset_->source() + " (" +
           std::to_string(dataset_->size()) + " samples)" +
           (in_ ? ", " + in_->describe() : std::string());
  }
  const pipeline::InputPipeline* pipeline() const { return in_.get(); }

 private:
  std::unique_ptr<data::Dataset> dataset_;
  gpu::DeviceBuffer images_, labels_;
  std::unique_ptr<pipeline::InputPipeline> in_;  // destroyed first: it writes into the buffers
};

// The dataset checks of --data: JPEGs, a batch's worth, no more classes than the model has.
void check_train_dataset(const data::Dataset& ds, const TrainConfig& c, const nn::InputShape& in) {
  if (ds.format() != data::SampleFormat::jpeg)
    throw Error(ErrorKind::usage, "--data: " + ds.source() + " holds " +
                                      std::string(data::to_string(ds.format())) +
                                      " samples; training from the loader needs JPEGs");
  if (ds.size() < static_cast<std::size_t>(c.batch))
    throw Error(ErrorKind::usage, "--data: " + ds.source() + " has " + std::to_string(ds.size()) +
                                      " samples, fewer than one batch of " +
                                      std::to_string(c.batch));
  if (ds.class_names().size() > static_cast<std::size_t>(in.classes))
    throw Error(ErrorKind::usage, "--data: " + ds.source() + " has " +
                                      std::to_string(ds.class_names().size()) +
                                      " classes; the model has " + std::to_string(in.classes));
}

// The pipeline options of a run: the trainer's input layout and type, full batches only.
pipeline::PipelineOptions train_pipeline_options(const TrainBenchOptions& o, const TrainConfig& c,
                                                 const nn::Trainer& trainer,
                                                 const nn::InputShape& in) {
  const nn::InputFormat f = trainer.input_format();
  pipeline::PipelineOptions po;
  po.batch = static_cast<std::size_t>(c.batch);
  po.image_size = in.height;
  po.layout = f.nhwc ? data::TensorLayout::nhwc : data::TensorLayout::nchw;
  po.dtype = f.dtype;
  po.decode = o.data_decode;
  if (o.data_decode == pipeline::DecodeMode::both && o.data_gpu_share > 0)
    po.gpu_share = o.data_gpu_share;
  po.workers = o.data_workers;
  po.prefetch = o.data_prefetch;
  po.seed = o.seed;
  po.drop_last = true;  // every step a full batch: the graph's shapes are fixed
  po.device = o.device;
  return po;
}

// Batches per path when the split's share is balanced from the two paths' rates.
constexpr std::size_t kShareCalibrationBatches = 6;

// The loader feed of a --data run: the dataset checked and the input buffers made; the pipeline
// starts in start_feed.
std::unique_ptr<LoaderFeed> make_feed(const TrainBenchOptions& o, const TrainConfig& c,
                                      const nn::Trainer& trainer, const nn::InputShape& in,
                                      TrainMeasurement& m) {
  auto dataset = data::open_dataset({.path = o.data});
  check_train_dataset(*dataset, c, in);
  auto feed =
      std::make_unique<LoaderFeed>(std::move(dataset), train_pipeline_options(o, c, trainer, in));
  m.data_source = feed->source();
  return feed;
}

// Starts the pipeline of `feed` (false with m.skipped_reason when it cannot run here). For
// --decode both without --gpu-share, the share balances the two paths' rates, each measured
// alone first.
bool start_feed(LoaderFeed& feed, const TrainBenchOptions& o, const TrainConfig& c,
                const nn::Trainer& trainer, const nn::InputShape& in, ResultSink& sink,
                TrainMeasurement& m) {
  pipeline::PipelineOptions po = train_pipeline_options(o, c, trainer, in);
  m.data_decode = std::string(pipeline::to_string(po.decode));
  std::string why_not;
  if (po.decode == pipeline::DecodeMode::both && !po.gpu_share) {
    sink.progress("  --decode both: measuring the CPU and nvJPEG paths alone for the share");
    const auto share =
        pipeline::balanced_share(feed.dataset(), po, kShareCalibrationBatches, why_not);
    if (!share) {
      m.skipped_reason = why_not;
      return false;
    }
    po.gpu_share = share->gpu_share;
    m.data_gpu_share_source =
        "balanced: nvJPEG " + std::to_string(std::lround(share->gpu_images_per_s)) +
        " images/s, CPU " + std::to_string(std::lround(share->cpu_images_per_s)) +
        " images/s, each alone";
  } else if (po.gpu_share) {
    m.data_gpu_share_source = "asked";
  }
  m.data_gpu_share = po.gpu_share;
  if (!feed.open(po, why_not)) {
    m.skipped_reason = why_not;
    return false;
  }
  m.data_source = feed.source();
  const pipeline::DecoderInfo decoder = feed.pipeline()->decoder();
  m.data_nvjpeg_backend = decoder.backend;
  m.data_nvjpeg_memory =
      decoder.memory + (decoder.flags.empty() ? "" : " (flags " + decoder.flags + ")");
  return true;
}

// One step on the synthetic batch or the pipeline's next; `before` (fed runs) is recorded right
// before the step itself. False when Ctrl-C stopped the loading.
using StepFn = std::function<bool(const gpu::Event* before)>;

// At most `limit` steps queued on the GPU (0: no limit). after_step() records an event behind
// each step; before_step() waits for the one `limit` steps back. The events are blocking-sync:
// the host thread sleeps in that wait, where a default event (or a full driver queue, without
// a limit) spins it on a core that the input pipeline's workers need.
class StepThrottle {
 public:
  explicit StepThrottle(int limit) : limit_(limit > 0 ? static_cast<std::size_t>(limit) : 0) {}
  void before_step() {
    while (limit_ > 0 && pending_.size() >= limit_) {
      pending_.front().synchronize();
      pending_.pop_front();
    }
  }
  void after_step(cudaStream_t stream) {
    if (limit_ == 0) return;
    pending_.push_back(gpu::Event::create(cudaEventDisableTiming | cudaEventBlockingSync));
    pending_.back().record(stream);
  }

 private:
  std::size_t limit_;
  std::deque<gpu::Event> pending_;
};

// Warm-up. One host synchronisation after the first step for its loss (the sanity figure next
// to the last), one at the end so the timed steps start on an empty queue. False after Ctrl-C.
bool warm_up(const StepFn& step, nn::Trainer& trainer, int warmup, int max_in_flight,
             TrainMeasurement& m) {
  StepThrottle throttle(max_in_flight);
  for (int i = 0; i < warmup; ++i) {
    throttle.before_step();
    if (cancel_requested() || !step(nullptr)) {
      m.interrupted = true;
      return false;
    }
    throttle.after_step(trainer.stream());
    if (i == 0) m.first_loss = trainer.last_step().loss;
  }
  if (warmup > 0) (void)trainer.last_step();
  return true;
}

// Timed: event k is recorded before step k, event k+1 after it; step k's time is the time
// between them, host gaps included (a launch-bound step is a slow step). Fed by the pipeline,
// an event right before each step gives the step's own GPU time too.
void timed_steps(const StepFn& step, cudaStream_t stream, int steps, double max_s,
                 int max_in_flight, bool fed, const DeviceContext& ctx, TrainMeasurement& m) {
  const auto t0 = std::chrono::steady_clock::now();
  auto out_of_time = [&] {
    return max_s > 0 &&
           std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() >= max_s;
  };
  std::vector<gpu::Event> events, befores;
  events.reserve(static_cast<std::size_t>(steps) + 1);
  befores.reserve(static_cast<std::size_t>(steps));
  sys::TelemetrySampler sampler(ctx.nvml, std::chrono::milliseconds(20));
  sampler.start();
  StepThrottle throttle(max_in_flight);
  const double cpu0_ms = sys::thread_cpu_ms();
  events.push_back(gpu::Event::create());
  events.back().record(stream);
  for (int i = 0; i < steps && !out_of_time(); ++i) {
    throttle.before_step();
    if (cancel_requested()) {
      m.interrupted = true;
      break;
    }
    if (fed) befores.push_back(gpu::Event::create());
    if (!step(fed ? &befores.back() : nullptr)) {
      if (fed) befores.pop_back();
      m.interrupted = true;
      break;
    }
    events.push_back(gpu::Event::create());
    events.back().record(stream);
    throttle.after_step(stream);
  }
  events.back().synchronize();
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (wall_s > 0) m.launch_thread_cpu_pct = 100 * 1e-3 * (sys::thread_cpu_ms() - cpu0_ms) / wall_s;
  m.telemetry = sampler.stop();
  m.interrupted = cancel_requested();
  for (std::size_t k = 0; k + 1 < events.size(); ++k)
    m.step_ms.push_back(gpu::Event::elapsed_ms(events[k], events[k + 1]));
  for (std::size_t k = 0; k < befores.size() && k + 1 < events.size(); ++k)
    m.gpu_step_ms.push_back(gpu::Event::elapsed_ms(befores[k], events[k + 1]));
}

nn::TrainerOptions trainer_options(const TrainConfig& c, const TrainBenchOptions& o) {
  const auto model = parse_model(c.model);
  const auto precision = parse_precision(c.precision);
  if (!model || !precision)
    throw Error(ErrorKind::usage,
                "the training engine does not know " + c.model + " " + c.precision);
  nn::TrainerOptions to;
  to.model = *model;
  to.precision = *precision;
  to.batch = c.batch;
  to.input = nn::default_input(*model);
  to.seed = o.seed;
  to.cuda_graph = c.cuda_graph;
  return to;
}

// TrainBenchOptions::pick_feed: the model alone on the feed's buffers (its graph captured in
// the first steps, kept for the fed steps: same pointers), then the choice, written into `fed`.
// False after Ctrl-C.
bool pick_feed_from_model(LoaderFeed& feed, nn::Trainer& trainer, const nn::InputShape& in,
                          TrainBenchOptions& fed, ResultSink& sink, TrainMeasurement& m) {
  sink.progress("  timing the model alone first (" + std::to_string(kTrainModelAloneSteps) +
                " steps on random input) to pick what feeds it");
  feed.fill_random(trainer, in, static_cast<std::size_t>(m.config.batch), fed.seed + 1);
  for (int i = 0; i < kTrainMinGraphWarmup; ++i) {
    if (cancel_requested()) return false;
    feed.step_without_data(trainer);
  }
  std::vector<gpu::Event> events;
  events.push_back(gpu::Event::create());
  events.back().record(trainer.stream());
  for (int i = 0; i < kTrainModelAloneSteps; ++i) {
    feed.step_without_data(trainer);
    events.push_back(gpu::Event::create());
    events.back().record(trainer.stream());
  }
  events.back().synchronize();
  if (cancel_requested()) return false;
  std::vector<double> ms;
  for (std::size_t k = 0; k + 1 < events.size(); ++k)
    ms.push_back(gpu::Event::elapsed_ms(events[k], events[k + 1]));
  std::sort(ms.begin(), ms.end());
  const double median_ms = ms[ms.size() / 2];
  if (!(median_ms > 0)) return true;  // nothing to decide from: the options stay
  const double rate = m.config.batch * 1e3 / median_ms;
  m.model_alone_images_per_s = rate;
  const TrainFeedChoice choice = fed.pick_feed(rate);
  fed.data_decode = choice.decode;
  fed.data_workers = choice.workers;
  fed.data_gpu_share = choice.gpu_share;
  m.data_feed = choice.why;
  sink.progress("  the model alone: " + std::to_string(std::lround(rate)) + " images/s; fed by " +
                choice.why);
  return true;
}

// Adds the phase from `since` to now to m.phases and restarts the clock.
void end_phase(const char* name, std::chrono::steady_clock::time_point& since,
               TrainMeasurement& m) {
  const auto now = std::chrono::steady_clock::now();
  m.phases.push_back({name, std::chrono::duration<double>(now - since).count()});
  since = now;
}

void run_config(const TrainConfig& c, const TrainBenchOptions& o, const DeviceContext& ctx,
                ResultSink& sink, TrainMeasurement& m) {
  auto phase_start = std::chrono::steady_clock::now();
  const nn::TrainerOptions to = trainer_options(c, o);
  std::size_t total = 0;
  const std::optional<std::size_t> used_before = device_used_now(&total);
  nn::Trainer trainer(to);
  m.parameter_count = trainer.parameter_count();
  m.input_layout = layout_text(trainer.input_format());
  std::unique_ptr<LoaderFeed> feed;
  TrainBenchOptions fed = o;  // pick_feed may change the decode mode and workers
  if (o.data.empty()) {
    trainer.make_synthetic_batch(o.seed + 1);
  } else {
    feed = make_feed(o, c, trainer, to.input, m);
  }
  end_phase("build", phase_start, m);
  if (feed) {
    if (o.pick_feed) {
      if (!pick_feed_from_model(*feed, trainer, to.input, fed, sink, m)) {
        m.interrupted = true;  // Ctrl-C while the model ran alone
        return;
      }
      end_phase("model_alone", phase_start, m);
    }
    if (!start_feed(*feed, fed, c, trainer, to.input, sink, m)) return;  // skipped, with why
    end_phase("feed_start", phase_start, m);
  }
  sink.progress("  built: " + std::to_string(m.parameter_count) + " parameters, input " +
                m.input_layout + (feed ? " from " + m.data_source : std::string()) +
                "; warming up");
  const StepFn step = [&](const gpu::Event* before) {
    if (feed) return feed->step(trainer, before);
    trainer.train_step_synthetic();
    return true;
  };
  if (!warm_up(step, trainer, o.warmup, o.max_in_flight, m)) return;
  end_phase("warmup", phase_start, m);
  const std::size_t skipped_before = trainer.scaler_stats().skipped;
  std::optional<pipeline::PipelineStats> before_timed;
  if (feed) before_timed = feed->pipeline()->stats();
  if (o.on_timed_start) o.on_timed_start();
  timed_steps(step, trainer.stream(), o.steps, o.max_timed_s, o.max_in_flight, feed != nullptr, ctx,
              m);
  end_phase("timed", phase_start, m);
  sink.progress("  where the time went: " + phases_text(m.phases));
  if (feed) {
    const pipeline::PipelineStats st = feed->pipeline()->stats();
    m.bad_samples = st.loader.bad_samples;
    m.data_decode_failures = st.decode_failures;
    const std::size_t batches = st.gpu_batches - before_timed->gpu_batches;
    if (!m.data_nvjpeg_backend.empty() && batches > 0) {
      const double n = static_cast<double>(batches);
      m.data_decode_host_ms = (st.decode_host_ms - before_timed->decode_host_ms) / n;
      m.data_decode_gpu_ms = (st.decode_gpu_ms - before_timed->decode_gpu_ms) / n;
    }
  }
  m.final_loss = trainer.last_step().loss;
  if (to.precision == nn::Precision::fp16) {
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
