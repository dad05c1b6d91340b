// The injection library on a machine without a GPU or without CUPTI: InitializeInjection
// returns, nothing crashes, and the ring says why nothing was collected. Each case runs in a
// forked child (the library initialises once per process).
#include <gtest/gtest.h>
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "cuda_activity/ring.hpp"

namespace ca = gb::cuda_activity;
namespace fs = std::filesystem;

namespace {

#ifdef GPUBASE_CUDA_INJECT_PATH
// Loads the library in a child with the given environment and calls InitializeInjection;
// returns the child's exit code (0: it returned 1 as CUDA expects).
int run_injection(const char* ring_dir, const char* cupti_path) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (ring_dir) ::setenv("GPUBASE_CUDA_RING_DIR", ring_dir, 1);
    else ::unsetenv("GPUBASE_CUDA_RING_DIR");
    if (cupti_path) ::setenv("GPUBASE_CUPTI_PATH", cupti_path, 1);
    void* h = ::dlopen(GPUBASE_CUDA_INJECT_PATH, RTLD_NOW | RTLD_LOCAL);
    if (!h) ::_exit(10);
    auto init = reinterpret_cast<int (*)()>(::dlsym(h, "InitializeInjection"));
    if (!init) ::_exit(11);
    ::_exit(init() == 1 ? 0 : 12);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}
#endif

class InjectNoGpu : public ::testing::Test {
 protected:
  void SetUp() override {
#ifndef GPUBASE_CUDA_INJECT_PATH
    GTEST_SKIP() << "libgpubase_cuda_inject.so is not built here (no CUDA toolkit or no CUPTI "
                    "headers)";
#endif
    dir_ = fs::temp_directory_path() / ("gb_inject_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

}  // namespace

TEST_F(InjectNoGpu, WithoutCuptiItWritesASkippedStatusAndReturns) {
#ifdef GPUBASE_CUDA_INJECT_PATH
  ASSERT_EQ(run_injection(dir_.c_str(), "/nonexistent/libcupti.so.13"), 0);
  std::vector<fs::path> rings;
  for (const auto& e : fs::directory_iterator(dir_)) rings.push_back(e.path());
  ASSERT_EQ(rings.size(), 1u);
  std::string why;
  auto reader = ca::RingReader::open(rings[0].string(), why);
  ASSERT_TRUE(reader) << why;
  const ca::RingRead got = reader->read_new();
  ASSERT_EQ(got.records.size(), 1u);
  EXPECT_EQ(got.records[0].kind, ca::RecordKind::status);
  EXPECT_EQ(got.records[0].status, ca::StatusCode::skipped);
  EXPECT_NE(std::string(got.records[0].status_text).find("CUPTI not found"), std::string::npos)
      << got.records[0].status_text;
#endif
}

TEST_F(InjectNoGpu, OutsideWatchItStaysInert) {
#ifdef GPUBASE_CUDA_INJECT_PATH
  ASSERT_EQ(run_injection(nullptr, nullptr), 0);
  EXPECT_TRUE(fs::is_empty(dir_));
#endif
}

TEST_F(InjectNoGpu, AnUnwritableRingFolderIsReportedNotFatal) {
#ifdef GPUBASE_CUDA_INJECT_PATH
  EXPECT_EQ(run_injection("/nonexistent/gpubase-ring", "/nonexistent/libcupti.so.13"), 0);
#endif
}
