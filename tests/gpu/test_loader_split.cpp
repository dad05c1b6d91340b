// tests/gpu/test_loader_split.cpp: the CPU/GPU split end to end on a small synthetic JPEG set
// (`gpubase loader --decode both`): the run's own checks pass before timing (CPU-decoded samples
// reach the tensor unchanged, nvJPEG's within PSNR 30 dB of the CPU path), the measured share
// of nvJPEG samples follows the asked one, and the balanced default picks a share in (0, 1].
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/loader.hpp"
#include "data/open.hpp"
#include "data/synth.hpp"
#include "gpu/nvjpeg.hpp"

namespace gb::bench {
namespace {

// A fresh directory under the system temp folder, removed with everything in it.
class ScratchDir {
 public:
  ScratchDir()
      : path_(std::filesystem::temp_directory_path() /
              ("gb-split-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
               "-" + std::to_string(reinterpret_cast<std::uintptr_t>(this)))) {
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

class LoaderSplitGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) GTEST_SKIP() << "no CUDA device";
    std::string why;
    if (!gpu::NvjpegLibrary::load(gpu::default_nvjpeg_library_names(), why))
      GTEST_SKIP() << why;
    data::SynthOptions o;
    o.output = dir / "set";
    o.images = 48;
    o.classes = 3;
    o.size_scale = 0.3;
    o.threads = 2;
    data::synth_dataset(o);
    dataset = data::open_dataset({.path = dir / "set"});
  }
  LoaderBenchOptions options(double share) const {
    LoaderBenchOptions o;
    o.batch_size = 16;
    o.image_size = 64;
    o.workers = {2};
    o.prefetch_depth = 3;
    o.seconds_per_point = 0.5;
    o.decode = pipeline::DecodeMode::both;
    o.gpu_share = share;
    return o;
  }
  ScratchDir dir;
  std::unique_ptr<data::Dataset> dataset;
};

TEST_F(LoaderSplitGpu, AskedShareIsMeasuredAndTheChecksPass) {
  ResultSink sink;
  ASSERT_NO_THROW(run_loader_bench(*dataset, options(0.5), sink));
  const Result* r = find_result(sink.results(), "loader.split.images_per_s");
  ASSERT_NE(r, nullptr);
  ASSERT_NE(r->status, Status::skipped) << r->reason;
  ASSERT_TRUE(r->value);
  EXPECT_GT(*r->value, 0);
  EXPECT_EQ(r->find_param("gpu_share_asked_pct"), "50.0");
  const Result* share = find_result(sink.results(), "loader.split.gpu_share.pct");
  ASSERT_TRUE(share && share->value);
  EXPECT_GT(*share->value, 30);  // 48 samples, reshuffled every epoch: close to 50 %
  EXPECT_LT(*share->value, 70);
  EXPECT_NE(r->find_param("check")->find("PSNR"), std::string::npos);
  EXPECT_GT(std::stod(*r->find_param("cpu_decoded")), 0);
  EXPECT_GT(std::stod(*r->find_param("gpu_decoded")), 0);
}

TEST_F(LoaderSplitGpu, BalancedDefaultSendsAShareOfTheSamplesToTheGpu) {
  ResultSink sink;
  ASSERT_NO_THROW(run_loader_bench(*dataset, options(0), sink));
  const Result* share = find_result(sink.results(), "loader.split.gpu_share.pct");
  ASSERT_TRUE(share && share->value);
  EXPECT_GT(*share->value, 0);
  EXPECT_LE(*share->value, 100);
}

}  // namespace
}  // namespace gb::bench
