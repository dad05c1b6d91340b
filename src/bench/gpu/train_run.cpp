// bench/gpu/train_run.cpp: one training-throughput configuration on the GPU (see
// bench/train.hpp): build the Trainer, make its synthetic batch, warm up (the CUDA graph is
// captured here), then time `steps` steps with an event between consecutive steps and read
// the events once at the end. The engine's errors (out of memory at this batch: how much was
// needed and a batch that fits) land in TrainMeasurement::error; they never end the run.
//
// Without the engine in this build (GPUBASE_WITH_NN undefined) this file is empty and
// run_train_bench() reports every configuration skipped with the reason.
#include <cuda_runtime_api.h>

#include <chrono>
#include <string>
#include <vector>

#include "bench/train.hpp"
#include "core/cancel.hpp"
#include "core/error.hpp"
#include "gpu/check.hpp"
#include "gpu/cuda_raii.hpp"
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

void run_config(const TrainConfig& c, const TrainBenchOptions& o, const ProbeContext& ctx,
                ResultSink& sink, TrainMeasurement& m) {
  const auto model = nn::parse_model(c.model);
  const auto precision = nn::parse_precision(c.precision);
  if (!model || !precision)
    throw Error(ErrorKind::usage, "the training engine does not know " + c.model + " " +
                                      c.precision);
  GB_CHECK_CUDA(cudaSetDevice(o.device));
  std::size_t total = 0;
  const std::optional<std::size_t> used_before = device_used_now(&total);

  nn::TrainerOptions to;
  to.model = *model;
  to.precision = *precision;
  to.batch = c.batch;
  to.input = nn::default_input(*model);
  to.seed = o.seed;
  to.cuda_graph = c.cuda_graph;
  to.device = o.device;
  nn::Trainer trainer(to);
  m.parameter_count = trainer.parameter_count();
  m.input_layout = layout_text(trainer.input_format());
  trainer.make_synthetic_batch(o.seed + 1);
  sink.progress("  built: " + std::to_string(m.parameter_count) + " parameters, input " +
                m.input_layout + "; warming up");

  // Warm-up. One host synchronisation after the first step for its loss (the sanity figure
  // next to the last), one at the end so the timed steps start on an empty queue.
  for (int i = 0; i < o.warmup; ++i) {
    if (cancel_requested()) {
      m.interrupted = true;
      return;
    }
    trainer.train_step_synthetic();
    if (i == 0) m.first_loss = trainer.last_step().loss;
  }
  if (o.warmup > 0) (void)trainer.last_step();
  const std::size_t skipped_before = trainer.scaler_stats().skipped;

  // Timed: event k is recorded before step k, event k+1 after it; step k's time is the time
  // between them, host gaps included (a launch-bound step is a slow step).
  const cudaStream_t stream = trainer.stream();
  std::vector<gpu::Event> events;
  events.reserve(static_cast<std::size_t>(o.steps) + 1);
  sys::TelemetrySampler sampler(ctx.nvml, std::chrono::milliseconds(20));
  sampler.start();
  events.push_back(gpu::Event::create());
  events.back().record(stream);
  for (int i = 0; i < o.steps; ++i) {
    if (cancel_requested()) {
      m.interrupted = true;
      break;
    }
    trainer.train_step_synthetic();
    events.push_back(gpu::Event::create());
    events.back().record(stream);
  }
  events.back().synchronize();
  m.telemetry = sampler.stop();
  for (std::size_t k = 0; k + 1 < events.size(); ++k)
    m.step_ms.push_back(gpu::Event::elapsed_ms(events[k], events[k + 1]));

  const nn::StepResult last = trainer.last_step();
  m.final_loss = last.loss;
  if (*precision == nn::Precision::fp16) {
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
                               const ProbeContext& ctx, ResultSink& sink) {
  TrainMeasurement m;
  m.config = c;
  m.warmup = o.warmup;
  m.steps_asked = o.steps;
  m.device_name = ctx.device.name;
  try {
    run_config(c, o, ctx, sink, m);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::interrupted) {
      m.interrupted = true;
    } else {
      m.error = e.what();
    }
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
