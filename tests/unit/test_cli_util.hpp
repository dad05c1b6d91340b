// tests/unit/test_cli_util.hpp: running `gpubase ARGS...` in process, as the binary does
// (gb::cli::main), with stderr captured; and a tiny synthetic JPEG set for commands that need
// a dataset.
#pragma once
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "cli/app.hpp"
#include "data/synth.hpp"

namespace gb::test {

struct CliOutcome {
  int code = -1;
  std::string err;
};

inline CliOutcome run_gpubase(std::vector<std::string> args) {
  args.insert(args.begin(), "gpubase");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  testing::internal::CaptureStderr();
  CliOutcome o;
  o.code = cli::main(static_cast<int>(argv.size()), argv.data());
  o.err = testing::internal::GetCapturedStderr();
  return o;
}

// Four small JPEGs in two classes under `dir`, an ImageFolder; returns its path.
inline std::filesystem::path tiny_jpeg_set(const std::filesystem::path& dir) {
  data::SynthOptions synth;
  synth.output = dir;
  synth.images = 4;
  synth.classes = 2;
  synth.size_scale = 0.2;
  synth.threads = 1;
  data::synth_dataset(synth);
  return synth.output;
}

}  // namespace gb::test
