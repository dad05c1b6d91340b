// bench/gpu/infer_run.cpp: the GPU half of the inference suite (bench/infer.hpp): one
// precision's forward passes, timed with CUDA events between consecutive passes.
#include <cuda_runtime_api.h>

#include <chrono>
#include <vector>

#include "bench/infer.hpp"
#include "core/cancel.hpp"
#include "core/error.hpp"
#include "core/vocabulary.hpp"
#include "gpu/check.hpp"
#include "gpu/cuda_raii.hpp"

#ifdef GPUBASE_WITH_NN
#include "nn/trainer.hpp"

namespace gb::bench {

InferMeasurement measure_infer(const std::string& precision, const InferBenchOptions& o) {
  InferMeasurement m{o.model, precision, o.batch};
  try {
    const auto model = parse_model(o.model);
    const auto prec = parse_precision(precision);
    if (!model || !prec)
      throw Error(ErrorKind::usage, "the engine does not know " + o.model + " " + precision);
    nn::TrainerOptions to;
    to.model = *model;
    to.precision = *prec;
    to.batch = o.batch;
    to.input = nn::default_input(*model);
    to.cuda_graph = true;
    to.forward_only = true;  // no backward algorithm search: most of a trainer's setup
    nn::Trainer trainer(to);
    trainer.make_synthetic_batch(1);
    for (int i = 0; i < o.warmup; ++i) {
      if (cancel_requested()) {
        m.interrupted = true;
        return m;
      }
      trainer.infer_synthetic();
    }
    GB_CHECK_CUDA(cudaStreamSynchronize(trainer.stream()));
    std::vector<gpu::Event> events;
    events.reserve(static_cast<std::size_t>(o.iters) + 1);
    events.push_back(gpu::Event::create());
    events.back().record(trainer.stream());
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < o.iters; ++i) {
      if (cancel_requested()) {
        m.interrupted = true;
        break;
      }
      if (o.max_timed_s > 0 &&
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() >=
              o.max_timed_s)
        break;
      trainer.infer_synthetic();
      events.push_back(gpu::Event::create());
      events.back().record(trainer.stream());
    }
    events.back().synchronize();
    for (std::size_t k = 0; k + 1 < events.size(); ++k)
      m.pass_ms.push_back(gpu::Event::elapsed_ms(events[k], events[k + 1]));
  } catch (const Cancelled&) {
    throw;
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::usage) throw;
    m.error = e.what();
  }
  return m;
}

}  // namespace gb::bench
#endif
