// tests/unit/test_gpu_nvjpeg_load.cpp: the GPU decode path degrades cleanly without nvJPEG:
// loading libnvjpeg from a path that does not exist, or from a library that is not libnvjpeg,
// answers nullptr and a reason a person can act on (never a crash); that reason becomes a skipped
// loader.gpu_decode.images_per_s. Also the option parsers. Built only with CUDA (the loader lives
// in gb_gpu), runs without a GPU: no CUDA call is made.
#ifdef GPUBASE_WITH_CUDA
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "bench/loader.hpp"
#include "gpu/nvjpeg.hpp"

namespace gb::gpu {
namespace {

TEST(NvjpegLoad, MissingLibraryIsACleanNotFound) {
  std::string why;
  const auto lib = NvjpegLibrary::load({"/nonexistent/gpubase/libnvjpeg.so.13"}, why);
  EXPECT_EQ(lib, nullptr);
  EXPECT_EQ(why.rfind("libnvjpeg not found (tried /nonexistent/gpubase/libnvjpeg.so.13", 0), 0u)
      << why;
}

TEST(NvjpegLoad, EveryNameTriedIsNamed) {
  std::string why;
  const auto lib =
      NvjpegLibrary::load({"/nonexistent/a/libnvjpeg.so.13", "/nonexistent/b/libnvjpeg.so"}, why);
  EXPECT_EQ(lib, nullptr);
  EXPECT_NE(why.find("/nonexistent/a/libnvjpeg.so.13"), std::string::npos) << why;
  EXPECT_NE(why.find("/nonexistent/b/libnvjpeg.so"), std::string::npos) << why;
}

TEST(NvjpegLoad, ALibraryWithoutNvjpegSymbolsIsRefusedByName) {
  std::string why;
  const auto lib = NvjpegLibrary::load({GPUBASE_FAKE_NVML_PATH}, why);
  EXPECT_EQ(lib, nullptr);
  EXPECT_NE(why.find("has no nvjpegGetProperty"), std::string::npos) << why;
}

TEST(NvjpegLoad, EnvironmentOverrideIsTriedFirst) {
  setenv("GPUBASE_NVJPEG_LIBRARY", "/opt/custom/libnvjpeg.so.13", 1);
  const auto names = default_nvjpeg_library_names();
  unsetenv("GPUBASE_NVJPEG_LIBRARY");
  ASSERT_EQ(names.size(), 4u);
  EXPECT_EQ(names[0], "/opt/custom/libnvjpeg.so.13");
  EXPECT_EQ(names[1], "libnvjpeg.so.13");
  EXPECT_EQ(names[2], "libnvjpeg.so.12");
  EXPECT_EQ(names[3], "libnvjpeg.so");
}

TEST(NvjpegLoad, StatusNamesKnownAndUnknownCodes) {
  EXPECT_EQ(nvjpeg_status_name(3), "NVJPEG_STATUS_BAD_JPEG");
  EXPECT_EQ(nvjpeg_status_name(7), "NVJPEG_STATUS_ARCH_MISMATCH");
  EXPECT_EQ(nvjpeg_status_name(42), "nvJPEG status 42");
}

TEST(NvjpegLoad, BackendNamesParse) {
  EXPECT_EQ(parse_nvjpeg_backend("auto"), NvjpegBackendChoice::automatic);
  EXPECT_EQ(parse_nvjpeg_backend("hardware"), NvjpegBackendChoice::hardware);
  EXPECT_EQ(parse_nvjpeg_backend("gpu_hybrid"), NvjpegBackendChoice::gpu_hybrid);
  EXPECT_EQ(parse_nvjpeg_backend("default"), NvjpegBackendChoice::default_backend);
  EXPECT_FALSE(parse_nvjpeg_backend("HARDWARE").has_value());
}

TEST(GpuDecodeResults, NotFoundBecomesASkippedResultWithTheReason) {
  const auto results = bench::gpu_decode_results(std::nullopt, "libnvjpeg not found (tried x)");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].key, "loader.gpu_decode.images_per_s");
  EXPECT_EQ(results[0].status, Status::skipped);
  EXPECT_EQ(results[0].reason, "libnvjpeg not found (tried x)");
}

TEST(GpuDecodeResults, AMeasurementReportsRateStagesCoresAndBadSamples) {
  bench::GpuDecodeMeasurement m;
  m.backend = "hardware";
  m.library = "libnvjpeg.so.13 (13.0.0)";
  m.workers = 4;
  m.batch_images_per_s = {15000, 16000, 17000};
  m.images = 768;
  m.batches = 3;
  m.host_read_ms = 9.5;
  m.decode_ms = 12;
  m.resize_ms = 0.2;
  m.cpu_cores_used = 2.5;
  m.bad_samples = 1;
  m.decode_failures = 2;
  const auto results = bench::gpu_decode_results(m, "");
  ASSERT_FALSE(results.empty());
  EXPECT_EQ(results[0].key, "loader.gpu_decode.images_per_s");
  ASSERT_TRUE(results[0].value.has_value());
  EXPECT_DOUBLE_EQ(*results[0].value, 16000);
  EXPECT_EQ(results[0].text_param("backend"), "hardware");
  EXPECT_EQ(results[0].number_param("cpu_cores_used"), 2.5);
  bool stages = false, bad = false;
  for (const Result& r : results) {
    if (r.key == "loader.gpu_decode.stage.decode.ms") stages = r.value == 12.0;
    if (r.key == "loader.gpu_decode.bad_samples") bad = r.value == 3.0;
  }
  EXPECT_TRUE(stages);
  EXPECT_TRUE(bad);
}

}  // namespace
}  // namespace gb::gpu
#endif  // GPUBASE_WITH_CUDA
