// nn/conv_engines.cpp: see conv_engines.hpp.
//
// The backend API's path from a problem to a launch: tensor descriptors (x, w, y, each with a
// unique id), a convolution descriptor, one operation, an operation graph; the heuristics list
// engine configurations for that graph; an execution plan finalized from a configuration is
// what runs, given a variant pack (unique id -> device pointer, plus the workspace).
//
// The execution plan and operation graph take the cuDNN handle through CUDNN_ATTR_*_HANDLE,
// which recent cuDNN 9 headers (9.19 here) mark deprecated in favour of a device-property
// descriptor that only 9.8+ libraries have; this file is therefore compiled with
// -Wno-deprecated-declarations (src/CMakeLists.txt) like the legacy-API files (the warnings
// appear when CUDNN_WARN_DEPRECATED is defined; these two attributes are the only ones here).
#include "nn/conv_engines.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <set>
#include <utility>

#include "core/error.hpp"
#include "gpu/cuda_raii.hpp"

// One attribute set or get; on failure the message names the attribute (it is in the
// expression GB_CHECK_CUDNN quotes).
#define GB_BACKEND_SET(desc, attr, type, count, values) \
  GB_CHECK_CUDNN(cudnnBackendSetAttribute((desc), (attr), (type), (count), (values)))
#define GB_BACKEND_GET(desc, attr, type, requested, got, values) \
  GB_CHECK_CUDNN(cudnnBackendGetAttribute((desc), (attr), (type), (requested), (got), (values)))

namespace gb::nn {
namespace {

// Owner of one backend descriptor.
class BackendDesc : public gpu::UniqueHandle<cudnnBackendDescriptor_t, BackendDesc> {
 public:
  static BackendDesc create(cudnnBackendDescriptorType_t type) {
    cudnnBackendDescriptor_t d{};
    GB_CHECK_CUDNN(cudnnBackendCreateDescriptor(type, &d));
    return BackendDesc(d);
  }
  static void destroy(cudnnBackendDescriptor_t d) noexcept {
    GB_CHECK_CUDNN_NOTHROW(cudnnBackendDestroyDescriptor(d));
  }
  using UniqueHandle::UniqueHandle;
};

// Variant-pack ids of the three tensors, by role (x, w, y) whatever the direction.
constexpr std::int64_t kUidX = 'x', kUidW = 'w', kUidY = 'y';
// Every pointer we hand over is cudaMalloc'd or carved from a 256-byte aligned arena or
// parameter block; 16 is the most cuDNN distinguishes (vector loads), and execute() checks it.
constexpr std::int64_t kAlignment = 16;
// More than any cuDNN 9.x lists per engine (44 knob types, 10 numerical and 5 behaviour notes
// in 9.19): cuDNN writes at most this many, and the array must hold what it writes.
constexpr std::int64_t kMaxListed = 64;

// Dimensions in NCHW order; strides of NCHW (KCRS) or NHWC (KRSC) memory, as the legacy
// cudnnSetTensor4dDescriptor / cudnnSetFilter4dDescriptor formats describe them.
BackendDesc make_tensor(std::int64_t uid, ElementType type, const Shape& s, bool channels_last) {
  const std::int64_t n = s.n, c = s.c, h = s.h, w = s.w;
  const std::array<std::int64_t, 4> dims{n, c, h, w};
  const std::array<std::int64_t, 4> strides =
      channels_last ? std::array<std::int64_t, 4>{h * w * c, 1, w * c, c}
                    : std::array<std::int64_t, 4>{c * h * w, h * w, w, 1};
  const cudnnDataType_t dt = cudnn_dtype(type);
  BackendDesc d = BackendDesc::create(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  GB_BACKEND_SET(d.get(), CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt);
  GB_BACKEND_SET(d.get(), CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims.data());
  GB_BACKEND_SET(d.get(), CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides.data());
  GB_BACKEND_SET(d.get(), CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
  GB_BACKEND_SET(d.get(), CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &kAlignment);
  GB_CHECK_CUDNN(cudnnBackendFinalize(d.get()));
  return d;
}

// Cross-correlation (what PyTorch and the legacy layer compute), FP32 accumulation for every
// data type, symmetric padding.
BackendDesc make_convolution(const ConvProblem& p) {
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  const std::int64_t spatial = 2;
  const std::array<std::int64_t, 2> pad{p.pad_h, p.pad_w};
  const std::array<std::int64_t, 2> stride{p.stride_h, p.stride_w};
  const std::array<std::int64_t, 2> dilation{p.dil_h, p.dil_w};
  BackendDesc d = BackendDesc::create(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  GB_BACKEND_SET(d.get(), CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
  GB_BACKEND_SET(d.get(), CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
  GB_BACKEND_SET(d.get(), CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial);
  GB_BACKEND_SET(d.get(), CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad.data());
  GB_BACKEND_SET(d.get(), CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pad.data());
  GB_BACKEND_SET(d.get(), CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dilation.data());
  GB_BACKEND_SET(d.get(), CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2,
                 stride.data());
  GB_CHECK_CUDNN(cudnnBackendFinalize(d.get()));
  return d;
}

// The operation descriptor type and attribute names of one direction; x, w and y name the
// tensors in the forward sense (backward data writes x, backward filter writes w).
struct OpAttrs {
  cudnnBackendDescriptorType_t type;
  cudnnBackendAttributeName_t x, w, y, conv, alpha, beta;
};

const OpAttrs& op_attrs(ConvDirection dir) {
  static const OpAttrs forward{CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
                               CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
                               CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                               CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
                               CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                               CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
                               CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA};
  static const OpAttrs backward_data{CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
                                     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
                                     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
                                     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
                                     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
                                     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
                                     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA};
  static const OpAttrs backward_filter{
      CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA};
  switch (dir) {
    case ConvDirection::forward: return forward;
    case ConvDirection::backward_data: return backward_data;
    case ConvDirection::backward_filter: break;
  }
  return backward_filter;
}

// The problem as an operation graph of one convolution operation, and everything it refers to
// (kept alive as long as any plan built from it).
struct OpGraph {
  BackendDesc x, w, y, conv, op, graph;
};

OpGraph make_graph(cudnnHandle_t handle, const ConvProblem& p, ConvDirection dir, float beta) {
  if (beta != 0.f && beta != 1.f) {
    throw Error(ErrorKind::runtime, "conv engines: beta must be 0 or 1");
  }
  OpGraph g;
  g.x = make_tensor(kUidX, p.x_type, p.x, p.x_nhwc);
  g.w = make_tensor(kUidW, p.w_type, p.w, p.w_krsc);
  g.y = make_tensor(kUidY, p.y_type, p.y, p.y_nhwc);
  g.conv = make_convolution(p);
  cudnnBackendDescriptor_t x = g.x.get(), w = g.w.get(), y = g.y.get(), conv = g.conv.get();
  const float alpha = 1.f;
  constexpr cudnnBackendAttributeType_t kDesc = CUDNN_TYPE_BACKEND_DESCRIPTOR;
  const OpAttrs& at = op_attrs(dir);
  g.op = BackendDesc::create(at.type);
  GB_BACKEND_SET(g.op.get(), at.x, kDesc, 1, &x);
  GB_BACKEND_SET(g.op.get(), at.w, kDesc, 1, &w);
  GB_BACKEND_SET(g.op.get(), at.y, kDesc, 1, &y);
  GB_BACKEND_SET(g.op.get(), at.conv, kDesc, 1, &conv);
  GB_BACKEND_SET(g.op.get(), at.alpha, CUDNN_TYPE_FLOAT, 1, &alpha);
  GB_BACKEND_SET(g.op.get(), at.beta, CUDNN_TYPE_FLOAT, 1, &beta);
  GB_CHECK_CUDNN(cudnnBackendFinalize(g.op.get()));
  cudnnBackendDescriptor_t op = g.op.get();
  g.graph = BackendDesc::create(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  GB_BACKEND_SET(g.graph.get(), CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
  GB_BACKEND_SET(g.graph.get(), CUDNN_ATTR_OPERATIONGRAPH_OPS, kDesc, 1, &op);
  GB_CHECK_CUDNN(cudnnBackendFinalize(g.graph.get()));
  return g;
}

// The engine configurations one heuristics mode lists for the graph, best first. A mode that
// cannot answer for this graph (its finalize fails) lists nothing: the other mode may.
std::vector<BackendDesc> heuristic_configs(cudnnBackendDescriptor_t graph,
                                           cudnnBackendHeurMode_t mode) {
  BackendDesc heur = BackendDesc::create(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  GB_BACKEND_SET(heur.get(), CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                 1, &graph);
  GB_BACKEND_SET(heur.get(), CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
  if (cudnnBackendFinalize(heur.get()) != CUDNN_STATUS_SUCCESS) return {};
  std::int64_t count = 0;
  GB_BACKEND_GET(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0,
                 &count, nullptr);
  std::vector<BackendDesc> configs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (std::int64_t i = 0; i < count; ++i) {
    configs.push_back(BackendDesc::create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
    raw.push_back(configs.back().get());
  }
  if (count == 0) return configs;
  std::int64_t got = 0;
  GB_BACKEND_GET(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count,
                 &got, raw.data());
  configs.resize(static_cast<std::size_t>(std::clamp<std::int64_t>(got, 0, count)));
  return configs;
}

// What the filters and the name need to know about a configuration's engine and knobs.
struct ConfigInfo {
  std::int64_t engine = -1;
  std::vector<int> numerical_notes, behavior_notes;
  std::string name;  // "eng<index>[:<knob type>=<value>,...]", also the identity for dedupe
};

bool has(const std::vector<int>& notes, int note) {
  return std::find(notes.begin(), notes.end(), note) != notes.end();
}

ConfigInfo describe_config(cudnnBackendDescriptor_t config) {
  ConfigInfo info;
  BackendDesc engine = BackendDesc::create(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  cudnnBackendDescriptor_t e = engine.get();
  std::int64_t got = 0;
  GB_BACKEND_GET(config, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &got, &e);
  GB_BACKEND_GET(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &got, &info.engine);

  std::array<cudnnBackendNumericalNote_t, kMaxListed> numerical{};
  GB_BACKEND_GET(e, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE, kMaxListed, &got,
                 numerical.data());
  for (std::int64_t i = 0; i < std::min(got, kMaxListed); ++i) {
    info.numerical_notes.push_back(static_cast<int>(numerical[static_cast<std::size_t>(i)]));
  }
  std::array<cudnnBackendBehaviorNote_t, kMaxListed> behavior{};
  GB_BACKEND_GET(e, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE, kMaxListed, &got,
                 behavior.data());
  for (std::int64_t i = 0; i < std::min(got, kMaxListed); ++i) {
    info.behavior_notes.push_back(static_cast<int>(behavior[static_cast<std::size_t>(i)]));
  }

  // Knob choices: cuDNN copies into descriptors the caller created, at most one per knob type.
  std::vector<BackendDesc> knobs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (std::int64_t i = 0; i < kMaxListed; ++i) {
    knobs.push_back(BackendDesc::create(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR));
    raw.push_back(knobs.back().get());
  }
  std::int64_t knob_count = 0;
  GB_BACKEND_GET(config, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                 kMaxListed, &knob_count, raw.data());
  std::vector<std::pair<int, std::int64_t>> choices;
  for (std::int64_t i = 0; i < std::min(knob_count, kMaxListed); ++i) {
    cudnnBackendKnobType_t type{};
    std::int64_t value = 0;
    const cudnnBackendDescriptor_t k = raw[static_cast<std::size_t>(i)];
    GB_BACKEND_GET(k, CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &got, &type);
    GB_BACKEND_GET(k, CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1, &got, &value);
    choices.emplace_back(static_cast<int>(type), value);
  }
  std::sort(choices.begin(), choices.end());  // one order, so equal configurations name alike
  info.name = "eng" + std::to_string(info.engine);
  for (std::size_t i = 0; i < choices.size(); ++i) {
    info.name += (i == 0 ? ":" : ",") + std::to_string(choices[i].first) + "=" +
                 std::to_string(choices[i].second);
  }
  return info;
}

// The configuration finalized into an execution plan, or an empty descriptor when this
// configuration does not support the problem (heuristics list such configurations).
BackendDesc try_plan(cudnnHandle_t handle, cudnnBackendDescriptor_t config) {
  BackendDesc plan = BackendDesc::create(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
  GB_BACKEND_SET(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
  GB_BACKEND_SET(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &config);
  if (cudnnBackendFinalize(plan.get()) != CUDNN_STATUS_SUCCESS) return BackendDesc();
  return plan;
}

}  // namespace

struct ConvEnginePlan::Parts {
  std::shared_ptr<const OpGraph> graph;  // what the configuration was made for
  BackendDesc config, plan;
};

const char* to_string(ConvDirection d) {
  switch (d) {
    case ConvDirection::forward: return "fwd";
    case ConvDirection::backward_data: return "bwd_data";
    case ConvDirection::backward_filter: return "bwd_filter";
  }
  return "?";
}

ConvEnginePlan::ConvEnginePlan(std::unique_ptr<Parts> parts, ConvDirection direction, float beta,
                               std::size_t workspace, std::int64_t engine, std::string name,
                               std::vector<int> numerical_notes, std::vector<int> behavior_notes)
    : parts_(std::move(parts)),
      direction_(direction),
      beta_(beta),
      workspace_(workspace),
      engine_(engine),
      name_(std::move(name)),
      numerical_notes_(std::move(numerical_notes)),
      behavior_notes_(std::move(behavior_notes)) {}

ConvEnginePlan::~ConvEnginePlan() = default;

void ConvEnginePlan::execute(cudnnHandle_t handle, void* x, void* w, void* y,
                             void* workspace) const {
  // The tensors were described as 16-byte aligned; a pointer that is not would be read wrongly
  // by vectorised kernels rather than rejected.
  for (const void* p : {x, w, y}) {
    if (reinterpret_cast<std::uintptr_t>(p) % static_cast<std::uintptr_t>(kAlignment) != 0) {
      throw Error(ErrorKind::runtime,
                  "conv engine " + name_ + ": a tensor pointer is not 16-byte aligned");
    }
  }
  if (workspace_ > 0 && workspace == nullptr) {
    throw Error(ErrorKind::runtime, "conv engine " + name_ + ": no workspace given");
  }
  // A variant pack per call (host descriptors only): the pointers differ between the layers
  // that share this plan, and the network input's pointer changes from batch to batch.
  const std::array<std::int64_t, 3> uids{kUidX, kUidW, kUidY};
  std::array<void*, 3> pointers{x, w, y};
  BackendDesc pack = BackendDesc::create(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  GB_BACKEND_SET(pack.get(), CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3,
                 uids.data());
  GB_BACKEND_SET(pack.get(), CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3,
                 pointers.data());
  GB_BACKEND_SET(pack.get(), CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1,
                 &workspace);
  GB_CHECK_CUDNN(cudnnBackendFinalize(pack.get()));
  GB_CHECK_CUDNN(cudnnBackendExecute(handle, parts_->plan.get(), pack.get()));
}

std::vector<std::shared_ptr<const ConvEnginePlan>> list_conv_engine_plans(
    cudnnHandle_t handle, const ConvProblem& p, ConvDirection direction,
    const ConvEngineOptions& o) {
  const auto graph = std::make_shared<const OpGraph>(make_graph(handle, p, direction, o.beta));
  std::vector<std::shared_ptr<const ConvEnginePlan>> out;
  std::set<std::string> seen;
  // Mode A is cuDNN's ranked guess; the fallback list adds engines that support (nearly) any
  // problem, which A may leave out. PyTorch's benchmark draws from the same two lists.
  for (const cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    if (out.size() >= o.max_plans) break;
    for (BackendDesc& config : heuristic_configs(graph->graph.get(), mode)) {
      if (out.size() >= o.max_plans) return out;
      ConfigInfo info = describe_config(config.get());
      if (!seen.insert(info.name).second) continue;
      // FP32 without TF32 must not use tensor cores; an engine that down-converts its inputs
      // (FP32 -> FP16) loses precision whatever is allowed (PyTorch drops those too).
      if (!o.allow_tensor_cores && has(info.numerical_notes, CUDNN_NUMERICAL_NOTE_TENSOR_CORE)) {
        continue;
      }
      if (has(info.numerical_notes, CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS)) continue;
      // Runtime-compiled engines take seconds to build, per problem and direction.
      if (has(info.behavior_notes, CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION)) continue;
      BackendDesc plan = try_plan(handle, config.get());
      if (!plan) continue;
      std::int64_t workspace = 0, got = 0;
      GB_BACKEND_GET(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1,
                     &got, &workspace);
      if (workspace < 0 || static_cast<std::uint64_t>(workspace) > o.max_workspace) continue;
      auto parts = std::make_unique<ConvEnginePlan::Parts>();
      parts->graph = graph;
      parts->config = std::move(config);
      parts->plan = std::move(plan);
      out.push_back(std::make_shared<const ConvEnginePlan>(
          std::move(parts), direction, o.beta, static_cast<std::size_t>(workspace), info.engine,
          std::move(info.name), std::move(info.numerical_notes), std::move(info.behavior_notes)));
    }
  }
  return out;
}

}  // namespace gb::nn
