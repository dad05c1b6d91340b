// nn/network.hpp: a model as a list of layers over values (activation tensors), built once, run
// forward in order and backward in reverse. No autograd tape: the graph is fixed at build time,
// so every buffer is planned up front and the step allocates nothing (CUDA-graph capturable).
//
// Memory: each value has an activation buffer and (unless it is the network input) a gradient
// buffer, all carved from one arena (256-byte aligned). Parameters live in the ParamStore;
// layer-owned state (batch-norm statistics, cuDNN reserve space) is allocated in setup() and
// counted in Context::extra_bytes. One workspace, the largest any layer asked for, is shared by
// all layers (one stream: calls never overlap).
//
// Gradients: a value consumed by several layers (a residual input) gets its gradient from each
// of them. Backward runs in reverse order; the first consumer to run writes the gradient
// (beta = 0) and the later ones add to it (beta = 1); Layer::accumulate says which is which, so
// no gradient buffer is ever zeroed.
#pragma once
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/vocabulary.hpp"
#include "nn/kernels.hpp"
#include "nn/params.hpp"
#include "nn/tensor.hpp"

struct cudnnContext;

namespace gb::nn {

struct Value {
  std::string name;
  Shape shape;
  ElementType dtype = ElementType::f32;
  bool nhwc = false;
  bool needs_grad = true;
  void* data = nullptr;
  void* grad = nullptr;
  std::size_t data_offset = 0, grad_offset = 0;  // in the arena
  TensorRef ref() const { return TensorRef{data, shape, dtype, nhwc}; }
  TensorRef grad_ref() const { return TensorRef{grad, shape, dtype, nhwc}; }
  std::size_t bytes() const { return shape.elements() * element_bytes(dtype); }
};

class ConvEnginePlan;  // conv_engines.hpp

// Chosen convolution algorithm (cuDNN enum value; conv.cpp's negative codes for its own kernel
// and for backend-API engine plans) and its workspace, per problem key.
struct AlgoChoice {
  int algo = 0;
  std::size_t workspace = 0;
};

struct Context {
  Precision precision = Precision::fp32;
  cudnnContext* cudnn = nullptr;  // cudnnHandle_t
  cublasLtHandle_t lt = nullptr;
  cudaStream_t stream = nullptr;
  ParamStore* params = nullptr;
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
  // During setup: the workspace every step will have at least (the trainer allocates the larger
  // of this and what the layers ask for). Algorithms are timed with this much, because some
  // (cuDNN's backward-filter algorithm 1 on 1x1 convolutions) run 10x faster given more than
  // the minimum they report.
  std::size_t step_workspace_bytes = 0;
  bool find_algorithms = true;    // cudnnFind*AlgorithmEx (measured) vs cudnnGet*_v7 (heuristic)
  bool forward_only = false;      // inference only: layers set up their forward pass alone
  bool allow_bn_fusion = true;    // cudnnBatchNormalization*Ex with fused add + ReLU where it runs
  std::size_t extra_bytes = 0;    // device memory layers own (statistics, reserve space)
  std::map<std::string, AlgoChoice> algo_cache;
  // The backend-API execution plans that won (conv.cpp), under the same keys as algo_cache:
  // layers with the same problem share one.
  std::map<std::string, std::shared_ptr<const ConvEnginePlan>> conv_plans;
};

class Layer {
 public:
  virtual ~Layer() = default;
  virtual std::string describe() const = 0;
  // Once, after memory is bound: descriptors, algorithm choice, layer-owned buffers. During
  // setup ctx.workspace is a scratch buffer for algorithm search. Returns the workspace bytes
  // forward()/backward() need.
  virtual std::size_t setup(Context&) { return 0; }
  virtual void forward(Context& ctx, bool training) = 0;
  virtual void backward(Context& ctx) = 0;
  // Batch norm: device pointers to its running mean and variance (C floats each).
  virtual std::pair<float*, float*> running_stats() const { return {nullptr, nullptr}; }

  std::vector<Value*> inputs;
  std::vector<bool> accumulate;  // per input: add into its gradient instead of writing it
  Value* output = nullptr;
};

struct ConvSpec {
  int out_channels = 0, kernel_h = 1, kernel_w = 1;
  int stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dil_h = 1, dil_w = 1, groups = 1;
  static ConvSpec square(int out, int kernel, int stride, int pad, int groups = 1) {
    return ConvSpec{out, kernel, kernel, stride, stride, pad, pad, 1, 1, groups};
  }
};

enum class PoolKind { max, avg };  // avg counts padding (PyTorch's count_include_pad=True)
struct PoolSpec {
  PoolKind kind = PoolKind::max;
  int kernel_h = 2, kernel_w = 2, stride_h = 2, stride_w = 2, pad_h = 0, pad_w = 0;
};

class Network {
 public:
  Network(ElementType dtype, bool nhwc, int batch);
  ~Network();
  Network(const Network&) = delete;
  Network& operator=(const Network&) = delete;

  // Builders (shapes only, no GPU work). Names are torchvision-style parameter prefixes.
  // The network input; needs_grad (tests of a single layer) gives it a gradient buffer too.
  Value* input(int channels, int height, int width, bool needs_grad = false);
  Value* conv(Value* x, const std::string& name, const ConvSpec& spec);  // no bias
  // y = act(BN(x) + residual); residual may be null. Parameters name.weight (gamma 1),
  // name.bias (beta 0); running mean 0 / variance 1, momentum 0.1, eps 1e-5.
  Value* batchnorm(Value* x, const std::string& name, Act act = Act::none,
                   Value* residual = nullptr);
  Value* activation(Value* x, Act act);
  Value* add(Value* a, Value* b, Act act = Act::none);
  Value* pool(Value* x, const PoolSpec& spec);
  Value* global_avgpool(Value* x);
  // y = x W^T + b over x flattened to [N, C*H*W] (x must be [N, C, 1, 1] in NHWC).
  Value* linear(Value* x, const std::string& name, int out_features, Init weight, Init bias);
  void set_output(Value* logits) { output_ = logits; }

  // Decides gradient write/accumulate per consumer and lays out the arena; returns its bytes.
  std::size_t plan();
  // cudaMalloc of the arena and the parameters (may throw cudaErrorMemoryAllocation as
  // gb::Error; the trainer turns that into an out-of-memory message). Zeroes the arena.
  void allocate();
  // Layer setup (ctx.workspace: scratch for algorithm search); returns the workspace needed.
  std::size_t setup(Context& ctx);

  void forward(Context& ctx, bool training);
  void backward(Context& ctx);
  // Whether GPUBASE_NN_PROFILE asked for a per-layer profile that has not been printed yet: it
  // needs eager steps, so the trainer holds off capturing its CUDA graph until then.
  bool profiling() const;

  int batch() const { return batch_; }
  ElementType dtype() const { return dtype_; }
  bool nhwc() const { return nhwc_; }
  Value* input_value() const { return input_; }
  Value* output() const { return output_; }
  ParamStore& params() { return params_; }
  const ParamStore& params() const { return params_; }
  const std::vector<std::unique_ptr<Layer>>& layers() const { return layers_; }
  const std::vector<std::unique_ptr<Value>>& values() const { return values_; }
  std::size_t arena_bytes() const { return arena_bytes_; }

 private:
  Value* new_value(std::string name, Shape shape);
  Layer* push(std::unique_ptr<Layer> layer, std::vector<Value*> inputs, Value* output);

  ElementType dtype_;
  bool nhwc_;
  int batch_;
  ParamStore params_;
  std::vector<std::unique_ptr<Value>> values_;
  std::vector<std::unique_ptr<Layer>> layers_;
  Value* input_ = nullptr;
  Value* output_ = nullptr;
  std::size_t arena_bytes_ = 0;
  gpu::DeviceBuffer arena_;
  // GPUBASE_NN_PROFILE=N: GPU time per layer over N eager steps (network.cpp), per network.
  std::shared_ptr<class LayerProfile> profile_;
};

// Layer factories (one file each: conv.cpp, batchnorm.cpp, pool.cpp, elementwise.cpp,
// linear.cpp). Parameters are registered by Network; the ids are passed in.
std::unique_ptr<Layer> make_conv(const ConvSpec& spec, int weight_id);
std::unique_ptr<Layer> make_batchnorm(int gamma_id, int beta_id, Act act, bool has_residual);
std::unique_ptr<Layer> make_activation(Act act);
std::unique_ptr<Layer> make_add(Act act);
std::unique_ptr<Layer> make_pool(const PoolSpec& spec);
std::unique_ptr<Layer> make_global_avgpool();
std::unique_ptr<Layer> make_linear(int weight_id, int bias_id);

// Output size of a convolution / pooling window along one axis.
inline int window_out(int in, int kernel, int stride, int pad, int dilation = 1) {
  return (in + 2 * pad - dilation * (kernel - 1) - 1) / stride + 1;
}

}  // namespace gb::nn
