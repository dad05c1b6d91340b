// nn/linear.cpp: the fully connected layer on cuBLASLt, y = x W^T + b, with x [N, in] and
// W [out, in] row-major (PyTorch's layout). Row-major matrices are read as their column-major
// transposes, so the three GEMMs are (column-major, m x n x k):
//   forward          Y^T (out x N)  = op_T(W^T) * X^T           out x N x in, epilogue BIAS
//   backward data    dX^T (in x N)  = W^T * dY^T                 in x N x out (beta 1 to add)
//   backward weight  dW^T (in x out) = X^T * op_T(dY^T)          in x out x N, epilogue BGRADB:
//                    the bias gradient (sum of dY over the batch) comes out of the same GEMM
// If cuBLASLt has no BGRADB kernel for the types at hand, the weight GEMM runs without epilogue
// and bias_grad() (kernels.hpp) sums the columns. Compute: FP32 = CUBLAS_COMPUTE_32F (no TF32),
// TF32 = CUBLAS_COMPUTE_32F_FAST_TF32, FP16/BF16 = CUBLAS_COMPUTE_32F with 16-bit storage (bias
// stored in the same 16-bit type: cuBLASLt's default bias type for these outputs).
#include <string>

#include "core/error.hpp"
#include "gpu/check.hpp"
#include "nn/network.hpp"

namespace gb::nn {
namespace {

constexpr std::size_t kMaxLtWorkspace = 32u << 20;

cudaDataType_t cuda_type(ElementType t) {
  switch (t) {
    case ElementType::f32: return CUDA_R_32F;
    case ElementType::f16: return CUDA_R_16F;
    case ElementType::bf16: return CUDA_R_16BF;
    default: unsupported_element_type(t, "nn::Linear");
  }
}

class LtDesc : public gpu::UniqueHandle<cublasLtMatmulDesc_t, LtDesc> {
 public:
  static void destroy(cublasLtMatmulDesc_t d) noexcept {
    GB_CHECK_CUBLAS_NOTHROW(cublasLtMatmulDescDestroy(d));
  }
  using UniqueHandle::UniqueHandle;
};
class LtLayout : public gpu::UniqueHandle<cublasLtMatrixLayout_t, LtLayout> {
 public:
  static void destroy(cublasLtMatrixLayout_t l) noexcept {
    GB_CHECK_CUBLAS_NOTHROW(cublasLtMatrixLayoutDestroy(l));
  }
  using UniqueHandle::UniqueHandle;
};
class LtPreference : public gpu::UniqueHandle<cublasLtMatmulPreference_t, LtPreference> {
 public:
  static void destroy(cublasLtMatmulPreference_t p) noexcept {
    GB_CHECK_CUBLAS_NOTHROW(cublasLtMatmulPreferenceDestroy(p));
  }
  using UniqueHandle::UniqueHandle;
};

LtLayout make_layout(cudaDataType_t t, int rows, int cols, int ld) {
  cublasLtMatrixLayout_t l{};
  GB_CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&l, t, static_cast<std::uint64_t>(rows),
                                             static_cast<std::uint64_t>(cols), ld));
  return LtLayout(l);
}

// One GEMM D = alpha op(A) op(B) + beta D, column-major, with its algorithm chosen once.
struct LtGemm {
  LtDesc desc;
  LtLayout a, b, d;
  cublasLtMatmulAlgo_t algo{};
  std::size_t workspace = 0;

  // False when cuBLASLt offers no algorithm (e.g. an epilogue it does not have for these types).
  bool init(cublasLtHandle_t lt, cublasComputeType_t compute, cudaDataType_t type, bool trans_a,
            bool trans_b, int m, int n, int k, int lda, int ldb, int ldd,
            cublasLtEpilogue_t epilogue, const void* bias, std::size_t max_ws) {
    cublasLtMatmulDesc_t dd{};
    GB_CHECK_CUBLAS(cublasLtMatmulDescCreate(&dd, compute, CUDA_R_32F));
    desc = LtDesc(dd);
    const cublasOperation_t ta = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t tb = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    GB_CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(dd, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    GB_CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(dd, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    GB_CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(dd, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                                   sizeof epilogue));
    if (bias) {
      GB_CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(dd, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                     sizeof bias));
    }
    a = make_layout(type, trans_a ? k : m, trans_a ? m : k, lda);
    b = make_layout(type, trans_b ? n : k, trans_b ? k : n, ldb);
    d = make_layout(type, m, n, ldd);
    cublasLtMatmulPreference_t pp{};
    GB_CHECK_CUBLAS(cublasLtMatmulPreferenceCreate(&pp));
    LtPreference pref(pp);
    GB_CHECK_CUBLAS(cublasLtMatmulPreferenceSetAttribute(
        pp, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_ws, sizeof max_ws));
    cublasLtMatmulHeuristicResult_t result{};
    int got = 0;
    const cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(lt, dd, a.get(), b.get(), d.get(),
                                                            d.get(), pp, 1, &result, &got);
    if (s != CUBLAS_STATUS_SUCCESS || got == 0 || result.state != CUBLAS_STATUS_SUCCESS) {
      return false;
    }
    algo = result.algo;
    workspace = result.workspaceSize;
    return true;
  }

  void run(Context& ctx, const void* pa, const void* pb, void* pd, float beta) const {
    const float alpha = 1.f;
    GB_CHECK_CUBLAS(cublasLtMatmul(ctx.lt, desc.get(), &alpha, pa, a.get(), pb, b.get(), &beta,
                                   pd, d.get(), pd, d.get(), &algo, ctx.workspace,
                                   ctx.workspace_bytes, ctx.stream));
  }
};

class Linear final : public Layer {
 public:
  Linear(int weight, int bias) : w_(weight), b_(bias) {}

  std::string describe() const override {
    return "linear " + std::to_string(in_) + " -> " + std::to_string(out_) +
           (fused_bias_grad_ ? " (bias grad in BGRADB epilogue)" : "");
  }

  std::size_t setup(Context& ctx) override {
    const Value* x = inputs[0];
    ParamStore& ps = *ctx.params;
    n_ = x->shape.n;
    in_ = static_cast<int>(x->shape.per_sample());
    out_ = output->shape.c;
    dtype_ = x->dtype;
    if (ps.compute_dtype(w_) != dtype_) {
      throw Error(ErrorKind::runtime, "linear: weights and activations differ in type");
    }
    const cudaDataType_t t = cuda_type(dtype_);
    const cublasComputeType_t compute =
        ctx.precision == Precision::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    if (!fwd_.init(ctx.lt, compute, t, true, false, out_, n_, in_, in_, in_, out_,
                   CUBLASLT_EPILOGUE_BIAS, ps.weight(b_), kMaxLtWorkspace)) {
      throw Error(ErrorKind::runtime, "cuBLASLt offers no GEMM with a bias epilogue for " +
                                          describe() + " in " + dtype_name(dtype_));
    }
    if (x->needs_grad &&
        !bwd_data_.init(ctx.lt, compute, t, false, false, in_, n_, out_, in_, out_, in_,
                        CUBLASLT_EPILOGUE_DEFAULT, nullptr, kMaxLtWorkspace)) {
      throw Error(ErrorKind::runtime, "cuBLASLt offers no GEMM for the data gradient of " +
                                          describe());
    }
    fused_bias_grad_ = bwd_weight_.init(ctx.lt, compute, t, false, true, in_, out_, n_, in_,
                                        out_, in_, CUBLASLT_EPILOGUE_BGRADB, ps.grad(b_),
                                        kMaxLtWorkspace);
    if (!fused_bias_grad_ &&
        !bwd_weight_.init(ctx.lt, compute, t, false, true, in_, out_, n_, in_, out_, in_,
                          CUBLASLT_EPILOGUE_DEFAULT, nullptr, kMaxLtWorkspace)) {
      throw Error(ErrorKind::runtime, "cuBLASLt offers no GEMM for the weight gradient of " +
                                          describe());
    }
    std::size_t ws = fwd_.workspace;
    if (bwd_data_.workspace > ws) ws = bwd_data_.workspace;
    if (bwd_weight_.workspace > ws) ws = bwd_weight_.workspace;
    return ws;
  }

  void forward(Context& ctx, bool) override {
    fwd_.run(ctx, ctx.params->weight(w_), inputs[0]->data, output->data, 0.f);
  }

  void backward(Context& ctx) override {
    Value* x = inputs[0];
    ParamStore& ps = *ctx.params;
    if (x->needs_grad) {
      bwd_data_.run(ctx, ps.weight(w_), output->grad, x->grad, accumulate[0] ? 1.f : 0.f);
    }
    bwd_weight_.run(ctx, x->data, output->grad, ps.grad(w_), 0.f);
    if (!fused_bias_grad_) bias_grad(output->grad, ps.grad(b_), n_, out_, dtype_, ctx.stream);
  }

 private:
  int w_, b_;
  int n_ = 0, in_ = 0, out_ = 0;
  ElementType dtype_ = ElementType::f32;
  bool fused_bias_grad_ = false;
  LtGemm fwd_, bwd_data_, bwd_weight_;
};

}  // namespace

std::unique_ptr<Layer> make_linear(int weight_id, int bias_id) {
  return std::make_unique<Linear>(weight_id, bias_id);
}

}  // namespace gb::nn
