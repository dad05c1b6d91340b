// nnref/sgd.hpp: SGD with momentum and weight decay, PyTorch semantics (dampening 0, no
// Nesterov), in FP32 in PyTorch's operation order:
//   g = grad + weight_decay * w;  buf = momentum * buf + g;  w = w - lr * buf
// buf starts at zero, so the first step has buf = g (PyTorch clones g into the new buffer).
// An empty momentum_buf is created zero-filled with w's size.
#pragma once
#include <vector>

namespace gb::nnref {

void sgd_step(std::vector<float>& w, const std::vector<float>& grad,
              std::vector<float>& momentum_buf, float lr, float momentum, float weight_decay);

}  // namespace gb::nnref
