// tests/unit/test_core_vocabulary.cpp: the training vocabulary (core/vocabulary.hpp): one
// spelling per model and precision, parsed back exactly, in report order.
#include <gtest/gtest.h>

#include "core/vocabulary.hpp"

#include "core/error.hpp"

namespace gb {
namespace {

TEST(Vocabulary, EveryModelParsesBackFromItsSpelling) {
  for (const Model m : all_models()) EXPECT_EQ(parse_model(to_string(m)), m);
}

TEST(Vocabulary, EveryPrecisionParsesBackFromItsSpelling) {
  for (const Precision p : all_precisions()) EXPECT_EQ(parse_precision(to_string(p)), p);
}

TEST(Vocabulary, PrecisionsAreInReportOrder) {
  ASSERT_EQ(all_precisions().size(), 4u);
  EXPECT_EQ(to_string(all_precisions()[0]), "fp32");
  EXPECT_EQ(to_string(all_precisions()[3]), "bf16");
}

TEST(Vocabulary, ParsingIsExactAndRejectsOtherNames) {
  EXPECT_FALSE(parse_precision("fp8").has_value());   // a GEMM precision, not a training one
  EXPECT_FALSE(parse_precision("BF16").has_value());  // spellings are lower case (result keys)
  EXPECT_FALSE(parse_model("vgg16").has_value());
}

TEST(Vocabulary, OnlyFp16AndBf16AreMixed) {
  EXPECT_TRUE(is_mixed(Precision::fp16));
  EXPECT_TRUE(is_mixed(Precision::bf16));
  EXPECT_FALSE(is_mixed(Precision::tf32));
  EXPECT_FALSE(is_mixed(Precision::fp32));
}

TEST(Vocabulary, EveryElementTypeHasOneSpellingAndItsSize) {
  const struct {
    ElementType t;
    const char* name;
    std::size_t bytes;
  } cases[] = {{ElementType::f64, "fp64", 8}, {ElementType::f32, "fp32", 4},
               {ElementType::f16, "fp16", 2}, {ElementType::bf16, "bf16", 2},
               {ElementType::e4m3, "fp8e4m3", 1}, {ElementType::i8, "int8", 1},
               {ElementType::i32, "int32", 4}};
  for (const auto& c : cases) {
    EXPECT_EQ(to_string(c.t), c.name);
    EXPECT_EQ(parse_element_type(c.name), c.t);
    EXPECT_EQ(element_bytes(c.t), c.bytes);
  }
  EXPECT_FALSE(parse_element_type("f32").has_value());  // the engine's short key spelling
}

TEST(Vocabulary, AnElementTypeALayerDoesNotHandleIsARuntimeError) {
  try {
    unsupported_element_type(ElementType::e4m3, "normalize");
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::runtime);
    EXPECT_NE(std::string(e.what()).find("normalize does not handle fp8e4m3"), std::string::npos);
  }
}

}  // namespace
}  // namespace gb
