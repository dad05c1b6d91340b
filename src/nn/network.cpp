// nn/network.cpp: see network.hpp.
#include "nn/network.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

#include "core/error.hpp"
#include "gpu/check.hpp"

namespace gb::nn {
namespace {

constexpr std::size_t kArenaAlign = 256;

std::size_t align_up(std::size_t v) { return (v + kArenaAlign - 1) / kArenaAlign * kArenaAlign; }

void require(bool ok, const std::string& what) {
  if (!ok) throw Error(ErrorKind::usage, what);
}

}  // namespace

Network::Network(ElementType dtype, bool nhwc, int batch)
    : dtype_(dtype), nhwc_(nhwc), batch_(batch), params_(dtype) {
  require(batch >= 1, "batch must be at least 1, got " + std::to_string(batch));
}

Network::~Network() = default;

Value* Network::new_value(std::string name, Shape shape) {
  auto v = std::make_unique<Value>();
  v->name = std::move(name);
  v->shape = shape;
  v->dtype = dtype_;
  v->nhwc = nhwc_;
  values_.push_back(std::move(v));
  return values_.back().get();
}

Layer* Network::push(std::unique_ptr<Layer> layer, std::vector<Value*> inputs, Value* output) {
  layer->inputs = std::move(inputs);
  layer->accumulate.assign(layer->inputs.size(), false);
  layer->output = output;
  layers_.push_back(std::move(layer));
  output_ = output;
  return layers_.back().get();
}

Value* Network::input(int channels, int height, int width, bool needs_grad) {
  require(input_ == nullptr, "a network has one input");
  input_ = new_value("input", Shape{batch_, channels, height, width});
  input_->needs_grad = needs_grad;
  return input_;
}

Value* Network::conv(Value* x, const std::string& name, const ConvSpec& s) {
  const Shape in = x->shape;
  require(s.groups >= 1 && in.c % s.groups == 0 && s.out_channels % s.groups == 0,
          name + ": channels " + std::to_string(in.c) + " -> " + std::to_string(s.out_channels) +
              " not divisible by groups " + std::to_string(s.groups));
  const int oh = window_out(in.h, s.kernel_h, s.stride_h, s.pad_h, s.dil_h);
  const int ow = window_out(in.w, s.kernel_w, s.stride_w, s.pad_w, s.dil_w);
  require(oh >= 1 && ow >= 1, name + ": input " + in.to_string() + " too small for the kernel");
  const Shape wshape{s.out_channels, in.c / s.groups, s.kernel_h, s.kernel_w};
  // torchvision: kaiming_normal_(mode="fan_out", nonlinearity="relu"): std = sqrt(2 / fan_out),
  // fan_out = K * R * S (PyTorch's fan_out for a [K, C/g, R, S] weight).
  const float fan_out = static_cast<float>(s.out_channels * s.kernel_h * s.kernel_w);
  const int w = params_.add(name + ".weight", wshape, true, nhwc_,
                            Init::normal(std::sqrt(2.f / fan_out)));
  Value* y = new_value(name, Shape{in.n, s.out_channels, oh, ow});
  push(make_conv(s, w), {x}, y);
  return y;
}

Value* Network::batchnorm(Value* x, const std::string& name, Act act, Value* residual) {
  if (residual) require(residual->shape == x->shape, name + ": residual shape mismatch");
  const Shape vec{x->shape.c, 1, 1, 1};
  const int g = params_.add(name + ".weight", vec, false, false, Init::constant(1.f));
  const int b = params_.add(name + ".bias", vec, false, false, Init::constant(0.f));
  Value* y = new_value(name, x->shape);
  std::vector<Value*> in{x};
  if (residual) in.push_back(residual);
  push(make_batchnorm(g, b, act, residual != nullptr), in, y);
  return y;
}

Value* Network::activation(Value* x, Act act) {
  Value* y = new_value(x->name + (act == Act::relu6 ? ".relu6" : ".relu"), x->shape);
  push(make_activation(act), {x}, y);
  return y;
}

Value* Network::add(Value* a, Value* b, Act act) {
  require(a->shape == b->shape, "add: shapes " + a->shape.to_string() + " and " +
                                    b->shape.to_string() + " differ");
  Value* y = new_value(a->name + ".add", a->shape);
  push(make_add(act), {a, b}, y);
  return y;
}

Value* Network::pool(Value* x, const PoolSpec& s) {
  const int oh = window_out(x->shape.h, s.kernel_h, s.stride_h, s.pad_h);
  const int ow = window_out(x->shape.w, s.kernel_w, s.stride_w, s.pad_w);
  require(oh >= 1 && ow >= 1, "pool: input " + x->shape.to_string() + " too small");
  Value* y = new_value(x->name + ".pool", Shape{x->shape.n, x->shape.c, oh, ow});
  push(make_pool(s), {x}, y);
  return y;
}

Value* Network::global_avgpool(Value* x) {
  Value* y = new_value("avgpool", Shape{x->shape.n, x->shape.c, 1, 1});
  push(make_global_avgpool(), {x}, y);
  return y;
}

Value* Network::linear(Value* x, const std::string& name, int out_features, Init weight,
                       Init bias) {
  require(!nhwc_ || (x->shape.h == 1 && x->shape.w == 1),
          name + ": NHWC input must be [N, C, 1, 1] (flattening order)");
  const int in_features = static_cast<int>(x->shape.per_sample());
  const int w = params_.add(name + ".weight", Shape{out_features, in_features, 1, 1}, true, false,
                            weight);
  const int b = params_.add(name + ".bias", Shape{out_features, 1, 1, 1}, true, false, bias);
  Value* y = new_value(name, Shape{x->shape.n, out_features, 1, 1});
  push(make_linear(w, b), {x}, y);
  return y;
}

std::size_t Network::plan() {
  require(input_ != nullptr && output_ != nullptr, "network has no input or output");
  std::set<const Value*> written;
  written.insert(output_);  // the loss writes the logits' gradient
  for (auto it = layers_.rbegin(); it != layers_.rend(); ++it) {
    Layer& l = **it;
    for (std::size_t i = 0; i < l.inputs.size(); ++i) {
      const Value* v = l.inputs[i];
      if (!v->needs_grad) continue;
      l.accumulate[i] = written.count(v) > 0;
      written.insert(v);
    }
  }
  std::size_t off = 0;
  for (auto& v : values_) {
    v->data_offset = off;
    off += align_up(v->bytes());
    if (v->needs_grad) {
      v->grad_offset = off;
      off += align_up(v->bytes());
    }
  }
  arena_bytes_ = off;
  params_.plan();
  return arena_bytes_;
}

void Network::allocate() {
  arena_ = gpu::DeviceBuffer(arena_bytes_);
  GB_CHECK_CUDA(cudaMemset(arena_.data(), 0, arena_bytes_));
  // The memset runs on the legacy stream, which the engine's non-blocking stream does not wait
  // for: finish it before any layer reads the zeros.
  GB_CHECK_CUDA(cudaDeviceSynchronize());
  auto* base = arena_.as<unsigned char>();
  for (auto& v : values_) {
    v->data = base + v->data_offset;
    v->grad = v->needs_grad ? base + v->grad_offset : nullptr;
  }
  params_.allocate();
}

std::size_t Network::setup(Context& ctx) {
  ctx.params = &params_;
  std::size_t ws = 0;
  for (auto& l : layers_) ws = std::max(ws, l->setup(ctx));
  return ws;
}

// GPUBASE_NN_PROFILE=N: GPU time of every layer's forward and backward, from events around each
// call, summed over the eager training steps 3 .. N+2 of this network and printed on stderr
// (most expensive first, grouped by what describe() says), with the host time of the calls
// themselves (a layer whose host time exceeds its GPU time starves the GPU when run eagerly).
// For finding the slow layer of a model; off unless asked, and never inside a graph capture.
class LayerProfile {
 public:
  static std::shared_ptr<LayerProfile> from_environment(std::string title) {
    const char* v = std::getenv("GPUBASE_NN_PROFILE");
    if (!v || std::atoi(v) <= 0) return nullptr;
    return std::shared_ptr<LayerProfile>(new LayerProfile(std::atoi(v), std::move(title)));
  }
  bool done() const { return done_; }
  bool on(cudaStream_t stream) const {
    if (steps_ <= 0 || done_) return false;
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    return cudaStreamIsCapturing(stream, &st) == cudaSuccess && st == cudaStreamCaptureStatusNone;
  }
  // Call right before the first layer call (`what` = "start") and right after every one.
  void mark(cudaStream_t stream, const std::string& what) {
    const auto now = std::chrono::steady_clock::now();
    if (!marks_.empty() && seen_ >= 2)
      host_[what] += std::chrono::duration<double, std::milli>(now - last_host_).count();
    cudaEvent_t e = nullptr;
    cudaEventCreate(&e);
    cudaEventRecord(e, stream);
    marks_.push_back({what, e});
    last_host_ = std::chrono::steady_clock::now();  // describe() and the event calls excluded
  }
  // After a backward pass: sum the intervals of this step and print once enough were seen.
  void step_done(cudaStream_t stream) {
    cudaStreamSynchronize(stream);
    for (std::size_t i = 0; i + 1 < marks_.size(); ++i) {
      float ms = 0;
      cudaEventElapsedTime(&ms, marks_[i].second, marks_[i + 1].second);
      if (seen_ >= 2) total_[marks_[i + 1].first] += ms;
    }
    for (auto& [w, e] : marks_) cudaEventDestroy(e);
    marks_.clear();
    if (++seen_ < steps_ + 2) return;
    done_ = true;
    std::vector<std::pair<double, std::string>> rows;
    double sum = 0, host_sum = 0;
    for (const auto& [w, ms] : total_) {
      rows.push_back({ms / steps_, w});
      sum += ms / steps_;
      host_sum += host_[w] / steps_;
    }
    std::sort(rows.rbegin(), rows.rend());
    std::fprintf(stderr,
                 "gpubase: %s: GPU time per step by layer (mean of %d steps), %.2f ms in all "
                 "(host: %.2f ms of layer calls)\n      GPU ms  share    host ms  layer\n",
                 title_.c_str(), steps_, sum, host_sum);
    for (std::size_t i = 0; i < rows.size() && i < 40; ++i)
      std::fprintf(stderr, "  %10.3f  %5.1f %%  %9.3f  %s\n", rows[i].first,
                   100 * rows[i].first / sum, host_[rows[i].second] / steps_,
                   rows[i].second.c_str());
  }

 private:
  LayerProfile(int steps, std::string title) : steps_(steps), title_(std::move(title)) {}
  int steps_ = 0, seen_ = 0;
  std::string title_;
  bool done_ = false;
  std::vector<std::pair<std::string, cudaEvent_t>> marks_;
  std::map<std::string, double> total_, host_;
  std::chrono::steady_clock::time_point last_host_;
};

namespace {
bool profile_asked() {
  static const bool asked = [] {
    const char* v = std::getenv("GPUBASE_NN_PROFILE");
    return v != nullptr && std::atoi(v) > 0;
  }();
  return asked;
}
}  // namespace

bool Network::profiling() const { return profile_asked() && (!profile_ || !profile_->done()); }

void Network::forward(Context& ctx, bool training) {
  const bool asked = profile_asked();
  if (asked && !profile_ && !layers_.empty())
    profile_ = LayerProfile::from_environment(std::string(to_string(ctx.precision)) + ", " +
                                              std::to_string(layers_.size()) + " layers, batch " +
                                              std::to_string(batch_));
  const bool profile = training && profile_ && profile_->on(ctx.stream);
  if (profile) profile_->mark(ctx.stream, "start");
  for (auto& l : layers_) {
    l->forward(ctx, training);
    if (profile) profile_->mark(ctx.stream, "fwd " + l->describe());
  }
}

void Network::backward(Context& ctx) {
  const bool profile = profile_ && profile_->on(ctx.stream);
  for (auto it = layers_.rbegin(); it != layers_.rend(); ++it) {
    (*it)->backward(ctx);
    if (profile) profile_->mark(ctx.stream, "bwd " + (*it)->describe());
  }
  if (profile) profile_->step_done(ctx.stream);
}

}  // namespace gb::nn
