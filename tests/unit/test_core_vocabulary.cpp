// tests/unit/test_core_vocabulary.cpp: the training vocabulary (core/vocabulary.hpp): one
// spelling per model and precision, parsed back exactly, in report order.
#include <gtest/gtest.h>

#include "core/vocabulary.hpp"

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

}  // namespace
}  // namespace gb
