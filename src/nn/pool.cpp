// nn/pool.cpp: max and average pooling windows on cuDNN (ResNet's 3x3/2 stem pooling). Max
// pooling uses CUDNN_POOLING_MAX_DETERMINISTIC; average pooling counts the padding
// (CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING, PyTorch's default count_include_pad=True).
// Global average pooling has its own kernel (elementwise.cpp).
#include <string>

#include "nn/cudnn_desc.hpp"
#include "nn/network.hpp"

namespace gb::nn {
namespace {

const float kOne = 1.f, kZero = 0.f;

class Pool final : public Layer {
 public:
  explicit Pool(const PoolSpec& spec) : spec_(spec) {}

  std::string describe() const override {
    return std::string(spec_.kind == PoolKind::max ? "maxpool " : "avgpool ") +
           inputs[0]->shape.to_string() + " -> " + output->shape.to_string();
  }

  std::size_t setup(Context&) override {
    const Value* x = inputs[0];
    xd_ = TensorDesc::create(x->shape, x->dtype, x->nhwc);
    yd_ = TensorDesc::create(output->shape, output->dtype, output->nhwc);
    cudnnPoolingDescriptor_t d{};
    GB_CHECK_CUDNN(cudnnCreatePoolingDescriptor(&d));
    pd_ = PoolDesc(d);
    GB_CHECK_CUDNN(cudnnSetPooling2dDescriptor(
        d,
        spec_.kind == PoolKind::max ? CUDNN_POOLING_MAX_DETERMINISTIC
                                    : CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING,
        CUDNN_NOT_PROPAGATE_NAN, spec_.kernel_h, spec_.kernel_w, spec_.pad_h, spec_.pad_w,
        spec_.stride_h, spec_.stride_w));
    return 0;
  }

  void forward(Context& ctx, bool) override {
    GB_CHECK_CUDNN(cudnnPoolingForward(ctx.cudnn, pd_.get(), &kOne, xd_.get(), inputs[0]->data,
                                       &kZero, yd_.get(), output->data));
  }

  void backward(Context& ctx) override {
    Value* x = inputs[0];
    if (!x->needs_grad) return;
    GB_CHECK_CUDNN(cudnnPoolingBackward(ctx.cudnn, pd_.get(), &kOne, yd_.get(), output->data,
                                        yd_.get(), output->grad, xd_.get(), x->data,
                                        accumulate[0] ? &kOne : &kZero, xd_.get(), x->grad));
  }

 private:
  PoolSpec spec_;
  TensorDesc xd_, yd_;
  PoolDesc pd_;
};

}  // namespace

std::unique_ptr<Layer> make_pool(const PoolSpec& spec) { return std::make_unique<Pool>(spec); }

}  // namespace gb::nn
