// cli/train_cmd.cpp: `gpubase train [--model LIST] [--precision LIST] [--batch N] ...`.
// Parses the options into bench::TrainBenchOptions, runs the suite into a Run, lets diagnose
// mark throttled figures, prints or saves it, and maps the outcome to an exit code.
#include "cli/train_cmd.hpp"

#include <CLI/CLI.hpp>
#include <cstdio>

#include "bench/train.hpp"
#include "cli/help.hpp"
#include "cli/output.hpp"
#include "cli/run_args.hpp"
#include "cli/suite_run.hpp"
#include "core/error.hpp"
#include "pipeline/options.hpp"

namespace gb::cli {

struct TrainCli {
  bench::TrainBenchOptions bench;
  std::string decode;  // empty: cpu
  OutputOptions out;
  bool save = false;
};

std::shared_ptr<TrainCli> add_train_command(CLI::App& app, CLI::App*& cmd) {
  auto cli = std::make_shared<TrainCli>();
  cmd = app.add_subcommand("train",
                           "training throughput (images/s) of ResNet-50, MobileNetV2 and a small "
                           "ResNet on cuDNN + cuBLASLt, per precision");
  cmd->add_option("--model", cli->bench.models,
                  "resnet50, mobilenet_v2, small_resnet; repeat or comma-separate (default: "
                  "resnet50)")
      ->delimiter(',');
  cmd->add_option("--precision", cli->bench.precisions,
                  "fp32 (tensor cores off), tf32, fp16 (dynamic loss scaling), bf16; repeat or "
                  "comma-separate (default: all four)")
      ->delimiter(',');
  cmd->add_option("--batch", cli->bench.batch, "images per step")->capture_default_str();
  cmd->add_option("--steps", cli->bench.steps, "timed steps per configuration")
      ->capture_default_str();
  cmd->add_option("--warmup", cli->bench.warmup, "untimed steps first")->capture_default_str();
  cmd->add_flag("--graph,!--no-graph", cli->bench.cuda_graph,
                "capture the whole step as a CUDA graph in the warm-up, then replay it "
                "(default; --no-graph launches every kernel from the host each step)");
  cmd->add_option("--in-flight", cli->bench.max_in_flight,
                  "steps queued on the GPU at most; the host sleeps until the oldest ends (0: "
                  "no limit)")
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  cmd->add_option("--seed", cli->bench.seed, "weight initialisation seed")->capture_default_str();
  cmd->add_option("--data", cli->bench.data,
                  "train on a JPEG dataset (ImageFolder, WebDataset shards, .gbpack) through "
                  "the loader instead of the synthetic batch, and report the share of step time "
                  "the GPU waited for data");
  cmd->add_option("--decode", cli->decode,
                  "with --data: cpu (CPU workers decode, the GPU normalizes; default), gpu "
                  "(nvJPEG decodes whole batches, one GPU kernel crops and resizes) or both (the "
                  "CPU/GPU split: a share of the samples each way, in the same batches)");
  cmd->add_option("--gpu-share", cli->bench.data_gpu_share,
                  "with --decode both: share of the samples nvJPEG decodes, in (0, 1] (default: "
                  "the share that keeps both paths busy, from their rates measured first)");
  cmd->add_option("--workers", cli->bench.data_workers,
                  "with --data: loader worker threads (default: the usable cores but one; "
                  "--decode gpu: min(4, cores) reader threads)");
  cmd->add_option("--prefetch", cli->bench.data_prefetch, "with --data: batch slots in the ring")
      ->capture_default_str();
  add_device_option(*cmd, cli->bench.device);
  add_output_options(*cmd, cli->out, &cli->save);
  cmd->footer(train_help());
  return cli;
}

int run_train_command(const TrainCli& cli) {
  bench::TrainBenchOptions options = cli.bench;
  if (!cli.decode.empty()) {
    options.data_decode = pipeline::decode_mode_from(cli.decode, "--decode");
    if (options.data.empty())
      throw Error(ErrorKind::usage, "--decode chooses how --data is decoded: give --data PATH");
  }
  SuiteRun suite("train");
  bench::ResultSink sink([&](const std::string& line) { progress_line(cli.out, line); });
  suite.run_suite(sink, cli.out, [&] {
    const bench::TrainBenchOutcome outcome = bench::run_train_bench(options, sink);
    return SuiteEnd{outcome.gpu_found, outcome.no_gpu_reason};
  });
  return suite.finish(cli.out, cli.save);
}

int run_train_args(const std::vector<std::string>& args) {
  return run_subcommand_args("train", args, add_train_command,
                             [](const auto& cli) { return run_train_command(*cli); });
}

}  // namespace gb::cli
