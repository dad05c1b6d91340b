// tests/unit/test_cli_device.cpp: -d/--device is one option with one check for every command
// that touches a GPU (probe, baseline, train, amp, loader, watch), driven through gb::cli::main
// as the binary runs it. A negative index is a usage error (exit 2) on every machine; an index
// past the machine's devices is a usage error on a GPU host, while a machine without a GPU still
// reports that (exit 3) as it does for the default device.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bench/suite.hpp"
#include "test_cli_util.hpp"
#include "test_data_util.hpp"

namespace gb {
namespace {

using Outcome = test::CliOutcome;

Outcome gpubase(const std::vector<std::string>& args) { return test::run_gpubase(args); }

bool has_cuda_gpu() {
  std::string why;
  return bench::cuda_device_count(why) > 0;
}

// The arguments that make each command quick and keep it from writing anything outside `dir`.
std::vector<std::string> command_args(const std::string& command, const test::TempDir& dir) {
  const std::string out = (dir / "run.json").string();
  const std::vector<std::string> quiet = {"--json", "-q", "-o", out};
  std::vector<std::string> args = {command};
  if (command == "probe") args.insert(args.end(), {"--quick", "--only", "env"});
  if (command == "baseline") args.insert(args.end(), {"--quick", "--no-save"});
  if (command == "train") args.insert(args.end(), {"--steps", "1", "--warmup", "3"});
  if (command == "amp") args.insert(args.end(), {"--seeds", "1", "--epochs", "1"});
  if (command == "loader")
    args.insert(args.end(), {"--data", test::tiny_jpeg_set(dir / "set").string(), "--seconds", "0.1"});
  if (command != "watch") args.insert(args.end(), quiet.begin(), quiet.end());
  return args;
}

// The device option goes before `--` (watch's command) and after everything else.
std::vector<std::string> with_device(std::vector<std::string> args, int device) {
  args.insert(args.end(), {"-d", std::to_string(device)});
  if (args.front() == "watch") args.insert(args.end(), {"--no-save", "-q", "--", "true"});
  return args;
}

class DeviceOption : public ::testing::TestWithParam<std::string> {
 protected:
  test::TempDir dir;
};

TEST_P(DeviceOption, ANegativeIndexIsAUsageErrorOnEveryMachine) {
  const Outcome o = gpubase(with_device(command_args(GetParam(), dir), -1));
  EXPECT_EQ(o.code, 2) << o.err;
  EXPECT_NE(o.err.find("a device index is 0 or more"), std::string::npos) << o.err;
}

TEST_P(DeviceOption, AnIndexPastTheMachinesGpusIsAUsageErrorNamingTheRange) {
  if (!has_cuda_gpu()) GTEST_SKIP() << "needs a GPU: without one the command exits 3";
  const Outcome o = gpubase(with_device(command_args(GetParam(), dir), 4096));
  EXPECT_EQ(o.code, 2) << o.err;
  EXPECT_NE(o.err.find("device 4096 does not exist: this machine has"), std::string::npos)
      << o.err;
}

INSTANTIATE_TEST_SUITE_P(EveryGpuCommand, DeviceOption,
                         ::testing::Values("probe", "baseline", "train", "amp", "loader", "watch"));

// Without a GPU the index cannot be checked against a device list: the command says there is no
// GPU (exit 3), as it does for the default device.
class DeviceOptionWithoutAGpu : public ::testing::TestWithParam<std::string> {
 protected:
  test::TempDir dir;
};

TEST_P(DeviceOptionWithoutAGpu, AnOutOfRangeIndexStillExits3) {
  if (has_cuda_gpu()) GTEST_SKIP() << "this machine has a GPU";
  const Outcome o = gpubase(with_device(command_args(GetParam(), dir), 4096));
  EXPECT_EQ(o.code, 3) << o.err;
}

INSTANTIATE_TEST_SUITE_P(SuitesThatNeedAGpu, DeviceOptionWithoutAGpu,
                         ::testing::Values("probe", "baseline", "train", "amp"));

}  // namespace
}  // namespace gb
