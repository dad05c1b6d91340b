// nn/trainer.cpp: Trainer (trainer.hpp) over Trainer::Impl (trainer_impl.hpp).
//
// Construction: build the model (shapes only) -> plan the arena -> check the plan against free
// device memory (out of memory is an error that says how much was needed and which batch fits,
// raised before anything is allocated when the plan alone is too big) -> allocate arena and
// parameters -> initialise weights -> layer setup with a scratch workspace (convolution
// algorithm search, batch-norm fusion probe) -> allocate the one shared workspace the chosen
// algorithms need.
//
// Step (all on stream(), no allocation, no host synchronisation: capturable as one CUDA graph):
// forward -> softmax cross-entropy (dlogits scaled by the loss scale in FP16) -> backward ->
// [FP16: inf/NaN check of all gradients] -> fused SGD -> [FP16: scaler update].
// With cuda_graph, the first step runs eagerly (lazy module loading and library
// initialisation happen outside the capture), the second is captured and launched, and later
// steps replay the graph. While GPUBASE_NN_PROFILE collects its eager steps, capture waits.
//
// Environment: GPUBASE_NN_CONV_ALGO=heuristic picks convolution algorithms with cuDNN's
// heuristic instead of measuring them; GPUBASE_NN_NO_BN_FUSION=1 disables the fused batch norm.
#include "nn/trainer_impl.hpp"

#include <functional>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/error.hpp"
#include "gpu/check.hpp"
#include "nn/kernels.hpp"
#include "nn/loss.hpp"
#include "nn/models.hpp"

namespace gb::nn {

namespace {

// The work `enqueue` puts on `stream`, captured as a graph; a failed capture is ended and
// dropped, the error rethrown.
gpu::CudaGraph capture_graph(cudaStream_t stream, const std::function<void()>& enqueue) {
  GB_CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  try {
    enqueue();
  } catch (...) {
    cudaGraph_t broken = nullptr;
    (void)cudaStreamEndCapture(stream, &broken);
    if (broken) (void)cudaGraphDestroy(broken);
    (void)cudaGetLastError();
    throw;
  }
  cudaGraph_t g = nullptr;
  GB_CHECK_CUDA(cudaStreamEndCapture(stream, &g));
  return gpu::CudaGraph(g);
}

}  // namespace

InputShape default_input(Model m) {
  if (m == Model::small_resnet) return InputShape{1, 28, 28, 10};
  return InputShape{3, 224, 224, 1000};
}

namespace {

ElementType dtype_for(Precision p) {
  return p == Precision::fp16   ? ElementType::f16
         : p == Precision::bf16 ? ElementType::bf16
                                : ElementType::f32;
}
bool nhwc_for(Precision p) { return p == Precision::fp16 || p == Precision::bf16; }

// Validates the options before any member touches the GPU.
const TrainerOptions& checked(const TrainerOptions& o) {
  if (o.batch < 1) throw Error(ErrorKind::usage, "batch must be at least 1");
  if (o.input.channels < 1 || o.input.height < 1 || o.input.width < 1 || o.input.classes < 2) {
    throw Error(ErrorKind::usage, "bad input shape " + std::to_string(o.input.channels) + "x" +
                                      std::to_string(o.input.height) + "x" +
                                      std::to_string(o.input.width) + " with " +
                                      std::to_string(o.input.classes) + " classes");
  }
  return o;
}

int current_device() {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) (void)cudaGetLastError();
  return device;
}

std::string gib(std::size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / (1024.0 * 1024 * 1024));
  return buf;
}
std::string mib(std::size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024));
  return buf;
}

// Room kept for the convolution workspace, cuDNN/cuBLASLt internals and the CUDA context's own
// growth when judging whether a plan fits.
constexpr std::size_t kHeadroomBytes = 512u << 20;
// Algorithm search, unless overridden: 4 GiB lets FP32 ResNet-50 at batch 256 pick algorithms
// that want 1-4 GiB (1,043 -> 1,052 images/s on an H200; bench/NOTES.md t6).
constexpr std::size_t kMaxScratchBytes = std::size_t{4} << 30;
constexpr std::size_t kStepWorkspaceBytes = 256u << 20;  // at least, when memory allows

// The algorithm search's scratch cap: GPUBASE_NN_SEARCH_WORKSPACE_MB (MiB) when set, else 4 GiB.
// A larger cap lets cuDNN's Find list algorithms that ask for more; whatever wins becomes (part
// of) the step's workspace.
std::size_t max_scratch_bytes() {
  const char* v = std::getenv("GPUBASE_NN_SEARCH_WORKSPACE_MB");
  if (v == nullptr || *v == '\0') return kMaxScratchBytes;
  char* end = nullptr;
  const unsigned long long mb = std::strtoull(v, &end, 10);
  if (*end != '\0' || mb == 0 || mb > (1ull << 20)) {
    throw Error(ErrorKind::usage, std::string("GPUBASE_NN_SEARCH_WORKSPACE_MB: '") + v +
                                      "' is not a size in MiB (1 .. 1048576)");
  }
  return static_cast<std::size_t>(mb) << 20;
}

bool is_oom(const Error& e) {
  const cudaError_t last = cudaGetLastError();  // also clears the (non-sticky) error
  return last == cudaErrorMemoryAllocation ||
         std::strstr(e.what(), "out of memory") != nullptr;
}

}  // namespace

Trainer::Impl::Impl(const TrainerOptions& o)
    : options(checked(o)),
      dtype(dtype_for(o.precision)),
      nhwc(nhwc_for(o.precision)),
      stream(gpu::Stream::create()),
      cudnn(CudnnHandle::create()),
      lt(gpu::CublasLtHandle::create()),
      net(dtype, nhwc, o.batch) {
  GB_CHECK_CUDNN(cudnnSetStream(cudnn.get(), stream.get()));
  build_model(net, o.model, o.input);
  const std::size_t arena = net.plan();
  const std::size_t fixed = net.params().bytes() + kHeadroomBytes;
  const std::size_t per_image = arena / static_cast<std::size_t>(o.batch);
  std::size_t free_bytes = 0, total_bytes = 0;
  GB_CHECK_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));

  auto out_of_memory = [&](std::size_t needed) {
    std::size_t now_free = free_bytes, now_total = total_bytes;
    if (cudaMemGetInfo(&now_free, &now_total) != cudaSuccess) (void)cudaGetLastError();
    const std::size_t usable = now_free > fixed ? (now_free - fixed) / 10 * 9 : 0;
    std::size_t fits = per_image > 0 ? usable / per_image : 0;
    if (fits > 8) fits = fits / 8 * 8;
    std::string msg = "out of device memory: " + std::string(to_string(o.model)) + " " +
                      std::string(to_string(o.precision)) + " at batch " +
                      std::to_string(o.batch) + " needs about " + gib(needed) + " (" +
                      mib(per_image) + " per image + " + mib(fixed) +
                      " for weights, optimizer state and workspace); " + gib(now_free) +
                      " of " + gib(now_total) + " are free on device " +
                      std::to_string(current_device()) + ": ";
    msg += fits >= 1 ? "a batch of " + std::to_string(fits) + " should fit"
                     : "not even a batch of 1 fits";
    return Error(ErrorKind::runtime, msg);
  };

  if (arena + fixed > free_bytes) throw out_of_memory(arena + fixed);
  try {
    net.allocate();
    state = gpu::DeviceBuffer(sizeof(StepState));
    host_state = gpu::PinnedBuffer(sizeof(StepState));
  } catch (const Error& e) {
    if (is_oom(e)) throw out_of_memory(arena + fixed);
    throw;
  }
  net.params().initialize(o.seed, stream.get());

  ctx.precision = o.precision;
  ctx.forward_only = o.forward_only;
  ctx.cudnn = cudnn.get();
  ctx.lt = lt.get();
  ctx.stream = stream.get();
  const char* algo_env = std::getenv("GPUBASE_NN_CONV_ALGO");
  ctx.find_algorithms = !(algo_env && std::string(algo_env) == "heuristic");
  {
    // Scratch for algorithm search: up to max_scratch_bytes(), less when memory is short.
    GB_CHECK_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
    std::size_t scratch_bytes = std::min(max_scratch_bytes(), free_bytes / 2);
    gpu::DeviceBuffer scratch;
    while (scratch_bytes >= (1u << 20)) {
      try {
        scratch = gpu::DeviceBuffer(scratch_bytes);
        break;
      } catch (const Error& e) {
        if (!is_oom(e)) throw;
        scratch_bytes /= 2;
      }
    }
    ctx.workspace = scratch.data();
    ctx.workspace_bytes = scratch.data() ? scratch_bytes : 0;
    ctx.step_workspace_bytes = std::min(ctx.workspace_bytes, kStepWorkspaceBytes);
    const std::size_t need = std::max(net.setup(ctx), ctx.step_workspace_bytes);
    GB_CHECK_CUDA(cudaStreamSynchronize(stream.get()));
    ctx.workspace = nullptr;
    ctx.workspace_bytes = 0;
    scratch = gpu::DeviceBuffer();
    try {
      workspace = gpu::DeviceBuffer(need);
    } catch (const Error& e) {
      if (is_oom(e)) throw out_of_memory(arena + fixed + need);
      throw;
    }
    ctx.workspace = workspace.data();
    ctx.workspace_bytes = need;
  }

  StepState init;
  init.scaler.scale = scaler_config.init_scale;
  init.hyper = SgdHyper{o.learning_rate, o.momentum, o.weight_decay};
  GB_CHECK_CUDA(cudaMemcpyAsync(state.data(), &init, sizeof init, cudaMemcpyHostToDevice,
                                stream.get()));
  GB_CHECK_CUDA(cudaStreamSynchronize(stream.get()));
}

Trainer::Impl::~Impl() = default;

void Trainer::Impl::enqueue_step(const void* images, const std::int32_t* labels) {
  StepState* s = device_state();
  const bool scaled = options.precision == Precision::fp16;
  net.input_value()->data = const_cast<void*>(images);
  net.forward(ctx, true);
  Value* logits = net.output();
  softmax_cross_entropy(logits->data, labels, logits->grad, net.batch(), logits->shape.c, dtype,
                        scaled ? &s->scaler.scale : nullptr, &s->record, ctx.stream);
  net.backward(ctx);
  ParamStore& ps = net.params();
  if (scaled) {
    check_nonfinite(ps.grad_lp(), ps.n_lp(), ps.lp_dtype(), ps.grad32(), ps.n32(), &s->scaler,
                    ctx.stream);
  }
  sgd_step(ps.sgd_buffers(), &s->hyper, scaled ? &s->scaler : nullptr, ctx.stream);
  if (scaled) scaler_update(&s->scaler, scaler_config, &s->record, ctx.stream);
}

void Trainer::Impl::train_step(const DeviceBatch& batch) {
  if (!batch.images || !batch.labels) throw Error(ErrorKind::usage, "train_step: empty batch");
  if (options.forward_only)
    throw Error(ErrorKind::usage, "train_step: this trainer was built forward_only (inference)");
  if (!options.cuda_graph || steps_enqueued == 0 || (!graph_exec && net.profiling())) {
    enqueue_step(batch.images, batch.labels);
    ++steps_enqueued;
    return;
  }
  if (!graph_exec) {
    graph = capture_graph(stream.get(), [&] { enqueue_step(batch.images, batch.labels); });
    graph_exec = graph.instantiate();
    graph_images = batch.images;
    graph_labels = batch.labels;
  } else if (batch.images != graph_images || batch.labels != graph_labels) {
    throw Error(ErrorKind::usage,
                "train_step with cuda_graph: the batch pointers must be the same every step "
                "(use the synthetic batch or a fixed staging buffer)");
  }
  GB_CHECK_CUDA(cudaGraphLaunch(graph_exec.get(), stream.get()));
  ++steps_enqueued;
}

StepState Trainer::Impl::read_state() {
  GB_CHECK_CUDA(cudaMemcpyAsync(host_state.data(), state.data(), sizeof(StepState),
                                cudaMemcpyDeviceToHost, stream.get()));
  stream.synchronize();
  StepState s;
  std::memcpy(&s, host_state.data(), sizeof s);
  return s;
}

std::size_t Trainer::Impl::evaluate(const DeviceBatch& batch, int count) {
  if (count < 0 || count > options.batch) {
    throw Error(ErrorKind::usage, "evaluate: count " + std::to_string(count) +
                                      " outside [0, batch " + std::to_string(options.batch) + "]");
  }
  if (count == 0) return 0;
  net.input_value()->data = const_cast<void*>(batch.images);
  net.forward(ctx, false);
  const Value* logits = net.output();
  count_correct(logits->data, batch.labels, count, logits->shape.c, dtype,
                &device_state()->correct, ctx.stream);
  return read_state().correct;
}

void Trainer::Impl::infer_synthetic() {
  if (!synthetic_images.data())
    throw Error(ErrorKind::usage, "infer_synthetic: call make_synthetic_batch first");
  auto enqueue = [&] {
    net.input_value()->data = synthetic_images.data();
    net.forward(ctx, false);
  };
  if (!options.cuda_graph || infers_enqueued == 0 || (!infer_graph_exec && net.profiling())) {
    enqueue();
    ++infers_enqueued;
    return;
  }
  if (!infer_graph_exec) {
    infer_graph = capture_graph(stream.get(), enqueue);
    infer_graph_exec = infer_graph.instantiate();
  }
  GB_CHECK_CUDA(cudaGraphLaunch(infer_graph_exec.get(), stream.get()));
  ++infers_enqueued;
}

void Trainer::Impl::make_synthetic_batch(std::uint64_t seed) {
  const Shape s = net.input_value()->shape;
  try {
    synthetic_images = gpu::DeviceBuffer(s.elements() * element_bytes(dtype));
    synthetic_labels = gpu::DeviceBuffer(static_cast<std::size_t>(s.n) * sizeof(std::int32_t));
  } catch (const Error& e) {
    if (is_oom(e)) {
      throw Error(ErrorKind::runtime, "out of device memory for the synthetic batch (" +
                                          mib(s.elements() * element_bytes(dtype)) +
                                          "): try a smaller batch");
    }
    throw;
  }
  fill_normal(synthetic_images.data(), s.elements(), dtype, seed, stream.get());
  fill_labels(synthetic_labels.as<std::int32_t>(), static_cast<std::size_t>(s.n),
              options.input.classes, seed, stream.get());
  stream.synchronize();
}

void Trainer::Impl::set_learning_rate(float lr) {
  options.learning_rate = lr;
  set_sgd_hyper(&device_state()->hyper, SgdHyper{lr, options.momentum, options.weight_decay},
                stream.get());
}

std::size_t Trainer::Impl::device_bytes() const {
  return net.arena_bytes() + net.params().bytes() + workspace.bytes() + ctx.extra_bytes +
         state.bytes() + synthetic_images.bytes() + synthetic_labels.bytes();
}

std::string Trainer::Impl::describe() const {
  std::string s = std::string(to_string(options.model)) + " " +
                  std::string(to_string(options.precision)) + " batch " +
                  std::to_string(options.batch) + (nhwc ? " NHWC" : " NCHW") + ": " +
                  std::to_string(net.params().count()) + " parameters; arena " +
                  mib(net.arena_bytes()) + ", parameter store " + mib(net.params().bytes()) +
                  ", workspace " + mib(workspace.bytes()) + ", layer-owned " +
                  mib(ctx.extra_bytes) + "\n";
  for (std::size_t i = 0; i < net.layers().size(); ++i)
    s += "  " + std::to_string(i) + ": " + net.layers()[i]->describe() + "\n";
  return s;
}

// ---- Trainer: the public face forwards to Impl.

Trainer::Trainer(const TrainerOptions& options) : impl_(std::make_unique<Impl>(options)) {}
Trainer::~Trainer() = default;

const TrainerOptions& Trainer::options() const { return impl_->options; }

InputFormat Trainer::input_format() const {
  InputFormat f;
  f.nhwc = impl_->nhwc;
  f.dtype = impl_->dtype;
  return f;
}

cudaStream_t Trainer::stream() const { return impl_->stream.get(); }

void Trainer::make_synthetic_batch(std::uint64_t seed) { impl_->make_synthetic_batch(seed); }

void Trainer::train_step(const DeviceBatch& batch) { impl_->train_step(batch); }

void Trainer::train_step_synthetic() {
  if (!impl_->synthetic_images.data()) impl_->make_synthetic_batch(1);
  impl_->train_step(DeviceBatch{impl_->synthetic_images.data(),
                                impl_->synthetic_labels.as<std::int32_t>()});
}

StepResult Trainer::last_step() {
  const StepState s = impl_->read_state();
  StepResult r;
  r.loss = s.record.loss;
  if (impl_->options.precision == Precision::fp16) {
    r.skipped = s.record.skipped != 0;
    r.loss_scale = s.record.scale;
  }
  return r;
}

std::size_t Trainer::evaluate(const DeviceBatch& batch, int count) {
  return impl_->evaluate(batch, count);
}

void Trainer::infer_synthetic() { impl_->infer_synthetic(); }

void Trainer::set_learning_rate(float lr) { impl_->set_learning_rate(lr); }

std::size_t Trainer::parameter_count() const { return impl_->net.params().count(); }
std::size_t Trainer::parameter_bytes() const { return impl_->net.params().bytes(); }
std::size_t Trainer::device_bytes() const { return impl_->device_bytes(); }

std::vector<float> Trainer::gradients() {
  const StepState s = impl_->read_state();  // waits for the last step
  const float inv_scale =
      impl_->options.precision == Precision::fp16 && s.record.scale > 0 ? 1.f / s.record.scale
                                                                         : 1.f;
  const ParamStore& ps = impl_->net.params();
  std::vector<float> out;
  out.reserve(ps.count());
  for (std::size_t id = 0; id < ps.infos().size(); ++id) {
    const std::vector<float> g = ps.get_grad(static_cast<int>(id));  // logical (KCRS) order
    for (float v : g) out.push_back(v * inv_scale);
  }
  return out;
}

Trainer::ScalerStats Trainer::scaler_stats() {
  if (impl_->options.precision != Precision::fp16) return {};
  const StepState s = impl_->read_state();
  ScalerStats st;
  st.steps = static_cast<std::size_t>(s.scaler.steps);
  st.skipped = static_cast<std::size_t>(s.scaler.skipped);
  st.scale = s.scaler.scale;
  return st;
}

}  // namespace gb::nn
