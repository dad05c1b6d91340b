// nnref/tensor.hpp: the dense FP32 tensor every CPU reference layer takes and returns.
// 4-D tensors are NCHW, row-major (w fastest); a 2-D [N, features] tensor is n x c with h = w = 1.
// Shape mismatches are programming errors: the layers throw gb::Error(runtime) naming the layer.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace gb::nnref {

struct Tensor {
  int n = 0, c = 0, h = 1, w = 1;
  std::vector<float> v;

  Tensor() = default;
  Tensor(int n, int c, int h = 1, int w = 1);  // zero-filled

  std::size_t size() const { return v.size(); }
  std::size_t index(int in, int ic, int ih, int iw) const {
    return ((static_cast<std::size_t>(in) * c + ic) * h + ih) * w + iw;
  }
  float& at(int in, int ic, int ih, int iw) { return v[index(in, ic, ih, iw)]; }
  float at(int in, int ic, int ih, int iw) const { return v[index(in, ic, ih, iw)]; }

  std::size_t plane() const { return static_cast<std::size_t>(h) * w; }         // h*w
  std::size_t features() const { return static_cast<std::size_t>(c) * h * w; }  // c*h*w
  bool same_shape(const Tensor& o) const { return n == o.n && c == o.c && h == o.h && w == o.w; }
};

// "[n,c,h,w]", for error messages and test output.
std::string shape_string(const Tensor& t);

// Throws gb::Error(runtime) "<where>: <what>" unless ok.
void require(bool ok, const char* where, const std::string& what);

}  // namespace gb::nnref
