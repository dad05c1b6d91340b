// nn/params.hpp: the parameter store. Every trainable parameter of a model lives in a few
// contiguous buffers so that SGD is one kernel over all of them (sgd.hpp):
//   master   FP32 weights, n values            momentum  FP32, n values
//   grad32   FP32 gradients of [n_lp, n)       weight_lp / grad_lp  FP16/BF16 copy and gradient
//                                              of [0, n_lp) (reduced precision only)
// Parameters that a cuDNN convolution or the cuBLASLt linear layer consume (conv weights, linear
// weight and bias) get the reduced-precision copy in FP16/BF16: they sit first, in [0, n_lp).
// Batch-norm scale/shift stay FP32 (cuDNN wants them FP32 for any data type). In FP32/TF32
// n_lp = 0 and layers compute on the master weights directly.
// Each parameter starts on a 128-element boundary (the gap is zero and stays zero under SGD), so
// every pointer handed to cuDNN/cuBLASLt is 256-byte aligned, the alignment cuBLASLt's
// heuristic assumes by default.
//
// Parameters carry torchvision-style names ("layer1.0.conv1.weight") and a logical shape; conv
// weights are K x C/g x R x S, stored KCRS (NCHW engine) or KRSC (NHWC engine).
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "gpu/cuda_raii.hpp"
#include "nn/sgd.hpp"
#include "nn/tensor.hpp"

namespace gb::nn {

struct Init {
  enum class Kind { normal, uniform, constant } kind = Kind::constant;
  float a = 0;  // normal: std; uniform: bound (U(-a, a)); constant: value
  static Init normal(float std) { return {Kind::normal, std}; }
  static Init uniform(float bound) { return {Kind::uniform, bound}; }
  static Init constant(float v) { return {Kind::constant, v}; }
};

struct ParamInfo {
  std::string name;
  Shape shape;         // logical (conv: K, C/g, R, S; linear weight: out, in, 1, 1; vectors: n,1,1,1)
  bool reduced = false;  // has a reduced-precision compute copy (in FP16/BF16)
  bool krsc = false;     // conv weight stored K x R x S x C
  Init init;
  std::size_t offset = 0;  // element offset in master / momentum
};

class ParamStore {
 public:
  // lp: the compute type of `reduced` parameters (f32 in FP32/TF32: no copies).
  explicit ParamStore(ElementType lp = ElementType::f32) : lp_(lp) {}

  int add(std::string name, Shape shape, bool reduced, bool krsc, Init init);
  // Assigns offsets (reduced parameters first) and returns the device bytes allocate() takes.
  std::size_t plan();
  void allocate();  // cudaMalloc + zero; plan() first
  // Fills master weights from `seed` (each parameter from its own generator, so adding a
  // parameter does not shift the others), zeroes momentum, writes the reduced copies.
  void initialize(std::uint64_t seed, cudaStream_t stream);

  const std::vector<ParamInfo>& infos() const { return infos_; }
  const ParamInfo& info(int id) const { return infos_.at(static_cast<std::size_t>(id)); }
  int find(const std::string& name) const;  // -1 when absent
  ElementType lp_dtype() const { return lp_; }
  bool reduced_active(int id) const { return lp_ != ElementType::f32 && info(id).reduced; }

  // What layers compute with: the reduced copy or the master, and where they write gradients.
  void* weight(int id) const;
  void* grad(int id) const;
  ElementType compute_dtype(int id) const { return reduced_active(id) ? lp_ : ElementType::f32; }
  float* master(int id) const;

  std::size_t count() const;   // parameters (without the alignment gaps)
  std::size_t bytes() const { return bytes_; }

  // Host access (synchronous), in the logical KCRS order whatever the storage order.
  void set_master(int id, const std::vector<float>& kcrs);  // also refreshes the reduced copy
  std::vector<float> get_master(int id) const;
  std::vector<float> get_grad(int id) const;  // as FP32 (converted from the reduced type)
  void set_grad(int id, const std::vector<float>& kcrs);
  void sync_reduced_copies(cudaStream_t stream);  // weight_lp = (lp) master, all parameters

  SgdBuffers sgd_buffers() const;
  const void* grad_lp() const { return grad_lp_.data(); }
  std::size_t n_lp() const { return n_lp_; }
  const float* grad32() const { return grad32_.as<float>(); }
  std::size_t n32() const { return n_ - n_lp_; }

 private:
  std::vector<float> to_storage(const ParamInfo& p, const std::vector<float>& kcrs) const;
  std::vector<float> from_storage(const ParamInfo& p, const std::vector<float>& stored) const;

  ElementType lp_;
  std::vector<ParamInfo> infos_;
  std::size_t n_ = 0, n_lp_ = 0, bytes_ = 0;
  gpu::DeviceBuffer master_, momentum_, grad32_, weight_lp_, grad_lp_;
};

}  // namespace gb::nn
