// bench/gpu/busy_steps.hpp: an input pipeline feeding stand-in GPU steps of a known length (one
// block spinning on the SM clock, gpu/busy.hpp): the share of the wall time the GPU waited for
// data. The loader's data-wait share (the CPU path) and its nvJPEG path beside a busy GPU both
// measure with it.
#pragma once
#include <cuda_runtime_api.h>

#include "bench/loader.hpp"
#include "pipeline/input_pipeline.hpp"

namespace gb::bench {

// Batches from `in` for `seconds` after `warmup` untimed ones, each followed on `compute` by a
// one-block kernel of `step_ms`; at most two steps in flight (the host takes batch k+1 while the
// GPU runs step k, as a training loop that reads its loss every step or two does). The share is
// 1 - sum(step) / wall; `workers` is left for the caller. The pipeline is drained at the end.
DataWaitMeasurement feed_busy_steps(pipeline::InputPipeline& in, cudaStream_t compute,
                                    double step_ms, double seconds, int warmup);

}  // namespace gb::bench
