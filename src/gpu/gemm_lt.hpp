// gpu/gemm_lt.hpp: one GEMM shape and precision through cuBLASLt: the descriptors, the
// heuristic's candidate algorithms, running one of them, and checking the answer on the host.
//
// Layouts (GemmLayout, gpu/host_numeric.hpp), both column-major with D (m x n, ld m) = op(A) * B,
// B stored k x n (ld k), C = D, beta = 0, alpha = 1:
//   TN: A stored k x m (ld k), op(A) = A^T: both operands contiguous along k. The layout FP8 and
//       INT8 tensor-core kernels require on Hopper and the cheapest one to check on the host.
//   NN: A stored m x k (ld m), op(A) = A: what PyTorch's row-major C = X @ Y becomes (cuBLAS
//       computes C^T = Y^T X^T, both operations N, on the column-major view of the same memory).
// cuBLASLt may offer different (and differently fast) kernels for the two, so the probe asks for
// both where both are allowed (layout_allowed) and keeps the faster.
//
// Precisions (storage of A/B -> C/D, compute mode):
//   fp64  f64  -> f64,  CUBLAS_COMPUTE_64F            (FP64 tensor cores where the card has them)
//   fp32  f32  -> f32,  CUBLAS_COMPUTE_32F_PEDANTIC   (no TF32 or other down-conversion)
//   tf32  f32  -> f32,  CUBLAS_COMPUTE_32F_FAST_TF32
//   fp16  f16  -> f16,  CUBLAS_COMPUTE_32F            (FP32 accumulation)
//   bf16  bf16 -> bf16, CUBLAS_COMPUTE_32F
//   fp8   e4m3 -> bf16, CUBLAS_COMPUTE_32F            (per-tensor scales left at their default 1)
//   int8  i8   -> i32,  CUBLAS_COMPUTE_32I            (alpha/beta int32)
// FP8 and INT8 kernels want m, n, k and the leading dimensions to be multiples of 16; other
// shapes may get no algorithm (algorithms() returns an empty list).
#pragma once
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/gpu_specs.hpp"
#include "gpu/cuda_raii.hpp"
#include "gpu/host_numeric.hpp"

namespace gb::gpu {

struct GemmShape {
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  double flop() const {  // one multiply-add = 2 FLOP (or 2 integer OP)
    return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  }
  std::string to_string() const;  // "8192x8192x1024"
};

struct GemmTypes {
  ElementType ab;  // A and B as stored
  ElementType cd;  // C and D
  cudaDataType_t ab_cuda;
  cudaDataType_t cd_cuda;
  cudaDataType_t scale_cuda;  // type of alpha and beta
  cublasComputeType_t compute;
};
GemmTypes gemm_types(GemmPrecision p);
const char* compute_type_name(cublasComputeType_t c);  // "CUBLAS_COMPUTE_32F_PEDANTIC"
// "A/B bf16, C/D bf16, CUBLAS_COMPUTE_32F"
std::string describe_types(const GemmTypes& t);

// Why this precision cannot run on a device of this compute capability, or nullopt when it can
// (cuBLASLt may still offer no algorithm; that is reported separately).
std::optional<std::string> gemm_unsupported_reason(GemmPrecision p, int cc_major, int cc_minor);

struct GemmOptions {
  std::optional<cublasComputeType_t> compute;  // overrides gemm_types(p).compute
  bool fp8_fast_accum = false;  // CUBLASLT_MATMUL_DESC_FAST_ACCUM (FP8 only; default off)
  GemmLayout layout = GemmLayout::tn;  // nn throws for FP8 and INT8 (layout_allowed)
};

// "TN column-major: A stored k x m (transposed), B k x n, D m x n; alpha 1, beta 0" or the NN
// counterpart.
std::string describe_layout(GemmLayout l);

// One candidate from cublasLtMatmulAlgoGetHeuristic and the configuration it encodes.
struct GemmAlgo {
  cublasLtMatmulAlgo_t algo{};
  int heuristic_rank = 0;  // 0 = the heuristic's first choice
  std::size_t workspace_bytes = 0;
  float waves = 0;  // the heuristic's estimate of waves of thread blocks over the SMs
  // Configuration attributes (CUBLASLT_ALGO_CONFIG_*; enum values from cublasLt.h); -1 when
  // this cuBLASLt does not report one.
  std::int64_t id = -1, tile = -1, stages = -1, split_k = -1, reduction = -1, swizzle = -1,
               custom = -1, cluster = -1;
  // "id 66, tile 41, stages 20, cluster 3, split-k 1, swizzle 0, custom 0, workspace 4194304 B"
  std::string describe() const;
};

class GemmLt {
 public:
  GemmLt(cublasLtHandle_t handle, GemmPrecision p, GemmShape shape, GemmOptions options = {});

  // Up to max_count candidates that need at most max_workspace_bytes, in the heuristic's order
  // (fastest estimate first). Empty when cuBLASLt has none for this problem.
  std::vector<GemmAlgo> algorithms(std::size_t max_workspace_bytes, int max_count) const;

  // Enqueues D = op(A) * B on `stream`. try_run returns cuBLASLt's status (a candidate may
  // refuse to run); run throws on failure.
  cublasStatus_t try_run(const GemmAlgo& algo, const void* a, const void* b, void* d,
                         void* workspace, std::size_t workspace_bytes, cudaStream_t stream) const;
  void run(const GemmAlgo& algo, const void* a, const void* b, void* d, void* workspace,
           std::size_t workspace_bytes, cudaStream_t stream) const;

  GemmPrecision precision() const { return precision_; }
  const GemmShape& shape() const { return shape_; }
  const GemmTypes& types() const { return types_; }
  const GemmOptions& options() const { return options_; }
  GemmLayout layout() const { return options_.layout; }
  std::size_t a_elements() const { return static_cast<std::size_t>(shape_.k * shape_.m); }
  std::size_t b_elements() const { return static_cast<std::size_t>(shape_.k * shape_.n); }
  std::size_t d_elements() const { return static_cast<std::size_t>(shape_.m * shape_.n); }
  std::size_t a_bytes() const { return a_elements() * element_bytes(types_.ab); }
  std::size_t b_bytes() const { return b_elements() * element_bytes(types_.ab); }
  std::size_t d_bytes() const { return d_elements() * element_bytes(types_.cd); }

 private:
  class Desc : public UniqueHandle<cublasLtMatmulDesc_t, Desc> {
   public:
    static void destroy(cublasLtMatmulDesc_t d) noexcept {
      GB_CHECK_CUBLAS_NOTHROW(cublasLtMatmulDescDestroy(d));
    }
    using UniqueHandle::UniqueHandle;
  };
  class Layout : public UniqueHandle<cublasLtMatrixLayout_t, Layout> {
   public:
    static void destroy(cublasLtMatrixLayout_t l) noexcept {
      GB_CHECK_CUBLAS_NOTHROW(cublasLtMatrixLayoutDestroy(l));
    }
    using UniqueHandle::UniqueHandle;
  };

  cublasLtHandle_t handle_;
  GemmPrecision precision_;
  GemmShape shape_;
  GemmOptions options_;
  GemmTypes types_;
  Desc desc_;
  Layout a_layout_, b_layout_, d_layout_;
  alignas(8) unsigned char alpha_[8] = {};  // 1 in the scale type (double, float or int32)
  alignas(8) unsigned char beta_[8] = {};   // 0
};

// Copies rows `rows` of op(A), columns `cols` of B and the outputs D(rows, cols) from device
// buffers a, b, d back to the host and compares the outputs with a long-double reference
// (check_gemm_samples) at gemm_tolerance(precision), for the GEMM's layout. Synchronizes
// `stream`. TN moves k (|rows| + |cols|) elements plus |cols| columns of D over PCIe: about
// 1 MiB for 16 x 16 samples at 8192^3. NN rows of op(A) are strided through the whole of A, so
// NN copies all of A, in chunks of at most 64 MiB through a host staging buffer (8192^2: 128 MiB
// for BF16, 512 MiB for FP64: tens of ms), plus the same columns of B and D.
GemmCheck check_gemm_on_device(const GemmLt& gemm, const void* a, const void* b, const void* d,
                               std::span<const std::int64_t> rows,
                               std::span<const std::int64_t> cols, cudaStream_t stream);

}  // namespace gb::gpu
