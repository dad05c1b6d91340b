// nn/conv_engines.hpp: cuDNN's backend (graph) API for one direction of one 2-D convolution:
// the engine configurations cuDNN's heuristics list for it, each finalized into an execution
// plan that can be launched. These are the candidates PyTorch's cudnn.benchmark times; they
// include engines and knob settings the legacy cudnnFind*AlgorithmEx (eight algorithm enums)
// does not reach. conv.cpp times them next to the legacy algorithms (see its top comment).
//
// Only features present in every cuDNN 9.x are used (the execution plan and operation graph
// take the handle, not the device-property descriptor of 9.8+). Everything here is host code;
// conv_engines.cpp is the one file that calls the backend API.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nn/cudnn.hpp"
#include "nn/tensor.hpp"

namespace gb::nn {

enum class ConvDirection { forward, backward_data, backward_filter };
const char* to_string(ConvDirection d);

// A convolution as the legacy descriptors describe it (cudnn.cpp): every tensor's dimensions in
// NCHW order, its memory order given separately. Groups follow from the shapes (x.c / w.c), as
// the backend API infers them.
struct ConvProblem {
  Shape x;  // input N x C x H x W
  Shape w;  // filter K x C/groups x R x S
  Shape y;  // output N x K x P x Q
  ElementType x_type = ElementType::f32, w_type = ElementType::f32, y_type = ElementType::f32;
  bool x_nhwc = false, y_nhwc = false;
  bool w_krsc = false;  // filter stored KRSC (the NHWC engine) instead of KCRS
  int stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dil_h = 1, dil_w = 1;
};

struct ConvEngineOptions {
  // The output is alpha * conv + beta * output with alpha = 1; beta (0 or 1) is baked into the
  // operation, so a plan built for 0 never adds and one built for 1 always does.
  float beta = 0.f;
  std::size_t max_workspace = 0;   // plans that want more are dropped
  bool allow_tensor_cores = false;  // false: no TENSOR_CORE engines (FP32 without TF32)
  std::size_t max_plans = 8;
};

// One finalized execution plan. Immutable once built, so layers with the same problem share one
// (shared_ptr); execute() keeps no state between calls.
class ConvEnginePlan {
 public:
  struct Parts;  // the backend descriptors it owns (conv_engines.cpp)
  ConvEnginePlan(std::unique_ptr<Parts> parts, ConvDirection direction, float beta,
                 std::size_t workspace, std::int64_t engine, std::string name,
                 std::vector<int> numerical_notes, std::vector<int> behavior_notes);
  ~ConvEnginePlan();
  ConvEnginePlan(const ConvEnginePlan&) = delete;
  ConvEnginePlan& operator=(const ConvEnginePlan&) = delete;

  ConvDirection direction() const { return direction_; }
  float beta() const { return beta_; }
  std::size_t workspace_bytes() const { return workspace_; }
  std::int64_t engine_index() const { return engine_; }  // CUDNN_ATTR_ENGINE_GLOBAL_INDEX
  // "eng<global index>" then each knob as <cudnnBackendKnobType_t>=<value>: "eng28:2=3,14=1".
  const std::string& name() const { return name_; }
  // The engine's cudnnBackendNumericalNote_t / cudnnBackendBehaviorNote_t values.
  const std::vector<int>& numerical_notes() const { return numerical_notes_; }
  const std::vector<int>& behavior_notes() const { return behavior_notes_; }

  // Runs the convolution on the handle's stream. The pointers are by tensor role, whatever the
  // direction: forward reads x and w and writes y; backward data reads y (dy) and w and writes
  // x (dx); backward filter reads x and y (dy) and writes w (dw). Each must be 16-byte aligned;
  // workspace has at least workspace_bytes(). `handle` must be the one the plan was built with.
  // No allocation and no synchronisation (CUDA-graph capturable): host descriptors only.
  void execute(cudnnHandle_t handle, void* x, void* w, void* y, void* workspace) const;

 private:
  std::unique_ptr<Parts> parts_;
  ConvDirection direction_;
  float beta_;
  std::size_t workspace_;
  std::int64_t engine_;
  std::string name_;
  std::vector<int> numerical_notes_, behavior_notes_;
};

// The plans for one direction of `p`: heuristics mode A in its order, then the fallback list
// (configurations already seen skipped), kept when the plan finalizes, its workspace fits, its
// engine needs no runtime compilation (slow to build) and does not down-convert its inputs, and
// (unless allowed) uses no tensor cores; at most o.max_plans. Configurations the heuristics list
// but that do not support the problem fail to finalize and are skipped. Throws gb::Error when
// the problem's descriptors or operation graph cannot be built.
std::vector<std::shared_ptr<const ConvEnginePlan>> list_conv_engine_plans(
    cudnnHandle_t handle, const ConvProblem& p, ConvDirection direction,
    const ConvEngineOptions& o);

}  // namespace gb::nn
