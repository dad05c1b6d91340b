// tests/unit/test_gpu_nccl_load.cpp: NCCL degrades cleanly when it is missing: loading libnccl
// from a path that does not exist, or from a library that is not libnccl, answers nullptr and a
// reason a person can act on (it becomes "skipped: reason" for the probe's nccl section); the
// version spelling; and the CPU reference check of the collectives' outputs (what the GPU check
// kernel is tested against). Built only with CUDA (gb_gpu), runs without a GPU.
#ifdef GPUBASE_WITH_CUDA
#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "gpu/collective_data.hpp"
#include "gpu/nccl.hpp"

namespace gb::gpu {
namespace {

TEST(NcclLoad, MissingLibraryIsACleanNotFound) {
  std::string why;
  const auto lib = NcclLibrary::load({"/nonexistent/gpubase/libnccl.so.2"}, why);
  EXPECT_EQ(lib, nullptr);
  EXPECT_EQ(why.rfind("libnccl not found (tried /nonexistent/gpubase/libnccl.so.2", 0), 0u) << why;
}

TEST(NcclLoad, ALibraryWithoutNcclSymbolsIsRefusedByName) {
  std::string why;
  const auto lib = NcclLibrary::load({GPUBASE_FAKE_NVML_PATH}, why);
  EXPECT_EQ(lib, nullptr);
  EXPECT_NE(why.find("has no ncclGetVersion: not libnccl"), std::string::npos) << why;
}

TEST(NcclLoad, EnvironmentOverrideIsTriedFirst) {
  setenv("GPUBASE_NCCL_LIBRARY", "/opt/nccl/lib/libnccl.so.2", 1);
  const auto names = default_nccl_library_names();
  unsetenv("GPUBASE_NCCL_LIBRARY");
  ASSERT_EQ(names.size(), 3u);
  EXPECT_EQ(names[0], "/opt/nccl/lib/libnccl.so.2");
  EXPECT_EQ(names[1], "libnccl.so.2");
}

TEST(NcclLoad, VersionCodesOfBothEras) {
  EXPECT_EQ(nccl_version_text(22807), "2.28.7");
  EXPECT_EQ(nccl_version_text(21903), "2.19.3");
  EXPECT_EQ(nccl_version_text(2708), "2.7.8");
  EXPECT_EQ(nccl_version_text(0), "");
}

TEST(CollectiveData, InputsAreSmallIntegersThatDifferByRankAndElement) {
  int same = 0;
  for (std::uint64_t i = 0; i < 1000; ++i) {
    const float a = collective_input(0, i), b = collective_input(1, i);
    EXPECT_EQ(a, static_cast<float>(static_cast<int>(a)));
    EXPECT_GE(a, -16.0f);
    EXPECT_LE(a, 15.0f);
    same += a == b;
  }
  EXPECT_LT(same, 100);  // ~1/32 agree by chance
}

// Each rank's output as the collective defines it, built from the inputs by hand.
std::vector<float> output_of(CollectiveOp op, int rank, int ranks, std::uint64_t count) {
  std::vector<float> out;
  if (op == CollectiveOp::all_gather) {
    for (int k = 0; k < ranks; ++k)
      for (std::uint64_t i = 0; i < count; ++i) out.push_back(collective_input(k, i));
    return out;
  }
  const std::uint64_t offset = op == CollectiveOp::reduce_scatter ? rank * count : 0;
  for (std::uint64_t i = 0; i < count; ++i) {
    float s = 0;
    for (int k = 0; k < ranks; ++k) s += collective_input(k, offset + i);
    out.push_back(s);
  }
  return out;
}

TEST(CollectiveData, ReferenceAcceptsTheRightOutputOfEveryCollective) {
  for (const CollectiveOp op :
       {CollectiveOp::all_reduce, CollectiveOp::all_gather, CollectiveOp::reduce_scatter})
    for (int rank = 0; rank < 3; ++rank)
      EXPECT_EQ(check_collective_output(output_of(op, rank, 3, 257), op, rank, 3, 257), "")
          << static_cast<int>(op) << " rank " << rank;
}

TEST(CollectiveData, OneRankAllReduceIsTheInput) {
  const std::vector<float> out = output_of(CollectiveOp::all_reduce, 0, 1, 64);
  for (std::uint64_t i = 0; i < 64; ++i) EXPECT_EQ(out[i], collective_input(0, i));
  EXPECT_EQ(check_collective_output(out, CollectiveOp::all_reduce, 0, 1, 64), "");
}

TEST(CollectiveData, AWrongElementIsCountedAndNamed) {
  std::vector<float> out = output_of(CollectiveOp::reduce_scatter, 1, 4, 100);
  const float right = out[42];
  out[42] = right + 1;
  out[77] = right + 100;
  const std::string why = check_collective_output(out, CollectiveOp::reduce_scatter, 1, 4, 100);
  EXPECT_EQ(why.rfind("2 of 100 elements differ; element 42 is ", 0), 0u) << why;
}

TEST(CollectiveData, AnotherRanksShareIsWrong) {
  // Rank 0's reduce-scatter share is not rank 1's.
  const std::vector<float> out = output_of(CollectiveOp::reduce_scatter, 0, 2, 100);
  EXPECT_NE(check_collective_output(out, CollectiveOp::reduce_scatter, 1, 2, 100), "");
}

TEST(CollectiveData, AShortOutputIsRefused) {
  const std::vector<float> out(10, 0.0f);
  EXPECT_EQ(check_collective_output(out, CollectiveOp::all_gather, 0, 2, 10),
            "output has 10 elements, expected 20");
}

}  // namespace
}  // namespace gb::gpu
#endif
