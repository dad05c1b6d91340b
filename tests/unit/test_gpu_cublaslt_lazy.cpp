// tests/unit/test_gpu_cublaslt_lazy.cpp: cuBLASLt is opened on first use (gpu/cublaslt_lazy), not
// linked: a name that does not exist, or a library that is not cuBLASLt, gives a reason a person
// can act on; the toolkit's library has every function the forwarders need; and a forwarder
// reaches the real library. Built only with CUDA (the loader lives in gb_gpu), runs without a
// GPU: no call here needs a device.
#ifdef GPUBASE_WITH_CUDA
#include <cublasLt.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "gpu/cublaslt_lazy.hpp"

namespace gb::gpu {
namespace {

const std::string kSoname = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);

TEST(CublasLtLazy, MissingLibraryNamesItAndTheLoadersReason) {
  const CublasLtLoad l = probe_cublaslt({"/nonexistent/gpubase/" + kSoname});
  EXPECT_FALSE(l.ok);
  EXPECT_EQ(l.error.rfind(kSoname + " not found: /nonexistent/gpubase/" + kSoname + ": ", 0), 0u)
      << l.error;
  EXPECT_NE(l.error.find("No such file"), std::string::npos) << l.error;  // dlerror's words
  EXPECT_EQ(l.resolved, 0u);
}

TEST(CublasLtLazy, EveryNameTriedIsNamed) {
  const CublasLtLoad l = probe_cublaslt({"/nonexistent/a/" + kSoname, "/nonexistent/b/" + kSoname});
  EXPECT_FALSE(l.ok);
  EXPECT_NE(l.error.find("/nonexistent/a/"), std::string::npos) << l.error;
  EXPECT_NE(l.error.find("/nonexistent/b/"), std::string::npos) << l.error;
}

TEST(CublasLtLazy, ALibraryWithoutTheFunctionsIsRefusedByName) {
  const CublasLtLoad l = probe_cublaslt({GPUBASE_FAKE_NVML_PATH});
  EXPECT_FALSE(l.ok);
  EXPECT_NE(l.error.find("lacks cublasLtGetVersion"), std::string::npos) << l.error;
  EXPECT_EQ(l.resolved, 0u);
  EXPECT_EQ(l.absent.size(), l.functions);
}

TEST(CublasLtLazy, TheSonameIsTriedFirst) {
  const auto names = default_cublaslt_library_names();
  ASSERT_GE(names.size(), 1u);
  EXPECT_EQ(names[0], kSoname);
}

TEST(CublasLtLazy, AnEnvironmentOverrideIsTheOnlyNameTried) {
  setenv("GPUBASE_CUBLASLT_LIBRARY", "/opt/custom/libcublasLt.so", 1);
  const auto names = default_cublaslt_library_names();
  unsetenv("GPUBASE_CUBLASLT_LIBRARY");
  ASSERT_EQ(names.size(), 1u);
  EXPECT_EQ(names[0], "/opt/custom/libcublasLt.so");
}

TEST(CublasLtLazy, TheToolkitsLibraryHasEveryFunction) {
  const CublasLtLoad l = probe_cublaslt(default_cublaslt_library_names());
  if (!l.ok && l.error.find(" not found: ") != std::string::npos)
    GTEST_SKIP() << "no cuBLASLt on this machine: " << l.error;
  ASSERT_TRUE(l.ok) << l.error;
  EXPECT_GT(l.functions, 10u);
  EXPECT_EQ(l.resolved, l.functions);
  EXPECT_TRUE(l.absent.empty());
}

TEST(CublasLtLazy, ForwardersReachTheLibrary) {
  if (!cublaslt_available()) GTEST_SKIP() << "no cuBLASLt on this machine: " << cublaslt_load_error();
  // major*10000 + minor*100 + patch, from the library the forwarder resolved.
  EXPECT_EQ(cublasLtGetVersion() / 10000, static_cast<std::size_t>(CUBLAS_VER_MAJOR));
  // A descriptor is host memory: created, set and destroyed without a device.
  cublasLtMatmulDesc_t desc{};
  ASSERT_EQ(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), CUBLAS_STATUS_SUCCESS);
  const cublasOperation_t trans = CUBLAS_OP_T;
  EXPECT_EQ(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans, sizeof(trans)),
            CUBLAS_STATUS_SUCCESS);
  // A wrong size reaches the library and is refused there: the arguments arrive as passed.
  EXPECT_EQ(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans, 1),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasLtMatmulDescDestroy(desc), CUBLAS_STATUS_SUCCESS);
}

}  // namespace
}  // namespace gb::gpu
#endif
