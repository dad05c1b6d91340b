// gpu/timing.cpp: see timing.hpp.
#include "gpu/timing.hpp"

namespace gb::gpu {

std::vector<double> time_on_stream(cudaStream_t stream, const TimingPlan& plan,
                                   const std::function<void(cudaStream_t)>& fn) {
  for (int i = 0; i < plan.warmup; ++i) fn(stream);
  GB_CHECK_CUDA(cudaStreamSynchronize(stream));

  const Event start = Event::create();
  const Event stop = Event::create();
  std::vector<double> samples;
  double total_ms = 0;
  while (static_cast<int>(samples.size()) < plan.repetitions ||
         (total_ms < plan.min_total_ms && static_cast<int>(samples.size()) < plan.max_repetitions)) {
    start.record(stream);
    fn(stream);
    stop.record(stream);
    stop.synchronize();
    const double ms = Event::elapsed_ms(start, stop);
    samples.push_back(ms);
    total_ms += ms;
  }
  return samples;
}

}  // namespace gb::gpu
