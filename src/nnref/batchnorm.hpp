// nnref/batchnorm.hpp: 2-D batch normalisation over (N, H, W) per channel, PyTorch semantics.
// Training: normalise with the batch mean and the biased batch variance; update the running
// statistics as running = (1 - momentum) * running + momentum * batch, where running_var takes
// the UNBIASED batch variance (times M / (M - 1), M = N*H*W). Inference: running statistics.
// saved.inv_std is 1 / sqrt(biased_var + eps), what cuDNN's resultSaveInvVariance holds.
#pragma once
#include <vector>

#include "nnref/tensor.hpp"

namespace gb::nnref {

struct BatchNormSaved {
  std::vector<float> mean, inv_std;  // per channel, batch statistics
};

Tensor batchnorm_forward_train(const Tensor& x, const std::vector<float>& gamma,
                               const std::vector<float>& beta, std::vector<float>& running_mean,
                               std::vector<float>& running_var, float momentum, float eps,
                               BatchNormSaved& saved);
Tensor batchnorm_forward_inference(const Tensor& x, const std::vector<float>& gamma,
                                   const std::vector<float>& beta,
                                   const std::vector<float>& running_mean,
                                   const std::vector<float>& running_var, float eps);
// Backward of the training-mode forward (batch statistics are functions of x).
// dx takes x's shape; dgamma and dbeta are resized to C.
void batchnorm_backward(const Tensor& x, const Tensor& dy, const std::vector<float>& gamma,
                        const BatchNormSaved& saved, Tensor& dx, std::vector<float>& dgamma,
                        std::vector<float>& dbeta);

}  // namespace gb::nnref
