// cli/loader_cmd.cpp: `gpubase loader [--data PATH] [--workers LIST] ...`. Without --data the
// benchmark runs on a synthetic ImageNet-like set generated once under
// <data dir>/datasets/synth-512 (into a ".tmp" folder renamed when complete, so an interrupted
// generation is never mistaken for a dataset) and reused by later runs.
#include "cli/loader_cmd.hpp"

#include <filesystem>
#include <sstream>

#include "bench/loader.hpp"
#include "cli/help.hpp"
#include "cli/output.hpp"
#include "cli/suite_run.hpp"
#include "core/cancel.hpp"
#include "core/error.hpp"
#include "data/open.hpp"
#include "data/synth.hpp"
#include "pipeline/options.hpp"

namespace gb::cli {

namespace fs = std::filesystem;

struct LoaderCli {
  bench::LoaderBenchOptions bench;
  std::string data;
  std::string workers;  // "1,2,4"; empty: the default sweep
  std::string decode = "cpu";
  std::size_t gpu_max_jpeg_kb = 1024;
  OutputOptions out;
  bool save = false;
};

namespace {

constexpr std::size_t kSynthImages = 512;
constexpr std::size_t kSynthClasses = 16;

std::vector<unsigned> parse_workers(const std::string& list) {
  std::vector<unsigned> out;
  std::stringstream ss(list);
  for (std::string item; std::getline(ss, item, ',');) {
    if (item.empty()) continue;
    std::size_t used = 0;
    unsigned long n = 0;
    try {
      n = std::stoul(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || n == 0 || n > 4096)
      throw Error(ErrorKind::usage, "--workers: '" + item + "' is not a worker count (1 .. 4096)");
    out.push_back(static_cast<unsigned>(n));
  }
  if (out.empty()) throw Error(ErrorKind::usage, "--workers: give a list such as 1,2,4");
  return out;
}

// The built-in synthetic set: generated on first use, then reused.
fs::path default_dataset(const OutputOptions& out) {
  const fs::path dir = data_dir() / "datasets" / "synth-512";
  if (fs::exists(dir)) {
    progress_line(out, "loader: no --data; using the synthetic set " + dir.string());
    return dir;
  }
  const fs::path tmp = dir.string() + ".tmp";
  fs::remove_all(tmp);
  progress_line(out, "loader: no --data; generating a synthetic ImageNet-like set (" +
                         std::to_string(kSynthImages) + " images, " +
                         std::to_string(kSynthClasses) + " classes) in " + dir.string() +
                         ", reused by later runs");
  data::SynthOptions synth;
  synth.output = tmp;
  synth.images = kSynthImages;
  synth.classes = kSynthClasses;
  synth.seed = 0;
  synth.layout = data::SynthLayout::image_folder;
  data::synth_dataset(synth, [](std::size_t, std::size_t) { throw_if_cancelled(); });
  fs::rename(tmp, dir);
  return dir;
}

}  // namespace

std::shared_ptr<LoaderCli> add_loader_command(CLI::App& app, CLI::App*& cmd) {
  auto cli = std::make_shared<LoaderCli>();
  cmd = app.add_subcommand("loader",
                           "input pipeline: JPEG decode + RandomResizedCrop + flip into batch "
                           "slots, swept over worker counts (CPU), or nvJPEG on the GPU");
  cmd->add_option("--data", cli->data,
                  "dataset (ImageFolder, WebDataset shards, .gbpack; JPEG samples); default: a "
                  "built-in synthetic set");
  // Checked as text before conversion: "-5" must not wrap around in an unsigned option.
  cmd->add_option("--batch", cli->bench.batch_size, "batch size (1 .. 65536)")
      ->check(CLI::Range(1, 65536))
      ->capture_default_str();
  cmd->add_option("--size", cli->bench.image_size, "output side in pixels (16 .. 4096)")
      ->check(CLI::Range(16, 4096))
      ->capture_default_str();
  cmd->add_option("--workers", cli->workers,
                  "comma-separated worker counts (default: 1,2,4,... and the usable cores)");
  cmd->add_option("--prefetch", cli->bench.prefetch_depth, "batch slots in the ring")
      ->capture_default_str();
  cmd->add_option("--gpu-rate", cli->bench.gpu_images_per_s,
                  "images/s the stand-in GPU step consumes, for the data-wait share (default: a "
                  "ResNet-50 step on an H200)")
      ->capture_default_str();
  cmd->add_option("--seconds", cli->bench.seconds_per_point, "seconds per sweep point")
      ->capture_default_str();
  cmd->add_option("--seed", cli->bench.seed, "shuffle and augmentation seed")
      ->capture_default_str();
  cmd->add_option("--decode", cli->decode,
                  "cpu: libjpeg-turbo sweep; gpu: nvJPEG decode + GPU resize-crop-normalize; "
                  "both: the CPU sweep, the GPU path, then the two splitting the samples")
      ->capture_default_str();
  cmd->add_option("--gpu-workers", cli->bench.gpu_decode_workers,
                  "GPU path: host threads reading files (default: min(4, cores))");
  cmd->add_option("--nvjpeg-backend", cli->bench.nvjpeg_backend,
                  "GPU path: auto (hardware JPEG engines, else GPU hybrid), hardware, gpu_hybrid, "
                  "default")
      ->check(CLI::IsMember({"auto", "hardware", "gpu_hybrid", "default"}))
      ->capture_default_str();
  cmd->add_option("--gpu-share", cli->bench.gpu_share,
                  "with --decode both, the CPU/GPU split: share of the samples nvJPEG decodes, "
                  "in (0, 1] (default: the share that keeps both paths busy, from their rates)");
  cmd->add_option("--gpu-max-jpeg-kb", cli->gpu_max_jpeg_kb,
                  "GPU path: largest JPEG a pinned sample slot holds (larger files are bad "
                  "samples)")
      ->capture_default_str();
  cmd->add_flag("--strict", cli->bench.strict,
                "fail on the first bad file (naming it) instead of skipping and counting it");
  add_device_option(*cmd, cli->bench.device);
  add_output_options(*cmd, cli->out, &cli->save);
  cmd->footer(loader_help());
  return cli;
}

int run_loader_command(const LoaderCli& cli) {
  bench::LoaderBenchOptions options = cli.bench;
  if (!cli.workers.empty()) options.workers = parse_workers(cli.workers);
  options.decode = pipeline::decode_mode_from(cli.decode, "--decode");
  if (cli.gpu_max_jpeg_kb == 0 || cli.gpu_max_jpeg_kb > 64 * 1024)
    throw Error(ErrorKind::usage, "--gpu-max-jpeg-kb: 1 .. 65536");
  options.gpu_max_jpeg_bytes = cli.gpu_max_jpeg_kb * 1024;

  SuiteRun suite("loader");
  const fs::path path = cli.data.empty() ? default_dataset(cli.out) : fs::path(cli.data);
  const auto dataset = data::open_dataset({.path = path, .strict = options.strict});
  bench::ResultSink sink([&](const std::string& line) { progress_line(cli.out, line); });
  suite.run_suite(sink, cli.out, [&] {
    // The loader stops at Ctrl-C with the points it measured; the runner reports them.
    bench::run_loader_bench(*dataset, options, sink);
    throw_if_cancelled();
    // --decode gpu|both asked for the GPU: without one its figures are skipped and the run
    // ends as every GPU command does there (exit 3, the reason on stderr).
    std::string no_gpu;
    if (options.decode != pipeline::DecodeMode::cpu && bench::cuda_device_count(no_gpu) == 0)
      return SuiteEnd{false, no_gpu};
    return SuiteEnd{};
  });
  return suite.finish(cli.out, cli.save);
}

}  // namespace gb::cli
