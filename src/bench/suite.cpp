// bench/suite.cpp: the CUDA-free half of bench/suite.hpp: the result sink, and what a build
// without CUDA answers when a suite asks for its GPU. The CUDA half is
// bench/gpu/device_context.cpp.
#include "bench/suite.hpp"

#include <algorithm>
#include <mutex>

#include "bench/sink_snapshot.hpp"

#include "core/device_index.hpp"
#include "core/error.hpp"

namespace gb::bench {

namespace {
// One lock for every sink: taken by the suite's thread as it adds, and by snapshot().
std::mutex& sink_mutex() {
  static std::mutex mu;
  return mu;
}
}  // namespace

void ResultSink::declare_sections(std::span<const SectionRule> rules) {
  std::lock_guard lock(sink_mutex());
  rules_.insert(rules_.end(), rules.begin(), rules.end());
}

void ResultSink::add(Result r) {
  std::lock_guard lock(sink_mutex());
  place_in_section(r, rules_, sections_);
  results_.push_back(std::move(r));
}
void ResultSink::add_fact(Fact f) {
  std::lock_guard lock(sink_mutex());
  facts_.push_back(std::move(f));
}

SinkSnapshot snapshot(ResultSink& sink) {
  std::lock_guard lock(sink_mutex());
  return {sink.facts(), sink.sections(), sink.results()};
}

void ResultSink::end(bool interrupted) {
  std::vector<EndFn> summaries = std::move(at_end_);
  at_end_.clear();
  for (const EndFn& summary : summaries) summary(*this, interrupted);
}

#ifndef GPUBASE_WITH_CUDA
namespace {
constexpr const char* kNoCuda = "this gpubase was built without CUDA (GPUBASE_WITH_CUDA=OFF)";
}  // namespace

DeviceScope::DeviceScope(int /*device*/) { throw Error(ErrorKind::no_gpu, kNoCuda); }
DeviceScope::~DeviceScope() = default;
DeviceScope::DeviceScope(DeviceScope&& other) noexcept : restore_(other.restore_) {
  other.restore_.reset();
}
DeviceScope& DeviceScope::operator=(DeviceScope&& other) noexcept {
  restore_ = other.restore_;
  other.restore_.reset();
  return *this;
}

int cuda_device_count(std::string& reason) {
  reason = kNoCuda;
  return 0;
}

std::optional<DeviceContext> open_device(int index, std::string& no_gpu_reason) {
  require_device_index(index, 0);  // a negative index is wrong on every machine
  no_gpu_reason = kNoCuda;
  return std::nullopt;
}
#endif

}  // namespace gb::bench
