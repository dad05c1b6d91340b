// nn/elementwise.cpp: the layers built on the engine's own kernels (kernels.hpp): a standalone
// activation (ReLU / ReLU6), the residual add (with an optional activation after it), and
// global average pooling. Batch norm fuses its own activation/add (batchnorm.cpp); these are for
// the places where nothing precedes them to fuse with.
#include <string>

#include "nn/network.hpp"

namespace gb::nn {
namespace {

const char* act_name(Act a) { return a == Act::relu ? "relu" : a == Act::relu6 ? "relu6" : "none"; }

class Activation final : public Layer {
 public:
  explicit Activation(Act act) : act_(act) {}
  std::string describe() const override {
    return std::string(act_name(act_)) + " " + output->shape.to_string();
  }
  void forward(Context& ctx, bool) override {
    act_forward(inputs[0]->data, nullptr, output->data, output->shape.elements(), output->dtype,
                act_, ctx.stream);
  }
  void backward(Context& ctx) override {
    Value* x = inputs[0];
    if (!x->needs_grad) return;
    act_backward(output->data, output->grad, x->grad, accumulate[0], nullptr, false,
                 output->shape.elements(), output->dtype, act_, ctx.stream);
  }

 private:
  Act act_;
};

class Add final : public Layer {
 public:
  explicit Add(Act act) : act_(act) {}
  std::string describe() const override {
    return std::string("add+") + act_name(act_) + " " + output->shape.to_string();
  }
  void forward(Context& ctx, bool) override {
    act_forward(inputs[0]->data, inputs[1]->data, output->data, output->shape.elements(),
                output->dtype, act_, ctx.stream);
  }
  void backward(Context& ctx) override {
    Value* a = inputs[0];
    Value* b = inputs[1];
    const bool ga = a->needs_grad, gb = b->needs_grad;
    if (!ga && !gb) return;
    // g = dy * act'(y) goes to both inputs.
    act_backward(act_ == Act::none ? nullptr : output->data, output->grad,
                 ga ? a->grad : b->grad, ga ? accumulate[0] : accumulate[1],
                 ga && gb ? b->grad : nullptr, accumulate[1], output->shape.elements(),
                 output->dtype, act_, ctx.stream);
  }

 private:
  Act act_;
};

class GlobalAvgPool final : public Layer {
 public:
  std::string describe() const override {
    return "global_avgpool " + inputs[0]->shape.to_string();
  }
  void forward(Context& ctx, bool) override {
    const Value* x = inputs[0];
    global_avgpool_forward(x->data, output->data, x->shape, x->nhwc, x->dtype, ctx.stream);
  }
  void backward(Context& ctx) override {
    Value* x = inputs[0];
    if (!x->needs_grad) return;
    global_avgpool_backward(output->grad, x->grad, accumulate[0], x->shape, x->nhwc, x->dtype,
                            ctx.stream);
  }
};

}  // namespace

std::unique_ptr<Layer> make_activation(Act act) { return std::make_unique<Activation>(act); }
std::unique_ptr<Layer> make_add(Act act) { return std::make_unique<Add>(act); }
std::unique_ptr<Layer> make_global_avgpool() { return std::make_unique<GlobalAvgPool>(); }

}  // namespace gb::nn
