// nn/loss.hpp: softmax cross-entropy in one kernel (FP32 math whatever the logits' type), and
// top-1 counting for evaluation.
//   loss   = mean_i ( log sum_j exp(x_ij) - x_i,label_i )           -> record->loss
//   dlogit = (softmax(x_i) - onehot(label_i)) / N * scale          (scale = loss scale, FP16)
// One block of 1024 threads, a warp per row (rows strided by 32), the batch mean reduced in
// shared memory: no atomics, no memset, deterministic, graph-capturable.
// Napkin math: 256 x 1000 logits read 3 times, dlogits written once: ~4 MB, a few us.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "nn/scaler.hpp"
#include "nn/tensor.hpp"

namespace gb::nn {

// logits / dlogits: row-major [rows, classes] of type t. scale may be null (1). Writes
// record->loss and record->scale.
void softmax_cross_entropy(const void* logits, const std::int32_t* labels, void* dlogits, int rows,
                           int classes, ElementType t, const float* scale, StepRecord* record,
                           cudaStream_t stream);

// *correct = number of rows i < rows whose first arg-max equals labels[i].
void count_correct(const void* logits, const std::int32_t* labels, int rows, int classes,
                   ElementType t, std::uint32_t* correct, cudaStream_t stream);

}  // namespace gb::nn
