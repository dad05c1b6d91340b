// nn/scaler.hpp: dynamic loss scaling with PyTorch GradScaler semantics, state kept on the GPU.
// One step: the loss kernel multiplies dlogits by `scale`; after backward,
// check_nonfinite() raises `found_inf` if any gradient is inf/NaN; the fused SGD kernel (sgd.hpp)
// unscales by 1/scale and does nothing when found_inf is set; scaler_update() then applies
// GradScaler's rule and clears found_inf:
//   found_inf: scale *= backoff (0.5), growth_tracker = 0, the step is skipped
//   else:      growth_tracker += 1; when it reaches interval (2000): scale *= growth (2) if that
//              stays finite, growth_tracker = 0
// Nothing is read back per step: the host sees the state only when it asks (last_step()).
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "nn/tensor.hpp"

namespace gb::nn {

struct ScalerConfig {
  float init_scale = 65536.f;  // 2^16
  float growth = 2.f;
  float backoff = 0.5f;
  int interval = 2000;
};

// Device-resident; plain data so the host can copy it back.
struct ScalerState {
  float scale = 65536.f;
  std::int32_t growth_tracker = 0;
  std::int32_t found_inf = 0;   // set by check_nonfinite, consumed and cleared by scaler_update
  std::int32_t steps = 0;
  std::int32_t skipped = 0;
};

// What one training step leaves on the device for last_step().
struct StepRecord {
  float loss = 0;       // mean cross-entropy, unscaled
  float scale = 1;      // loss scale used by the step
  std::int32_t skipped = 0;
};

// Raises state->found_inf if any gradient is inf or NaN: n_lp values of type lp_dtype at
// grads_lp and n32 FP32 values at grads32 (the parameter store's two gradient sections).
// Napkin math: ResNet-50 FP16 reads 51 MB + 0.2 MB: ~15 us.
void check_nonfinite(const void* grads_lp, std::size_t n_lp, ElementType lp_dtype,
                     const float* grads32, std::size_t n32, ScalerState* state,
                     cudaStream_t stream);

// One GradScaler update (single thread); also writes record->skipped (record may be null).
void scaler_update(ScalerState* state, const ScalerConfig& config, StepRecord* record,
                   cudaStream_t stream);

}  // namespace gb::nn
