// nn/params.cpp: see params.hpp.
#include "nn/params.hpp"

#include <cstring>
#include <random>

#include "core/error.hpp"
#include "gpu/check.hpp"
#include "nn/kernels.hpp"

namespace gb::nn {
namespace {

// Elements: 256 bytes in FP16/BF16, the alignment cuBLASLt's heuristic assumes by default.
constexpr std::size_t kAlign = 128;

std::size_t round_up(std::size_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

}  // namespace

int ParamStore::add(std::string name, Shape shape, bool reduced, bool krsc, Init init) {
  infos_.push_back(ParamInfo{std::move(name), shape, reduced, krsc, init, 0});
  return static_cast<int>(infos_.size() - 1);
}

int ParamStore::find(const std::string& name) const {
  for (std::size_t i = 0; i < infos_.size(); ++i)
    if (infos_[i].name == name) return static_cast<int>(i);
  return -1;
}

std::size_t ParamStore::plan() {
  std::size_t off = 0;
  const bool split = lp_ != ElementType::f32;
  if (split) {
    for (ParamInfo& p : infos_)
      if (p.reduced) p.offset = off, off += round_up(p.shape.elements());
  }
  n_lp_ = off;
  for (ParamInfo& p : infos_)
    if (!split || !p.reduced) p.offset = off, off += round_up(p.shape.elements());
  n_ = off;
  // master + momentum + grad32, plus the reduced copy and gradient.
  bytes_ = n_ * 4 * 2 + (n_ - n_lp_) * 4 + n_lp_ * element_bytes(lp_) * 2;
  return bytes_;
}

void ParamStore::allocate() {
  master_ = gpu::DeviceBuffer(n_ * 4);
  momentum_ = gpu::DeviceBuffer(n_ * 4);
  grad32_ = gpu::DeviceBuffer((n_ - n_lp_) * 4);
  weight_lp_ = gpu::DeviceBuffer(n_lp_ * element_bytes(lp_));
  grad_lp_ = gpu::DeviceBuffer(n_lp_ * element_bytes(lp_));
  for (gpu::DeviceBuffer* b : {&master_, &momentum_, &grad32_, &weight_lp_, &grad_lp_})
    if (b->bytes() > 0) GB_CHECK_CUDA(cudaMemset(b->data(), 0, b->bytes()));
  GB_CHECK_CUDA(cudaDeviceSynchronize());  // legacy-stream memsets vs the engine's stream
}

std::size_t ParamStore::count() const {
  std::size_t c = 0;
  for (const ParamInfo& p : infos_) c += p.shape.elements();
  return c;
}

float* ParamStore::master(int id) const { return master_.as<float>() + info(id).offset; }

void* ParamStore::weight(int id) const {
  if (reduced_active(id))
    return static_cast<unsigned char*>(weight_lp_.data()) + info(id).offset * element_bytes(lp_);
  return master(id);
}

void* ParamStore::grad(int id) const {
  if (reduced_active(id))
    return static_cast<unsigned char*>(grad_lp_.data()) + info(id).offset * element_bytes(lp_);
  return grad32_.as<float>() + (info(id).offset - n_lp_);
}

std::vector<float> ParamStore::to_storage(const ParamInfo& p, const std::vector<float>& kcrs) const {
  if (kcrs.size() != p.shape.elements()) {
    throw Error(ErrorKind::runtime, "parameter " + p.name + ": " + std::to_string(kcrs.size()) +
                                        " values for shape " + p.shape.to_string());
  }
  if (!p.krsc) return kcrs;
  std::vector<float> out(kcrs.size());
  const Shape& s = p.shape;
  std::size_t i = 0;
  for (int k = 0; k < s.n; ++k)
    for (int c = 0; c < s.c; ++c)
      for (int r = 0; r < s.h; ++r)
        for (int q = 0; q < s.w; ++q, ++i) out[element_index(s, true, k, c, r, q)] = kcrs[i];
  return out;
}

std::vector<float> ParamStore::from_storage(const ParamInfo& p,
                                            const std::vector<float>& stored) const {
  if (!p.krsc) return stored;
  std::vector<float> out(stored.size());
  const Shape& s = p.shape;
  std::size_t i = 0;
  for (int k = 0; k < s.n; ++k)
    for (int c = 0; c < s.c; ++c)
      for (int r = 0; r < s.h; ++r)
        for (int q = 0; q < s.w; ++q, ++i) out[i] = stored[element_index(s, true, k, c, r, q)];
  return out;
}

void ParamStore::initialize(std::uint64_t seed, cudaStream_t stream) {
  std::vector<float> host(n_, 0.f);
  for (std::size_t id = 0; id < infos_.size(); ++id) {
    const ParamInfo& p = infos_[id];
    std::mt19937_64 gen(seed * 0x9e3779b97f4a7c15ull + id * 0xbf58476d1ce4e5b9ull + 1);
    float* dst = host.data() + p.offset;
    const std::size_t n = p.shape.elements();
    switch (p.init.kind) {
      case Init::Kind::normal: {
        std::normal_distribution<float> d(0.f, p.init.a);
        for (std::size_t i = 0; i < n; ++i) dst[i] = d(gen);
        break;
      }
      case Init::Kind::uniform: {
        std::uniform_real_distribution<float> d(-p.init.a, p.init.a);
        for (std::size_t i = 0; i < n; ++i) dst[i] = d(gen);
        break;
      }
      case Init::Kind::constant:
        for (std::size_t i = 0; i < n; ++i) dst[i] = p.init.a;
        break;
    }
  }
  // Weights drawn i.i.d. need no KCRS -> KRSC reordering.
  GB_CHECK_CUDA(cudaMemcpyAsync(master_.data(), host.data(), n_ * 4, cudaMemcpyHostToDevice,
                                stream));
  GB_CHECK_CUDA(cudaMemsetAsync(momentum_.data(), 0, n_ * 4, stream));
  sync_reduced_copies(stream);
  GB_CHECK_CUDA(cudaStreamSynchronize(stream));
}

void ParamStore::sync_reduced_copies(cudaStream_t stream) {
  if (n_lp_ > 0) cast_from_f32(master_.as<float>(), weight_lp_.data(), n_lp_, lp_, stream);
}

void ParamStore::set_master(int id, const std::vector<float>& kcrs) {
  const ParamInfo& p = info(id);
  const std::vector<float> stored = to_storage(p, kcrs);
  GB_CHECK_CUDA(cudaMemcpy(master(id), stored.data(), stored.size() * 4, cudaMemcpyHostToDevice));
  if (reduced_active(id)) cast_from_f32(master(id), weight(id), stored.size(), lp_, nullptr);
  // A pageable copy may still be in flight on the legacy stream when cudaMemcpy returns; the
  // engine's stream does not wait for that stream.
  GB_CHECK_CUDA(cudaDeviceSynchronize());
}

std::vector<float> ParamStore::get_master(int id) const {
  const ParamInfo& p = info(id);
  std::vector<float> stored(p.shape.elements());
  GB_CHECK_CUDA(cudaDeviceSynchronize());
  GB_CHECK_CUDA(cudaMemcpy(stored.data(), master(id), stored.size() * 4, cudaMemcpyDeviceToHost));
  return from_storage(p, stored);
}

std::vector<float> ParamStore::get_grad(int id) const {
  const ParamInfo& p = info(id);
  const std::size_t n = p.shape.elements();
  const ElementType t = compute_dtype(id);
  std::vector<unsigned char> bytes(n * element_bytes(t));
  GB_CHECK_CUDA(cudaDeviceSynchronize());
  GB_CHECK_CUDA(cudaMemcpy(bytes.data(), grad(id), bytes.size(), cudaMemcpyDeviceToHost));
  return from_storage(p, unpack_host(bytes.data(), Shape{1, static_cast<int>(n), 1, 1}, false, t));
}

void ParamStore::set_grad(int id, const std::vector<float>& kcrs) {
  const ParamInfo& p = info(id);
  const std::vector<float> stored = to_storage(p, kcrs);
  const ElementType t = compute_dtype(id);
  const std::vector<unsigned char> bytes =
      pack_host(stored, Shape{1, static_cast<int>(stored.size()), 1, 1}, false, t);
  GB_CHECK_CUDA(cudaMemcpy(grad(id), bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
  GB_CHECK_CUDA(cudaDeviceSynchronize());
}

SgdBuffers ParamStore::sgd_buffers() const {
  SgdBuffers b;
  b.master = master_.as<float>();
  b.momentum = momentum_.as<float>();
  b.grad32 = grad32_.as<float>();
  b.grad_lp = grad_lp_.data();
  b.weight_lp = weight_lp_.data();
  b.n = n_;
  b.n_lp = n_lp_;
  b.lp_dtype = lp_;
  return b;
}

}  // namespace gb::nn
