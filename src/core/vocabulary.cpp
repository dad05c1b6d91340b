// core/vocabulary.cpp: see vocabulary.hpp. One table per type: its values in order with their
// spellings; to_string and parse read the same table.
#include "core/vocabulary.hpp"

#include <array>
#include <string>
#include <utility>

#include "core/error.hpp"

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

constexpr std::array<std::pair<ElementType, std::string_view>, 7> kElementTypes{{
    {ElementType::f64, "fp64"},
    {ElementType::f32, "fp32"},
    {ElementType::f16, "fp16"},
    {ElementType::bf16, "bf16"},
    {ElementType::e4m3, "fp8e4m3"},
    {ElementType::i8, "int8"},
    {ElementType::i32, "int32"},
}};

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

std::string_view to_string(ElementType t) { return name_of(kElementTypes, t); }
std::optional<ElementType> parse_element_type(std::string_view s) {
  return value_of(kElementTypes, s);
}

std::size_t element_bytes(ElementType t) {
  switch (t) {
    case ElementType::f64: return 8;
    case ElementType::f32: return 4;
    case ElementType::f16: return 2;
    case ElementType::bf16: return 2;
    case ElementType::e4m3: return 1;
    case ElementType::i8: return 1;
    case ElementType::i32: return 4;
  }
  return 0;
}

void unsupported_element_type(ElementType t, std::string_view where) {
  throw Error(ErrorKind::runtime, "internal error: " + std::string(where) +
                                      " does not handle " + std::string(to_string(t)) +
                                      " elements");
}

}  // namespace gb
