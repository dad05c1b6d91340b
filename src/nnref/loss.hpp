// nnref/loss.hpp: the classification head's loss and accuracy.
#pragma once
#include <cstddef>
#include <vector>

#include "nnref/tensor.hpp"

namespace gb::nnref {

// Mean softmax cross-entropy over the batch: logits [N, classes] (a 4-D tensor is read as
// [N, c*h*w]), labels in [0, classes). Stable: log-sum-exp after subtracting each row's max,
// in double. When dlogits is given it receives (softmax - onehot) / N, shaped like logits.
float softmax_cross_entropy(const Tensor& logits, const std::vector<int>& labels, Tensor* dlogits);

// Top-1 hits; a row's prediction is its first maximum (ties go to the lowest class index).
std::size_t count_correct(const Tensor& logits, const std::vector<int>& labels);

}  // namespace gb::nnref
