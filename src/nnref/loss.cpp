// nnref/loss.cpp: softmax cross-entropy and top-1 counting.
#include "nnref/loss.hpp"

#include <algorithm>
#include <cmath>

namespace gb::nnref {
namespace {

void check_labels(const Tensor& logits, const std::vector<int>& labels, const char* where) {
  require(labels.size() == static_cast<std::size_t>(logits.n), where,
          std::to_string(labels.size()) + " labels for a batch of " + std::to_string(logits.n));
  const int classes = static_cast<int>(logits.features());
  for (int label : labels) {
    require(label >= 0 && label < classes, where,
            "label " + std::to_string(label) + " outside [0, " + std::to_string(classes) + ")");
  }
}

}  // namespace

float softmax_cross_entropy(const Tensor& logits, const std::vector<int>& labels, Tensor* dlogits) {
  const char* where = "softmax_cross_entropy";
  check_labels(logits, labels, where);
  require(logits.n >= 1, where, "empty batch");
  const std::size_t classes = logits.features(), N = static_cast<std::size_t>(logits.n);
  if (dlogits != nullptr) *dlogits = Tensor(logits.n, logits.c, logits.h, logits.w);
  double total = 0.0;
  for (std::size_t n = 0; n < N; ++n) {
    const float* z = &logits.v[n * classes];
    double mx = z[0];
    for (std::size_t j = 1; j < classes; ++j) mx = std::max(mx, static_cast<double>(z[j]));
    double sum = 0.0;
    for (std::size_t j = 0; j < classes; ++j) sum += std::exp(z[j] - mx);
    const double log_sum = std::log(sum);
    const std::size_t label = static_cast<std::size_t>(labels[n]);
    total += log_sum - (z[label] - mx);
    if (dlogits != nullptr) {
      float* d = &dlogits->v[n * classes];
      for (std::size_t j = 0; j < classes; ++j) {
        const double prob = std::exp(z[j] - mx - log_sum);
        d[j] = static_cast<float>((prob - (j == label ? 1.0 : 0.0)) / static_cast<double>(N));
      }
    }
  }
  return static_cast<float>(total / static_cast<double>(N));
}

std::size_t count_correct(const Tensor& logits, const std::vector<int>& labels) {
  check_labels(logits, labels, "count_correct");
  const std::size_t classes = logits.features();
  std::size_t hits = 0;
  for (std::size_t n = 0; n < static_cast<std::size_t>(logits.n); ++n) {
    const float* z = &logits.v[n * classes];
    std::size_t best = 0;
    for (std::size_t j = 1; j < classes; ++j) {
      if (z[j] > z[best]) best = j;
    }
    if (best == static_cast<std::size_t>(labels[n])) ++hits;
  }
  return hits;
}

}  // namespace gb::nnref
