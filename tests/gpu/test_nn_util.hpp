// tests/gpu/test_nn_util.hpp: shared helpers of the training engine's GPU tests
// (test_nn_*.cpp): random reference tensors, rounding to the device type, the error measure,
// and a small Engine that owns a stream, the cuDNN / cuBLASLt handles and a Context, and builds
// a Network the way the Trainer does (plan, allocate, initialise, setup with scratch, workspace).
//
// Error measure: max |got - want| / max(max |want|, 1e-6): relative to the tensor's scale, so a
// near-zero element does not dominate. Inputs of reduced-precision tests are rounded to the
// device type first, so the tolerance covers only the device's arithmetic and output rounding.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "gpu/cuda_raii.hpp"
#include "nn/cudnn.hpp"
#include "nn/network.hpp"
#include "nnref/ref.hpp"

namespace gb::nn::testing {

inline bool has_gpu() {
  int count = 0;
  const bool ok = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
  if (!ok) (void)cudaGetLastError();
  return ok;
}

#define GB_NN_REQUIRE_GPU() \
  if (!::gb::nn::testing::has_gpu()) GTEST_SKIP() << "no CUDA device"

// Sets an environment variable for the scope of a test and restores the previous value
// (nullptr: unset for the scope).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = std::string(old);
    if (value) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

inline nnref::Tensor random_tensor(int n, int c, int h, int w, std::mt19937& gen, float lo = -1.f,
                                   float hi = 1.f) {
  nnref::Tensor t(n, c, h, w);
  std::uniform_real_distribution<float> d(lo, hi);
  for (float& v : t.v) v = d(gen);
  return t;
}

inline std::vector<float> random_vector(std::size_t n, std::mt19937& gen, float lo = -1.f,
                                        float hi = 1.f) {
  std::vector<float> v(n);
  std::uniform_real_distribution<float> d(lo, hi);
  for (float& x : v) x = d(gen);
  return v;
}

inline void round_all(std::vector<float>& v, ElementType t) {
  for (float& x : v) x = round_to(t, x);
}

inline double rel_error(const std::vector<float>& got, const std::vector<float>& want) {
  EXPECT_EQ(got.size(), want.size());
  double max_diff = 0, max_ref = 1e-6;
  for (std::size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    const double d = std::fabs(static_cast<double>(got[i]) - want[i]);
    max_diff = std::isnan(d) ? INFINITY : std::max(max_diff, d);
    max_ref = std::max(max_ref, std::fabs(static_cast<double>(want[i])));
  }
  return max_diff / max_ref;
}

// Tolerances of the layer tests (relative, see above).
inline double layer_tolerance(Precision p) {
  switch (p) {
    case Precision::fp32: return 2e-4;  // FP32 with tensor cores off; Winograd/FFT included
    case Precision::tf32: return 5e-3;
    case Precision::fp16: return 1e-2;  // FP16 output rounding 2^-11 plus FP32 accumulation
    case Precision::bf16: return 4e-2;  // BF16 output rounding 2^-8
  }
  return 1e-4;
}

inline ElementType dtype_of(Precision p) {
  return p == Precision::fp16   ? ElementType::f16
         : p == Precision::bf16 ? ElementType::bf16
                                : ElementType::f32;
}

struct Engine {
  explicit Engine(Precision p)
      : stream(gpu::Stream::create()), cudnn(CudnnHandle::create()),
        lt(gpu::CublasLtHandle::create()) {
    GB_CHECK_CUDNN(cudnnSetStream(cudnn.get(), stream.get()));
    ctx.precision = p;
    ctx.cudnn = cudnn.get();
    ctx.lt = lt.get();
    ctx.stream = stream.get();
  }

  void build(Network& net) {
    net.plan();
    net.allocate();
    net.params().initialize(0, stream.get());
    gpu::DeviceBuffer scratch(256u << 20);
    ctx.workspace = scratch.data();
    ctx.workspace_bytes = scratch.bytes();
    const std::size_t need = net.setup(ctx);
    sync();
    workspace = gpu::DeviceBuffer(need);
    ctx.workspace = workspace.data();
    ctx.workspace_bytes = need;
  }

  void sync() { GB_CHECK_CUDA(cudaStreamSynchronize(stream.get())); }

  gpu::Stream stream;
  CudnnHandle cudnn;
  gpu::CublasLtHandle lt;
  Context ctx;
  gpu::DeviceBuffer workspace;
};

}  // namespace gb::nn::testing
