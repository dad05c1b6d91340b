// tests/unit/test_cli_prometheus.cpp: --prometheus and --prometheus-textfile are checked before
// the job starts: a bad address or an unwritable folder is a usage error (exit 2).
#include <gtest/gtest.h>

#include "test_cli_util.hpp"

TEST(CliPrometheus, ABadAddressIsAUsageErrorBeforeTheJobRuns) {
  const auto o = gb::test::run_gpubase(
      {"watch", "--no-save", "--view", "none", "--prometheus", "9400", "--", "true"});
  EXPECT_EQ(o.code, 2) << o.err;
  EXPECT_NE(o.err.find("ADDRESS:PORT"), std::string::npos) << o.err;
}

TEST(CliPrometheus, ATextfileInAMissingFolderIsAUsageError) {
  const auto o = gb::test::run_gpubase({"watch", "--no-save", "--view", "none",
                                        "--prometheus-textfile", "/nonexistent-dir/gpubase.prom",
                                        "--", "true"});
  EXPECT_EQ(o.code, 2) << o.err;
  EXPECT_NE(o.err.find("does not exist"), std::string::npos) << o.err;
}
