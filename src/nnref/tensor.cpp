// nnref/tensor.cpp: Tensor construction and the shape-check helper shared by the layers.
#include "nnref/tensor.hpp"

#include "core/error.hpp"

namespace gb::nnref {

Tensor::Tensor(int n_, int c_, int h_, int w_) : n(n_), c(c_), h(h_), w(w_) {
  require(n_ >= 0 && c_ >= 0 && h_ >= 0 && w_ >= 0, "Tensor", "negative dimension");
  v.assign(static_cast<std::size_t>(n_) * c_ * h_ * w_, 0.0f);
}

std::string shape_string(const Tensor& t) {
  return "[" + std::to_string(t.n) + "," + std::to_string(t.c) + "," + std::to_string(t.h) + "," +
         std::to_string(t.w) + "]";
}

void require(bool ok, const char* where, const std::string& what) {
  if (!ok) throw Error(ErrorKind::runtime, std::string("nnref ") + where + ": " + what);
}

}  // namespace gb::nnref
