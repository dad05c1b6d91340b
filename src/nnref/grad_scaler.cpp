// nnref/grad_scaler.cpp: the loss scaler's state machine.
#include "nnref/grad_scaler.hpp"

#include <cmath>
#include <string>

#include "core/error.hpp"

namespace gb::nnref {

std::pair<float, int> update_scale(float scale, int growth_tracker, bool found_inf,
                                   double growth_factor, double backoff_factor,
                                   int growth_interval) {
  if (found_inf) return {static_cast<float>(scale * backoff_factor), 0};
  const int successful = growth_tracker + 1;
  if (successful == growth_interval) {
    const float grown = static_cast<float>(scale * growth_factor);
    return {std::isfinite(grown) ? grown : scale, 0};  // never grow past FP32's range to inf
  }
  return {scale, successful};
}

GradScaler::GradScaler(const GradScalerOptions& options)
    : options_(options), scale_(options.init_scale) {
  auto fail = [](const std::string& what) {
    throw Error(ErrorKind::runtime, "nnref GradScaler: " + what);
  };
  if (!(options.growth_factor > 1.0)) fail("the growth factor must be > 1.0");
  if (!(options.backoff_factor > 0.0 && options.backoff_factor < 1.0)) {
    fail("the backoff factor must be in (0, 1)");
  }
  if (options.growth_interval < 1) fail("the growth interval must be >= 1");
  if (!(std::isfinite(options.init_scale) && options.init_scale > 0.0f)) {
    fail("the initial scale must be finite and > 0");
  }
}

void GradScaler::begin_unscale() {
  if (unscaled_) {
    throw Error(ErrorKind::runtime,
                "nnref GradScaler: unscale_() has already been called on this optimizer since "
                "the last update()");
  }
  unscaled_ = true;
  found_inf_ = false;
}

bool GradScaler::unscale(std::vector<float>& grads) {
  return unscale(std::vector<std::vector<float>*>{&grads});
}

bool GradScaler::unscale(const std::vector<std::vector<float>*>& grads) {
  if (!options_.enabled) return false;
  begin_unscale();
  const float inv_scale = static_cast<float>(1.0 / static_cast<double>(scale_));
  bool found = false;
  for (std::vector<float>* g : grads) {
    for (float& v : *g) {
      if (!std::isfinite(v)) found = true;
      if (inv_scale != 1.0f) v *= inv_scale;
    }
  }
  found_inf_ = found;
  return found;
}

void GradScaler::mark_unscaled(bool found_inf) {
  if (!options_.enabled) return;
  begin_unscale();
  found_inf_ = found_inf;
}

void GradScaler::update() {
  if (!options_.enabled) return;
  if (!unscaled_) {
    throw Error(ErrorKind::runtime,
                "nnref GradScaler: no inf checks were recorded prior to update()");
  }
  const auto [scale, tracker] =
      update_scale(scale_, growth_tracker_, found_inf_, options_.growth_factor,
                   options_.backoff_factor, options_.growth_interval);
  scale_ = scale;
  growth_tracker_ = tracker;
  unscaled_ = false;
  found_inf_ = false;
}

}  // namespace gb::nnref
