// nn/batchnorm.cpp: spatial batch normalization with an optional residual add and activation
// after it, y = act(BN(x) + z), training (batch statistics, running statistics updated with
// PyTorch's momentum 0.1 and unbiased variance, as cuDNN keeps them) and inference (running
// statistics).
//
// Fusion: in NHWC FP16/BF16 with ReLU, training uses cudnnBatchNormalizationForwardTrainingEx /
// BackwardEx with CUDNN_BATCHNORM_OPS_BN_ACTIVATION or _BN_ADD_ACTIVATION (the residual add and
// ReLU of ResNet's blocks in the same kernel, and dz written by the backward kernel): that is
// where PyTorch's channels_last speed comes from. cuDNN supports this only for some
// layouts/types/channel counts, so setup() asks for the workspace sizes and then runs the fused
// forward and backward once on the layer's own (zeroed) buffers, with an averaging factor of 0
// so the running statistics do not move; if cuDNN refuses, the layer falls back to the plain
// cuDNN batch norm plus the act_forward / act_backward kernels (kernels.hpp), in place on y and
// dy. The fused backward writes dz (it cannot add), so fusion also requires this layer to be the
// first to write the residual's gradient (Network orders that; ResNet's blocks satisfy it).
// Every other NHWC FP16/BF16 batch norm (no activation, ReLU6, a residual add without ReLU) also
// goes through the Ex functions, with CUDNN_BATCHNORM_OPS_BN, and the activation kernels after
// it: the plain cudnnBatchNormalizationForwardTraining / Backward take 20-30 ms for one
// 256x256x56x56 FP16 NHWC tensor on an H200 (bench/NOTES.md t1), the Ex ones about 1 ms.
// Mode: CUDNN_BATCHNORM_SPATIAL_PERSISTENT in NHWC reduced precision (if a probe run at setup
// succeeds), CUDNN_BATCHNORM_SPATIAL otherwise (and always for inference).
#include <cstdlib>
#include <vector>

#include "core/error.hpp"
#include "nn/cudnn_desc.hpp"
#include "nn/network.hpp"

namespace gb::nn {
namespace {

const float kOne = 1.f, kZero = 0.f;
constexpr double kEps = 1e-5;
constexpr double kMomentum = 0.1;

class BatchNorm final : public Layer {
 public:
  BatchNorm(int gamma, int beta, Act act, bool residual)
      : gamma_(gamma), beta_(beta), act_(act), residual_(residual) {}

  std::string describe() const override {
    return std::string("batchnorm ") + inputs[0]->shape.to_string() + (residual_ ? " +add" : "") +
           (act_ == Act::relu ? " +relu" : act_ == Act::relu6 ? " +relu6" : "") +
           (fused_ ? (post_act() ? " (cuDNN Ex)" : " (cuDNN fused)") : "");
  }

  std::size_t setup(Context& ctx) override {
    const Value* x = inputs[0];
    const int c = x->shape.c;
    xd_ = TensorDesc::create(x->shape, x->dtype, x->nhwc);
    pd_ = TensorDesc::per_channel(c);
    mode_ = (x->nhwc && x->dtype != ElementType::f32) ? CUDNN_BATCHNORM_SPATIAL_PERSISTENT
                                                : CUDNN_BATCHNORM_SPATIAL;
    stats_ = gpu::DeviceBuffer(4 * static_cast<std::size_t>(c) * sizeof(float));
    ctx.extra_bytes += stats_.bytes();
    std::vector<float> init(4 * static_cast<std::size_t>(c), 0.f);
    for (int i = 0; i < c; ++i) init[static_cast<std::size_t>(c + i)] = 1.f;  // running var
    GB_CHECK_CUDA(cudaMemcpy(stats_.data(), init.data(), stats_.bytes(), cudaMemcpyHostToDevice));
    GB_CHECK_CUDA(cudaDeviceSynchronize());  // before the probes on the (non-blocking) stream

    if (mode_ == CUDNN_BATCHNORM_SPATIAL_PERSISTENT && !persistent_runs(ctx)) {
      mode_ = CUDNN_BATCHNORM_SPATIAL;
    }
    std::size_t ws = 0;
    // The fused residual add writes dz (it cannot add into it): only for the first writer.
    fused_ = ctx.allow_bn_fusion && x->nhwc && x->dtype != ElementType::f32 &&
             !(act_ == Act::relu && residual_ && accumulate[1]);
    if (fused_) fused_ = try_fusion(ctx, &ws);
    return fused_ ? ws : 0;
  }

  void forward(Context& ctx, bool training) override {
    const Value* x = inputs[0];
    ParamStore& ps = *ctx.params;
    if (training && fused_) {
      GB_CHECK_CUDNN(run_fused_forward(ctx, kMomentum));
      if (post_act())
        act_forward(output->data, residual_ ? inputs[1]->data : nullptr, output->data,
                    output->shape.elements(), output->dtype, act_, ctx.stream);
      return;
    }
    if (training) {
      GB_CHECK_CUDNN(cudnnBatchNormalizationForwardTraining(
          ctx.cudnn, mode_, &kOne, &kZero, xd_.get(), x->data, xd_.get(), output->data, pd_.get(),
          ps.weight(gamma_), ps.weight(beta_), kMomentum, running_mean(), running_var(), kEps,
          save_mean(), save_inv_std()));
    } else {
      GB_CHECK_CUDNN(cudnnBatchNormalizationForwardInference(
          ctx.cudnn, CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero, xd_.get(), x->data, xd_.get(),
          output->data, pd_.get(), ps.weight(gamma_), ps.weight(beta_), running_mean(),
          running_var(), kEps));
    }
    if (act_ != Act::none || residual_) {
      act_forward(output->data, residual_ ? inputs[1]->data : nullptr, output->data,
                  output->shape.elements(), output->dtype, act_, ctx.stream);
    }
  }

  void backward(Context& ctx) override {
    Value* x = inputs[0];
    ParamStore& ps = *ctx.params;
    if (fused_) {
      if (post_act())
        act_backward(act_ == Act::none ? nullptr : output->data, output->grad, output->grad, false,
                     residual_ ? inputs[1]->grad : nullptr, residual_ && accumulate[1],
                     output->shape.elements(), output->dtype, act_, ctx.stream);
      GB_CHECK_CUDNN(run_fused_backward(ctx));
      return;
    }
    if (act_ != Act::none || residual_) {
      // dy <- dy * act'(y) in place; the residual's gradient is that same value.
      act_backward(act_ == Act::none ? nullptr : output->data, output->grad, output->grad, false,
                   residual_ ? inputs[1]->grad : nullptr, residual_ && accumulate[1],
                   output->shape.elements(), output->dtype, act_, ctx.stream);
    }
    GB_CHECK_CUDNN(cudnnBatchNormalizationBackward(
        ctx.cudnn, mode_, &kOne, accumulate[0] ? &kOne : &kZero, &kOne, &kZero, xd_.get(),
        x->data, xd_.get(), output->grad, xd_.get(), x->grad, pd_.get(), ps.weight(gamma_),
        ps.grad(gamma_), ps.grad(beta_), kEps, save_mean(), save_inv_std()));
  }

  std::pair<float*, float*> running_stats() const override {
    return {running_mean(), running_var()};
  }

 private:
  float* running_mean() const { return stats_.as<float>(); }
  float* running_var() const { return stats_.as<float>() + channels(); }
  int channels() const { return inputs[0]->shape.c; }
  float* save_mean() const { return stats_.as<float>() + 2 * channels(); }
  float* save_inv_std() const { return stats_.as<float>() + 3 * channels(); }
  // cuDNN fuses ReLU (and the residual add before it); anything else runs as OPS_BN with the
  // activation kernels after it (post_act).
  bool post_act() const { return act_ != Act::relu && (act_ != Act::none || residual_); }
  cudnnBatchNormOps_t ops() const {
    if (act_ != Act::relu) return CUDNN_BATCHNORM_OPS_BN;
    return residual_ ? CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION : CUDNN_BATCHNORM_OPS_BN_ACTIVATION;
  }
  bool fused_residual() const { return residual_ && act_ == Act::relu; }

  cudnnStatus_t run_fused_forward(Context& ctx, double factor) {
    const Value* x = inputs[0];
    ParamStore& ps = *ctx.params;
    return cudnnBatchNormalizationForwardTrainingEx(
        ctx.cudnn, mode_, ops(), &kOne, &kZero, xd_.get(), x->data,
        fused_residual() ? xd_.get() : nullptr, fused_residual() ? inputs[1]->data : nullptr,
        xd_.get(),
        output->data, pd_.get(), ps.weight(gamma_), ps.weight(beta_), factor, running_mean(),
        running_var(), kEps, save_mean(), save_inv_std(), act_desc_.get(), ctx.workspace,
        ctx.workspace_bytes, reserve_.data(), reserve_.bytes());
  }

  cudnnStatus_t run_fused_backward(Context& ctx) {
    Value* x = inputs[0];
    ParamStore& ps = *ctx.params;
    return cudnnBatchNormalizationBackwardEx(
        ctx.cudnn, mode_, ops(), &kOne, accumulate[0] ? &kOne : &kZero, &kOne, &kZero, xd_.get(),
        x->data, xd_.get(), output->data, xd_.get(), output->grad,
        fused_residual() ? xd_.get() : nullptr, fused_residual() ? inputs[1]->grad : nullptr,
        xd_.get(),
        x->grad, pd_.get(), ps.weight(gamma_), ps.weight(beta_), ps.grad(gamma_),
        ps.grad(beta_), kEps, save_mean(), save_inv_std(), act_desc_.get(), ctx.workspace,
        ctx.workspace_bytes, reserve_.data(), reserve_.bytes());
  }

  // Whether cuDNN runs the plain training forward in persistent mode for this shape and type
  // (averaging factor 0: the running statistics do not move).
  bool persistent_runs(Context& ctx) {
    const Value* x = inputs[0];
    ParamStore& ps = *ctx.params;
    const bool ok = cudnnBatchNormalizationForwardTraining(
                        ctx.cudnn, mode_, &kOne, &kZero, xd_.get(), x->data, xd_.get(),
                        output->data, pd_.get(), ps.weight(gamma_), ps.weight(beta_), 0.0,
                        running_mean(), running_var(), kEps, save_mean(),
                        save_inv_std()) == CUDNN_STATUS_SUCCESS;
    return cudaStreamSynchronize(ctx.stream) == cudaSuccess && ok;
  }

  // Sizes the fused path and runs it once; false (and no state kept) when cuDNN refuses.
  bool try_fusion(Context& ctx, std::size_t* ws) {
    if (act_ == Act::relu) act_desc_ = ActivationDesc::relu();
    const cudnnTensorDescriptor_t zd = fused_residual() ? xd_.get() : nullptr;
    std::size_t fwd_ws = 0, bwd_ws = 0, reserve = 0;
    if (cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize(
            ctx.cudnn, mode_, ops(), xd_.get(), zd, xd_.get(), pd_.get(), act_desc_.get(),
            &fwd_ws) != CUDNN_STATUS_SUCCESS ||
        cudnnGetBatchNormalizationBackwardExWorkspaceSize(
            ctx.cudnn, mode_, ops(), xd_.get(), xd_.get(), xd_.get(), zd, xd_.get(), pd_.get(),
            act_desc_.get(), &bwd_ws) != CUDNN_STATUS_SUCCESS ||
        cudnnGetBatchNormalizationTrainingExReserveSpaceSize(
            ctx.cudnn, mode_, ops(), act_desc_.get(), xd_.get(), &reserve) != CUDNN_STATUS_SUCCESS) {
      return false;
    }
    const std::size_t need = fwd_ws > bwd_ws ? fwd_ws : bwd_ws;
    if (need > ctx.workspace_bytes) return false;
    reserve_ = gpu::DeviceBuffer(reserve);
    bool ok = run_fused_forward(ctx, 0.0) == CUDNN_STATUS_SUCCESS &&
              run_fused_backward(ctx) == CUDNN_STATUS_SUCCESS;
    ok = ok && cudaStreamSynchronize(ctx.stream) == cudaSuccess;
    if (!ok || std::getenv("GPUBASE_NN_NO_BN_FUSION") != nullptr) {
      reserve_ = gpu::DeviceBuffer();
      act_desc_.reset();
      return false;
    }
    ctx.extra_bytes += reserve_.bytes();
    *ws = need;
    return true;
  }

  int gamma_, beta_;
  Act act_;
  bool residual_;
  bool fused_ = false;
  cudnnBatchNormMode_t mode_ = CUDNN_BATCHNORM_SPATIAL;
  TensorDesc xd_, pd_;
  ActivationDesc act_desc_;
  gpu::DeviceBuffer stats_, reserve_;
};

}  // namespace

std::unique_ptr<Layer> make_batchnorm(int gamma_id, int beta_id, Act act, bool has_residual) {
  return std::make_unique<BatchNorm>(gamma_id, beta_id, act, has_residual);
}

}  // namespace gb::nn
