// tests/unit/test_gpu_host_wait.cpp: GPUBASE_CUDA_WAIT's parser (gpu/host_wait): every policy
// round-trips through its name, unset or empty means the default, anything else is a usage
// error that names the valid values. Built only with CUDA (the file lives in gb_gpu), runs
// without a GPU: apply_host_wait is not called.
#ifdef GPUBASE_WITH_CUDA
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "core/error.hpp"
#include "gpu/host_wait.hpp"

namespace gb::gpu {
namespace {

class EnvGuard {
 public:
  EnvGuard() {
    if (const char* v = std::getenv("GPUBASE_CUDA_WAIT")) saved_ = v, had_ = true;
  }
  ~EnvGuard() {
    if (had_) setenv("GPUBASE_CUDA_WAIT", saved_.c_str(), 1);
    else unsetenv("GPUBASE_CUDA_WAIT");
  }

 private:
  std::string saved_;
  bool had_ = false;
};

TEST(HostWait, EveryPolicyRoundTripsThroughItsName) {
  for (HostWait w : {HostWait::automatic, HostWait::spin, HostWait::yield, HostWait::block}) {
    const auto back = parse_host_wait(to_string(w));
    ASSERT_TRUE(back.has_value()) << to_string(w);
    EXPECT_EQ(*back, w);
  }
  EXPECT_FALSE(parse_host_wait("Block").has_value());
  EXPECT_FALSE(parse_host_wait("").has_value());
}

TEST(HostWait, EnvironmentChoosesElseTheDefault) {
  EnvGuard guard;
  unsetenv("GPUBASE_CUDA_WAIT");
  EXPECT_EQ(host_wait_from_env(), kDefaultHostWait);
  setenv("GPUBASE_CUDA_WAIT", "", 1);
  EXPECT_EQ(host_wait_from_env(), kDefaultHostWait);
  setenv("GPUBASE_CUDA_WAIT", "block", 1);
  EXPECT_EQ(host_wait_from_env(), HostWait::block);
  setenv("GPUBASE_CUDA_WAIT", "sleep", 1);
  try {
    (void)host_wait_from_env();
    FAIL() << "an unknown policy was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
    EXPECT_NE(std::string(e.what()).find("auto, spin, yield or block"), std::string::npos);
  }
}

}  // namespace
}  // namespace gb::gpu
#endif
