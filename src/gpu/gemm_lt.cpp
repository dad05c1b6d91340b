// gpu/gemm_lt.cpp: see gemm_lt.hpp.
#include "gpu/gemm_lt.hpp"

#include <algorithm>
#include <cstring>

#include "core/error.hpp"

namespace gb::gpu {

namespace {

std::string cc_text(int cc_major, int cc_minor) {
  return std::to_string(cc_major) + "." + std::to_string(cc_minor);
}

bool cc_below(int cc_major, int cc_minor, int want_major, int want_minor) {
  return cc_major < want_major || (cc_major == want_major && cc_minor < want_minor);
}

class Preference {
 public:
  Preference() { GB_CHECK_CUBLAS(cublasLtMatmulPreferenceCreate(&pref_)); }
  ~Preference() { GB_CHECK_CUBLAS_NOTHROW(cublasLtMatmulPreferenceDestroy(pref_)); }
  Preference(const Preference&) = delete;
  Preference& operator=(const Preference&) = delete;
  cublasLtMatmulPreference_t get() const { return pref_; }

 private:
  cublasLtMatmulPreference_t pref_{};
};

// One CUBLASLT_ALGO_CONFIG_* attribute as an integer; -1 when this cuBLASLt does not report it.
// The attributes are 2- or 4-byte integers (cublasLt.h); the size is asked first so a type
// change in a later cuBLASLt cannot overrun the buffer.
std::int64_t algo_config(const cublasLtMatmulAlgo_t& algo,
                         cublasLtMatmulAlgoConfigAttributes_t attr) {
  std::size_t needed = 0;
  if (cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, nullptr, 0, &needed) !=
      CUBLAS_STATUS_SUCCESS) {
    return -1;
  }
  unsigned char buf[8] = {};
  std::size_t written = 0;
  if ((needed != 2 && needed != 4 && needed != 8) ||
      cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, buf, needed, &written) !=
          CUBLAS_STATUS_SUCCESS ||
      written != needed) {
    return -1;
  }
  if (needed == 2) {
    std::uint16_t v;
    std::memcpy(&v, buf, sizeof v);
    return v;
  }
  if (needed == 4) {
    std::int32_t v;
    std::memcpy(&v, buf, sizeof v);
    return v;
  }
  std::int64_t v;
  std::memcpy(&v, buf, sizeof v);
  return v;
}

template <typename T>
void set_desc(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const T& value) {
  GB_CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof value));
}

}  // namespace

std::string GemmShape::to_string() const {
  return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
}

GemmTypes gemm_types(GemmPrecision p) {
  switch (p) {
    case GemmPrecision::fp64:
      return {ElementType::f64, ElementType::f64, CUDA_R_64F,
              CUDA_R_64F,       CUDA_R_64F,       CUBLAS_COMPUTE_64F};
    case GemmPrecision::fp32:
      return {ElementType::f32, ElementType::f32, CUDA_R_32F,
              CUDA_R_32F,       CUDA_R_32F,       CUBLAS_COMPUTE_32F_PEDANTIC};
    case GemmPrecision::tf32:
      return {ElementType::f32, ElementType::f32, CUDA_R_32F,
              CUDA_R_32F,       CUDA_R_32F,       CUBLAS_COMPUTE_32F_FAST_TF32};
    case GemmPrecision::fp16:
      return {ElementType::f16, ElementType::f16, CUDA_R_16F,
              CUDA_R_16F,       CUDA_R_32F,       CUBLAS_COMPUTE_32F};
    case GemmPrecision::bf16:
      return {ElementType::bf16, ElementType::bf16, CUDA_R_16BF,
              CUDA_R_16BF,       CUDA_R_32F,        CUBLAS_COMPUTE_32F};
    case GemmPrecision::fp8:
      return {ElementType::e4m3, ElementType::bf16, CUDA_R_8F_E4M3,
              CUDA_R_16BF,       CUDA_R_32F,        CUBLAS_COMPUTE_32F};
    case GemmPrecision::int8:
      return {ElementType::i8, ElementType::i32, CUDA_R_8I,
              CUDA_R_32I,      CUDA_R_32I,       CUBLAS_COMPUTE_32I};
  }
  throw Error(ErrorKind::runtime, "gemm_types: unknown precision");
}

const char* compute_type_name(cublasComputeType_t c) {
  switch (c) {
    case CUBLAS_COMPUTE_16F: return "CUBLAS_COMPUTE_16F";
    case CUBLAS_COMPUTE_16F_PEDANTIC: return "CUBLAS_COMPUTE_16F_PEDANTIC";
    case CUBLAS_COMPUTE_32F: return "CUBLAS_COMPUTE_32F";
    case CUBLAS_COMPUTE_32F_PEDANTIC: return "CUBLAS_COMPUTE_32F_PEDANTIC";
    case CUBLAS_COMPUTE_32F_FAST_16F: return "CUBLAS_COMPUTE_32F_FAST_16F";
    case CUBLAS_COMPUTE_32F_FAST_16BF: return "CUBLAS_COMPUTE_32F_FAST_16BF";
    case CUBLAS_COMPUTE_32F_FAST_TF32: return "CUBLAS_COMPUTE_32F_FAST_TF32";
    case CUBLAS_COMPUTE_32F_EMULATED_16BFX9: return "CUBLAS_COMPUTE_32F_EMULATED_16BFX9";
    case CUBLAS_COMPUTE_64F: return "CUBLAS_COMPUTE_64F";
    case CUBLAS_COMPUTE_64F_PEDANTIC: return "CUBLAS_COMPUTE_64F_PEDANTIC";
    case CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT: return "CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT";
    case CUBLAS_COMPUTE_32I: return "CUBLAS_COMPUTE_32I";
    case CUBLAS_COMPUTE_32I_PEDANTIC: return "CUBLAS_COMPUTE_32I_PEDANTIC";
  }
  return "CUBLAS_COMPUTE_unknown";
}

std::string describe_types(const GemmTypes& t) {
  return "A/B " + std::string(to_string(t.ab)) + ", C/D " + std::string(to_string(t.cd)) +
         ", " + compute_type_name(t.compute);
}

std::optional<std::string> gemm_unsupported_reason(GemmPrecision p, int cc_major, int cc_minor) {
  const std::string here = "; this GPU is " + cc_text(cc_major, cc_minor);
  switch (p) {
    case GemmPrecision::fp8:
      if (cc_below(cc_major, cc_minor, 8, 9))
        return "FP8 needs compute capability 8.9+ (Ada, Hopper or later)" + here;
      break;
    case GemmPrecision::tf32:
      if (cc_below(cc_major, cc_minor, 8, 0))
        return "TF32 needs compute capability 8.0+ (Ampere or later)" + here;
      break;
    case GemmPrecision::bf16:
      if (cc_below(cc_major, cc_minor, 8, 0))
        return "BF16 tensor cores need compute capability 8.0+ (Ampere or later)" + here;
      break;
    case GemmPrecision::int8:
      if (cc_below(cc_major, cc_minor, 7, 5))
        return "INT8 tensor cores need compute capability 7.5+ (Turing or later)" + here;
      break;
    case GemmPrecision::fp64:
    case GemmPrecision::fp32:
    case GemmPrecision::fp16:
      break;
  }
  return std::nullopt;
}

std::string GemmAlgo::describe() const {
  std::string s = "id " + std::to_string(id) + ", tile " + std::to_string(tile) + ", stages " +
                  std::to_string(stages);
  if (cluster >= 0) s += ", cluster " + std::to_string(cluster);
  s += ", split-k " + std::to_string(split_k) + ", reduction " + std::to_string(reduction) +
       ", swizzle " + std::to_string(swizzle) + ", custom " + std::to_string(custom) +
       ", workspace " + std::to_string(workspace_bytes) + " B";
  return s;
}

std::string describe_layout(GemmLayout l) {
  switch (l) {
    case GemmLayout::tn:
      return "TN column-major: A stored k x m (transposed), B k x n, D m x n; alpha 1, beta 0";
    case GemmLayout::nn:
      return "NN column-major: A stored m x k, B k x n, D m x n (PyTorch's row-major C = A @ B); "
             "alpha 1, beta 0";
  }
  return "unknown layout";
}

GemmLt::GemmLt(cublasLtHandle_t handle, GemmPrecision p, GemmShape shape, GemmOptions options)
    : handle_(handle), precision_(p), shape_(shape), options_(options), types_(gemm_types(p)) {
  if (shape.m <= 0 || shape.n <= 0 || shape.k <= 0) {
    throw Error(ErrorKind::runtime, "GemmLt: bad shape " + shape.to_string());
  }
  if (!layout_allowed(p, options.layout)) {
    throw Error(ErrorKind::runtime, std::string("GemmLt: ") + std::string(precision_key(p)) +
                                        " supports the TN layout only, not " +
                                        std::string(layout_name(options.layout)));
  }
  if (options.compute) types_.compute = *options.compute;
  const bool tn = options.layout == GemmLayout::tn;

  cublasLtMatmulDesc_t desc{};
  GB_CHECK_CUBLAS(cublasLtMatmulDescCreate(&desc, types_.compute, types_.scale_cuda));
  desc_ = Desc(desc);
  set_desc(desc, CUBLASLT_MATMUL_DESC_TRANSA, tn ? CUBLAS_OP_T : CUBLAS_OP_N);
  set_desc(desc, CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N);
  if (p == GemmPrecision::fp8) {
    const std::int8_t fast_accum = options.fp8_fast_accum ? 1 : 0;
    set_desc(desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, fast_accum);
  }

  // Column-major layouts: A is k x m for TN (op(A) = A^T is m x k), m x k for NN; B is k x n,
  // D is m x n.
  auto make_layout = [](cudaDataType_t type, std::int64_t rows, std::int64_t cols) {
    cublasLtMatrixLayout_t layout{};
    GB_CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&layout, type, static_cast<std::uint64_t>(rows),
                                               static_cast<std::uint64_t>(cols), rows));
    return Layout(layout);
  };
  a_layout_ = tn ? make_layout(types_.ab_cuda, shape.k, shape.m)
                 : make_layout(types_.ab_cuda, shape.m, shape.k);
  b_layout_ = make_layout(types_.ab_cuda, shape.k, shape.n);
  d_layout_ = make_layout(types_.cd_cuda, shape.m, shape.n);

  switch (types_.scale_cuda) {
    case CUDA_R_64F: {
      const double one = 1.0, zero = 0.0;
      std::memcpy(alpha_, &one, sizeof one);
      std::memcpy(beta_, &zero, sizeof zero);
      break;
    }
    case CUDA_R_32I: {
      const std::int32_t one = 1, zero = 0;
      std::memcpy(alpha_, &one, sizeof one);
      std::memcpy(beta_, &zero, sizeof zero);
      break;
    }
    default: {
      const float one = 1.0f, zero = 0.0f;
      std::memcpy(alpha_, &one, sizeof one);
      std::memcpy(beta_, &zero, sizeof zero);
      break;
    }
  }
}

std::vector<GemmAlgo> GemmLt::algorithms(std::size_t max_workspace_bytes, int max_count) const {
  if (max_count <= 0) return {};
  const Preference pref;
  const std::uint64_t workspace_limit = max_workspace_bytes;
  GB_CHECK_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref.get(),
                                                       CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                       &workspace_limit, sizeof workspace_limit));

  std::vector<cublasLtMatmulHeuristicResult_t> results(static_cast<std::size_t>(max_count));
  int returned = 0;
  const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
      handle_, desc_.get(), a_layout_.get(), b_layout_.get(), d_layout_.get(), d_layout_.get(),
      pref.get(), max_count, results.data(), &returned);
  // NOT_SUPPORTED: no heuristic exists for this combination of types, layout and device.
  if (status == CUBLAS_STATUS_NOT_SUPPORTED) return {};
  GB_CHECK_CUBLAS(status);

  std::vector<GemmAlgo> algos;
  for (int i = 0; i < returned; ++i) {
    const cublasLtMatmulHeuristicResult_t& r = results[static_cast<std::size_t>(i)];
    if (r.state != CUBLAS_STATUS_SUCCESS) continue;
    GemmAlgo a;
    a.algo = r.algo;
    a.heuristic_rank = i;
    a.workspace_bytes = r.workspaceSize;
    a.waves = r.wavesCount;
    a.id = algo_config(r.algo, CUBLASLT_ALGO_CONFIG_ID);
    a.tile = algo_config(r.algo, CUBLASLT_ALGO_CONFIG_TILE_ID);
    a.stages = algo_config(r.algo, CUBLASLT_ALGO_CONFIG_STAGES_ID);
    a.split_k = algo_config(r.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM);
    a.reduction = algo_config(r.algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME);
    a.swizzle = algo_config(r.algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING);
    a.custom = algo_config(r.algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION);
    a.cluster = algo_config(r.algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID);
    algos.push_back(a);
  }
  return algos;
}

cublasStatus_t GemmLt::try_run(const GemmAlgo& algo, const void* a, const void* b, void* d,
                               void* workspace, std::size_t workspace_bytes,
                               cudaStream_t stream) const {
  return cublasLtMatmul(handle_, desc_.get(), alpha_, a, a_layout_.get(), b, b_layout_.get(), beta_,
                        d, d_layout_.get(), d, d_layout_.get(), &algo.algo, workspace,
                        workspace_bytes, stream);
}

void GemmLt::run(const GemmAlgo& algo, const void* a, const void* b, void* d, void* workspace,
                 std::size_t workspace_bytes, cudaStream_t stream) const {
  GB_CHECK_CUBLAS(try_run(algo, a, b, d, workspace, workspace_bytes, stream));
}

GemmCheck check_gemm_on_device(const GemmLt& gemm, const void* a, const void* b, const void* d,
                               std::span<const std::int64_t> rows,
                               std::span<const std::int64_t> cols, cudaStream_t stream) {
  const GemmShape& s = gemm.shape();
  const auto k = static_cast<std::size_t>(s.k);
  const auto m = static_cast<std::size_t>(s.m);
  const std::size_t ab_size = element_bytes(gemm.types().ab);
  const std::size_t cd_size = element_bytes(gemm.types().cd);
  const auto* a_bytes = static_cast<const unsigned char*>(a);
  const auto* b_bytes = static_cast<const unsigned char*>(b);
  const auto* d_bytes = static_cast<const unsigned char*>(d);

  for (const std::int64_t r : rows)
    if (r < 0 || r >= s.m)
      throw Error(ErrorKind::runtime, "check_gemm_on_device: row out of range");
  for (const std::int64_t c : cols)
    if (c < 0 || c >= s.n)
      throw Error(ErrorKind::runtime, "check_gemm_on_device: column out of range");

  std::vector<unsigned char> a_host(rows.size() * k * ab_size);
  if (gemm.layout() == GemmLayout::tn) {
    // Row r of op(A) is column r of the stored k x m A: k contiguous elements at r * k.
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const std::size_t at = op_a_offset(GemmLayout::tn, s.m, s.k, rows[i], 0);
      GB_CHECK_CUDA(cudaMemcpyAsync(a_host.data() + i * k * ab_size, a_bytes + at * ab_size,
                                    k * ab_size, cudaMemcpyDeviceToHost, stream));
    }
  } else {
    // Row r of op(A) is element r of each of the k columns of the stored m x k A (m elements
    // each): copy whole columns, a chunk at a time, and pick the sampled rows out of them.
    constexpr std::size_t kStagingBytes = std::size_t{64} << 20;
    const std::size_t column_bytes = m * ab_size;
    const std::size_t chunk_columns = std::clamp<std::size_t>(kStagingBytes / column_bytes, 1, k);
    std::vector<unsigned char> staging(chunk_columns * column_bytes);
    for (std::size_t l0 = 0; l0 < k; l0 += chunk_columns) {
      const std::size_t columns = std::min(chunk_columns, k - l0);
      GB_CHECK_CUDA(cudaMemcpyAsync(staging.data(), a_bytes + l0 * column_bytes,
                                    columns * column_bytes, cudaMemcpyDeviceToHost, stream));
      GB_CHECK_CUDA(cudaStreamSynchronize(stream));
      const std::size_t base = l0 * m;  // element offset of the chunk in the stored A
      for (std::size_t i = 0; i < rows.size(); ++i) {
        for (std::size_t l = l0; l < l0 + columns; ++l) {
          const std::size_t at = op_a_offset(GemmLayout::nn, s.m, s.k, rows[i],
                                             static_cast<std::int64_t>(l)) -
                                 base;
          std::memcpy(a_host.data() + (i * k + l) * ab_size, staging.data() + at * ab_size,
                      ab_size);
        }
      }
    }
  }
  // Column c of B: k contiguous elements at c * k. Column c of D: m contiguous elements at c * m.
  std::vector<unsigned char> b_host(cols.size() * k * ab_size);
  std::vector<unsigned char> d_host(cols.size() * m * cd_size);
  for (std::size_t j = 0; j < cols.size(); ++j) {
    const auto c = static_cast<std::size_t>(cols[j]);
    GB_CHECK_CUDA(cudaMemcpyAsync(b_host.data() + j * k * ab_size, b_bytes + c * k * ab_size,
                                  k * ab_size, cudaMemcpyDeviceToHost, stream));
    GB_CHECK_CUDA(cudaMemcpyAsync(d_host.data() + j * m * cd_size, d_bytes + c * m * cd_size,
                                  m * cd_size, cudaMemcpyDeviceToHost, stream));
  }
  GB_CHECK_CUDA(cudaStreamSynchronize(stream));

  const std::vector<double> a_rows =
      decode_elements(gemm.types().ab, a_host.data(), rows.size() * k);
  const std::vector<double> b_cols =
      decode_elements(gemm.types().ab, b_host.data(), cols.size() * k);
  const std::vector<double> d_cols =
      decode_elements(gemm.types().cd, d_host.data(), cols.size() * m);
  std::vector<double> d_samples(rows.size() * cols.size());
  for (std::size_t i = 0; i < rows.size(); ++i)
    for (std::size_t j = 0; j < cols.size(); ++j)
      d_samples[i * cols.size() + j] = d_cols[j * m + static_cast<std::size_t>(rows[i])];
  return check_gemm_samples(a_rows, b_cols, d_samples, k, gemm_tolerance(gemm.precision()));
}

}  // namespace gb::gpu
