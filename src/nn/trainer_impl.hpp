// nn/trainer_impl.hpp: Trainer's implementation, visible to the engine's GPU tests (which build
// an Impl directly to reach the network, its parameters and the step's pieces). Users include
// trainer.hpp only.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "gpu/cuda_raii.hpp"
#include "nn/cudnn.hpp"
#include "nn/network.hpp"
#include "nn/scaler.hpp"
#include "nn/sgd.hpp"
#include "nn/trainer.hpp"

namespace gb::nn {

// Everything the step reads or writes besides the network: one small device block.
struct StepState {
  StepRecord record;
  ScalerState scaler;
  SgdHyper hyper;
  std::uint32_t correct = 0;
};

class Trainer::Impl {
 public:
  explicit Impl(const TrainerOptions& options);
  ~Impl();
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  void train_step(const DeviceBatch& batch);
  // Enqueues forward, loss, backward, (FP16: inf check,) SGD, (FP16: scaler update). No sync.
  void enqueue_step(const void* images, const std::int32_t* labels);
  StepState read_state();  // synchronises the stream
  std::size_t evaluate(const DeviceBatch& batch, int count);
  void infer_synthetic();
  void make_synthetic_batch(std::uint64_t seed);
  void set_learning_rate(float lr);
  std::size_t device_bytes() const;
  // One line per layer (shapes, chosen convolution algorithms, fused batch norms) and the
  // memory summary: what to look at when a configuration is slower than expected.
  std::string describe() const;

  TrainerOptions options;
  ElementType dtype = ElementType::f32;
  bool nhwc = false;
  gpu::Stream stream;
  CudnnHandle cudnn;
  gpu::CublasLtHandle lt;
  Network net;
  Context ctx;
  ScalerConfig scaler_config;
  gpu::DeviceBuffer workspace, state;
  gpu::PinnedBuffer host_state;
  gpu::DeviceBuffer synthetic_images, synthetic_labels;
  gpu::CudaGraph graph;
  gpu::CudaGraphExec graph_exec;
  const void* graph_images = nullptr;
  const std::int32_t* graph_labels = nullptr;
  std::size_t steps_enqueued = 0;
  gpu::CudaGraph infer_graph;
  gpu::CudaGraphExec infer_graph_exec;
  std::size_t infers_enqueued = 0;

  StepState* device_state() const { return state.as<StepState>(); }
};

}  // namespace gb::nn
