// gpu/busy.hpp: a GPU "step" of a known duration without a model: one kernel that spins on the
// SM clock for a calibrated number of cycles. The loader benchmark uses it to stand in for a
// training step until the train suite exists: the share of a step the GPU waits for data is
// then measurable against a step of exactly known length.
#pragma once
#include <cuda_runtime_api.h>

namespace gb::gpu {

// SM clock cycles per microsecond, measured by timing a spin of known cycles with events (the
// clock under load, not the nominal one).
double calibrate_busy_cycles_per_us(cudaStream_t stream);

// Enqueues a kernel that keeps the GPU busy for about `microseconds` (one block spinning).
void busy_for(cudaStream_t stream, double microseconds, double cycles_per_us);

}  // namespace gb::gpu
