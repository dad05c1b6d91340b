// tests/unit/test_cli_loader_limits.cpp: `gpubase loader` refuses sizes it cannot honour as
// usage errors (exit 2) naming the option, before allocating anything: a negative batch must
// not wrap around in an unsigned option, and a ring of batch slots larger than any host must
// not become std::bad_alloc ("internal error", exit 4).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli/app.hpp"
#include "data/synth.hpp"
#include "test_data_util.hpp"

namespace gb {
namespace {

struct Outcome {
  int code = -1;
  std::string err;
};

Outcome loader(const std::vector<std::string>& extra) {
  static test::TempDir dir;
  static const std::string set = [] {
    data::SynthOptions synth;
    synth.output = dir / "set";
    synth.images = 4;
    synth.classes = 2;
    synth.size_scale = 0.2;
    synth.threads = 1;
    data::synth_dataset(synth);
    return synth.output.string();
  }();
  std::vector<std::string> args = {"gpubase", "loader", "--data", set, "--seconds", "0.1", "-q"};
  args.insert(args.end(), extra.begin(), extra.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  testing::internal::CaptureStderr();
  Outcome o;
  o.code = cli::main(static_cast<int>(argv.size()), argv.data());
  o.err = testing::internal::GetCapturedStderr();
  return o;
}

TEST(LoaderLimits, ANegativeBatchIsAUsageErrorNotAWrappedNumber) {
  const Outcome o = loader({"--batch", "-5"});
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("--batch: Value -5 not in range 1 to 65536"), std::string::npos) << o.err;
}

TEST(LoaderLimits, AHugeBatchOrSizeIsAUsageError) {
  EXPECT_EQ(loader({"--batch", "100000000"}).code, 2);
  const Outcome size = loader({"--size", "100000"});
  EXPECT_EQ(size.code, 2);
  EXPECT_NE(size.err.find("--size"), std::string::npos) << size.err;
}

TEST(LoaderLimits, ARingOfSlotsNoHostHoldsIsRefusedNamingItsSize) {
  const Outcome o = loader({"--batch", "65536", "--size", "4096"});
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("12288 GiB of batch slots; at most 64 GiB"), std::string::npos) << o.err;
}

}  // namespace
}  // namespace gb
