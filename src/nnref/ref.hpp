// nnref/ref.hpp: the CPU reference layers of the training engine, in one include.
// Plain C++ in FP32 storage with double accumulation: what the GPU engine's tests compare every
// cuDNN / cuBLASLt layer against, and what the CPU tests check by finite differences.
// Layout conventions: NCHW, row-major; 2-D tensors are [N, features] with h = w = 1.
#pragma once
#include "nnref/batchnorm.hpp"
#include "nnref/conv.hpp"
#include "nnref/elementwise.hpp"
#include "nnref/grad_scaler.hpp"
#include "nnref/linear.hpp"
#include "nnref/loss.hpp"
#include "nnref/pool.hpp"
#include "nnref/sgd.hpp"
#include "nnref/tensor.hpp"
