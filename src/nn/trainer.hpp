// nn/trainer.hpp: the training engine's public face. A Trainer builds one model (ResNet-50 v1.5,
// MobileNetV2, or a small ResNet for 28x28 inputs) on cuDNN + cuBLASLt in one precision and runs
// training steps on its own stream: forward, softmax cross-entropy, backward, fused SGD with FP32
// master weights (and, for FP16, dynamic loss scaling with the inf flag kept on the GPU). It runs
// on the CUDA device current when it is built; the suites make theirs current with
// bench::DeviceScope.
//
// This header is the contract between the engine (src/nn) and its users (the `train` and `amp`
// suites in src/bench, the CLI). Nothing here needs cuDNN or cuBLASLt headers.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/vocabulary.hpp"

namespace gb::nn {

// The models and precisions, their spellings and parsers: core/vocabulary.hpp (one type for the
// CLI, the suites and the engine).
using gb::Model;
using gb::Precision;

// Input geometry of a model: resnet50 / mobilenet_v2 3x224x224 and 1000 classes; small_resnet
// 1x28x28 and 10 classes (Fashion-MNIST).
struct InputShape {
  int channels = 3, height = 224, width = 224, classes = 1000;
};
InputShape default_input(Model m);

struct TrainerOptions {
  Model model = Model::resnet50;
  Precision precision = Precision::fp32;
  int batch = 256;
  InputShape input = default_input(Model::resnet50);
  std::uint64_t seed = 0;          // weight initialisation (same seed, same initial weights)
  float learning_rate = 0.1f;      // SGD, PyTorch semantics
  float momentum = 0.9f;
  float weight_decay = 1e-4f;
  bool cuda_graph = false;         // capture the whole step once, then replay it
  // Inference only (evaluate, infer_synthetic): convolution algorithms are searched for the
  // forward pass alone, a fraction of the setup time; train_step is refused.
  bool forward_only = false;
};

// A batch already on the device: images in the layout/dtype input_format() asks for, labels as
// int32 class indices. The pointers must stay valid until the step that reads them has run
// (synchronize the stream, or record an event after step()).
struct DeviceBatch {
  const void* images = nullptr;
  const std::int32_t* labels = nullptr;
};

struct InputFormat {
  bool nhwc = false;               // else NCHW
  ElementType dtype = ElementType::f32;  // f32, f16 or bf16
};

struct StepResult {
  float loss = 0;                  // mean cross-entropy of the batch (unscaled)
  bool skipped = false;            // FP16: inf/NaN gradients, the update was skipped
  float loss_scale = 1;            // FP16: the scale used for this step; 1 otherwise
};

class Trainer {
 public:
  // Builds the model, allocates everything (weights, activations, workspaces) and picks the
  // convolution algorithms once per shape. Throws gb::Error: usage for bad options (batch < 1,
  // an input shape the model cannot take); runtime for out of memory, saying how many bytes were
  // needed and suggesting a batch size that fits.
  explicit Trainer(const TrainerOptions& options);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  const TrainerOptions& options() const;
  InputFormat input_format() const;
  cudaStream_t stream() const;

  // Fills a device-resident batch with random images (normal, mean 0, std 1) and random labels,
  // made once; train_step_synthetic() then reuses it (throughput mode).
  void make_synthetic_batch(std::uint64_t seed = 1);

  // Enqueues one training step on stream() without any host synchronisation. With cuda_graph the
  // first call(s) capture the step and later calls replay it (the batch pointers must then be the
  // same every step: use the synthetic batch or a fixed staging buffer).
  void train_step(const DeviceBatch& batch);
  void train_step_synthetic();

  // Waits for the last enqueued step and returns its loss (and FP16 scaler state).
  StepResult last_step();

  // Forward only in inference mode (batch norm running statistics); returns the number of
  // correct top-1 predictions among the first `count` samples (synchronises). count <= batch;
  // the images must still hold a whole batch (the forward pass reads all of it).
  std::size_t evaluate(const DeviceBatch& batch, int count);

  // Inference throughput mode: one forward pass in inference mode (batch norm running
  // statistics, no loss, no backward) over the synthetic batch, enqueued on stream() without
  // host synchronisation. With cuda_graph the first call runs eagerly, the second is captured
  // and later calls replay it (a graph of its own, beside the training step's).
  void infer_synthetic();

  void set_learning_rate(float lr);
  std::size_t parameter_count() const;
  std::size_t parameter_bytes() const;
  // The largest device memory the trainer itself allocated (weights, activations, workspaces).
  std::size_t device_bytes() const;

  // The last step's parameter gradients in FP32, unscaled (FP16: divided by the loss scale),
  // every parameter tensor one after another (synchronises; copies to the host). The amp study
  // measures from them how many gradient values would underflow FP16.
  std::vector<float> gradients();

  // FP16 loss-scaler statistics since construction (zeros in other precisions).
  struct ScalerStats {
    std::size_t steps = 0, skipped = 0;
    float scale = 1;
  };
  ScalerStats scaler_stats();

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace gb::nn
