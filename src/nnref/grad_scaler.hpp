// nnref/grad_scaler.hpp: the FP16 dynamic loss scaler's state machine, as torch.cuda.amp.GradScaler
// documents and ATen's _amp_update_scale_ implements it. The GPU engine keeps the same state on the
// device; its update kernel must mirror update_scale() below, bit for bit.
//
// One training step:  loss' = scale_loss(loss); backward(loss'); found = unscale(grads);
//                     if (!step_should_skip()) optimizer step; update();
#pragma once
#include <utility>
#include <vector>

namespace gb::nnref {

struct GradScalerOptions {
  float init_scale = 65536.0f;  // 2^16
  double growth_factor = 2.0;   // must be > 1
  double backoff_factor = 0.5;  // must be in (0, 1)
  int growth_interval = 2000;   // clean steps in a row before the scale grows; must be >= 1
  bool enabled = true;          // disabled: scale 1, unscale/update do nothing, no step skipped
};

// ATen's _amp_update_scale_ on one (scale, growth_tracker) pair; returns the new pair.
//   found_inf: scale = float(scale * backoff_factor), tracker = 0.
//   otherwise: tracker + 1; when that reaches growth_interval the tracker returns to 0 and the
//   scale becomes float(scale * growth_factor), but ONLY if that is finite (else it stays put).
// Products are formed in double and rounded to float once, as ATen does.
std::pair<float, int> update_scale(float scale, int growth_tracker, bool found_inf,
                                   double growth_factor, double backoff_factor,
                                   int growth_interval);

class GradScaler {
 public:
  GradScaler() : GradScaler(GradScalerOptions{}) {}
  explicit GradScaler(const GradScalerOptions& options);  // throws gb::Error on bad factors

  bool enabled() const { return options_.enabled; }
  const GradScalerOptions& options() const { return options_; }
  float scale() const { return options_.enabled ? scale_ : 1.0f; }  // PyTorch's get_scale()
  int growth_tracker() const { return growth_tracker_; }
  float scale_loss(float loss) const { return options_.enabled ? loss * scale_ : loss; }

  // Multiplies every gradient by float(1 / double(scale)) in place (all of them, even when a
  // non-finite one is seen, as ATen does) and returns whether any value was inf or NaN.
  // A second unscale (or mark_unscaled) before update() throws gb::Error, like PyTorch's
  // "unscale_() has already been called on this optimizer since the last update()".
  bool unscale(std::vector<float>& grads);
  // The same for all gradients of one optimizer at once (one inf check for the whole step).
  bool unscale(const std::vector<std::vector<float>*>& grads);
  // For an engine that unscales and checks on the GPU: records this step's inf flag in place of
  // unscale(), with the same once-per-step rule.
  void mark_unscaled(bool found_inf);

  bool unscaled_this_step() const { return unscaled_; }
  bool step_should_skip() const { return options_.enabled && found_inf_; }  // inf/NaN this step

  // Applies update_scale() with this step's inf flag and clears the per-step state. Throws
  // gb::Error when no unscale/mark_unscaled happened since the last update (PyTorch: "No inf
  // checks were recorded prior to update."). Does nothing when disabled.
  void update();

 private:
  void begin_unscale();

  GradScalerOptions options_;
  float scale_;
  int growth_tracker_ = 0;
  bool unscaled_ = false;
  bool found_inf_ = false;
};

}  // namespace gb::nnref
