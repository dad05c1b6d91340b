// nnref/sgd.cpp: one optimizer step over a flat parameter vector.
#include "nnref/sgd.hpp"

#include "nnref/tensor.hpp"

namespace gb::nnref {

void sgd_step(std::vector<float>& w, const std::vector<float>& grad,
              std::vector<float>& momentum_buf, float lr, float momentum, float weight_decay) {
  require(grad.size() == w.size(), "sgd_step", "grad size != weight size");
  if (momentum_buf.empty()) momentum_buf.assign(w.size(), 0.0f);
  require(momentum_buf.size() == w.size(), "sgd_step", "momentum buffer size != weight size");
  for (std::size_t i = 0; i < w.size(); ++i) {
    const float g = grad[i] + weight_decay * w[i];
    momentum_buf[i] = momentum * momentum_buf[i] + g;
    w[i] = w[i] - lr * momentum_buf[i];
  }
}

}  // namespace gb::nnref
