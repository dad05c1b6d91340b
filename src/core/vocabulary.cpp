// core/vocabulary.cpp: see vocabulary.hpp. One table per type: its values in order with their
// spellings; to_string and parse read the same table.
#include "core/vocabulary.hpp"

#include <array>
#include <utility>

namespace gb {

namespace {

constexpr std::array<std::pair<Model, std::string_view>, 3> kModels{{
    {Model::resnet50, "resnet50"},
    {Model::mobilenet_v2, "mobilenet_v2"},
    {Model::small_resnet, "small_resnet"},
}};
constexpr std::array<Model, 3> kModelOrder{Model::resnet50, Model::mobilenet_v2,
                                           Model::small_resnet};

constexpr std::array<std::pair<Precision, std::string_view>, 4> kPrecisions{{
    {Precision::fp32, "fp32"},
    {Precision::tf32, "tf32"},
    {Precision::fp16, "fp16"},
    {Precision::bf16, "bf16"},
}};
constexpr std::array<Precision, 4> kPrecisionOrder{Precision::fp32, Precision::tf32,
                                                   Precision::fp16, Precision::bf16};

template <typename E, std::size_t N>
std::string_view name_of(const std::array<std::pair<E, std::string_view>, N>& table, E value) {
  for (const auto& [v, name] : table)
    if (v == value) return name;
  return "?";
}

template <typename E, std::size_t N>
std::optional<E> value_of(const std::array<std::pair<E, std::string_view>, N>& table,
                          std::string_view name) {
  for (const auto& [v, n] : table)
    if (n == name) return v;
  return std::nullopt;
}

}  // namespace

std::span<const Model> all_models() { return kModelOrder; }
std::string_view to_string(Model m) { return name_of(kModels, m); }
std::optional<Model> parse_model(std::string_view s) { return value_of(kModels, s); }

std::span<const Precision> all_precisions() { return kPrecisionOrder; }
std::string_view to_string(Precision p) { return name_of(kPrecisions, p); }
std::optional<Precision> parse_precision(std::string_view s) { return value_of(kPrecisions, s); }
bool is_mixed(Precision p) { return p == Precision::fp16 || p == Precision::bf16; }

}  // namespace gb
