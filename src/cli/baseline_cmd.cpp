// cli/baseline_cmd.cpp: `gpubase baseline` (see baseline_cmd.hpp). The stages, in order:
//   card      the probe (the quick probe with --quick)
//   loader    the loader's CPU worker sweep on the training set, and on a GPU the nvJPEG path and
//             the CPU/GPU split beside it; gives the knee (fewest workers within 3 % of the best)
//   train     ResNet-50 (--model) at BF16 (--precision), batch 256, fed by the loader with the
//             knee's workers (or the split where it is faster), for about a minute of timed
//             steps, while the watch sampler runs on a thread of this process: the GPU, CPU and
//             data-wait rows of the checklist; --starve feeds it with one worker instead
//   amp       the mixed-precision study, shortened: FP32, FP16 and BF16, 3 seeds (2 with --quick)
//   infer     ResNet-50 inference (forward only, eval batch norm, CUDA graph), batch 64 per
//             precision: the figure PyTorch's classic "time 100 forward passes" script aims at
// With -- CMD: the card stage (quick), then the user's command under watch (the `job` stage).
// Usage errors (an unknown model, a --data path that does not exist) are found before anything
// runs. The stage runner (bench/baseline) keeps a failed or skipped stage from stopping the rest.
#include "cli/baseline_cmd.hpp"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <mutex>
#include <thread>

#include "bench/amp.hpp"
#include "bench/baseline.hpp"
#include "bench/infer.hpp"
#include "bench/loader.hpp"
#include "bench/probe.hpp"
#include "bench/train.hpp"
#include "cli/help.hpp"
#include "bench/devices.hpp"
#include "cli/output.hpp"
#include "cli/probe_devices.hpp"
#include "cli/prometheus_export.hpp"
#include "cli/run_args.hpp"
#include "cli/signals.hpp"
#include "cli/suite_run.hpp"
#include "cli/watch_view.hpp"
#include "core/cancel.hpp"
#include "core/error.hpp"
#include "core/format.hpp"
#include "data/open.hpp"
#include "diagnose/text.hpp"
#include "diagnose/thresholds.hpp"
#include "data/synth.hpp"
#include "sys/host_membw.hpp"
#include "sys/nvml.hpp"
#include "watch/background.hpp"
#include "watch/watch.hpp"
#include "core/thread_name.hpp"

namespace gb::cli {

namespace fs = std::filesystem;

struct BaselineCli {
  bool quick = false;
  int device = 0;
  bool no_save = false;
  std::string data;      // the training set; empty: the cached synthetic set
  std::string amp_data;  // the amp study's IDX set; empty: Fashion-MNIST
  std::string model = "resnet50";
  std::string precision = "bf16";
  bool starve = false;
  std::vector<std::string> command;  // after --: the user's job, watched instead of ours
  std::string devices;               // --devices all|0,2,5: one baseline per GPU
  std::vector<int> node_devices;     // the selected GPUs the card stage's p2p and nccl span
  OutputOptions out;
  PrometheusOptions prometheus;
};

namespace {

// The synthetic training set: ImageNet-like sizes and bytes, enough images that a minute of
// training is ~100 passes over page-cached files rather than thousands.
constexpr std::size_t kSynthImages = 2048;
constexpr std::size_t kSynthClasses = 100;

// Stage timing: what the progress line announces, the stages' times as measured (H100, 16
// cores, bench/NOTES.md b4 and b5: two full runs, three quick ones).
// --quick (target <= 90 s with the synthetic set cached): the quick probe; a three-point loader
// sweep (1, half and all cores) at 0.75 s a point; 8 s of timed training after the model is
// timed alone and warmed up (its build, the convolution algorithm search most of it, took
// ~26 s); the amp study at 2 seeds x 3 epochs; inference with 3 warm-up passes and 1 s timed
// per precision (its trainers search forward algorithms only).
struct StageBudget {
  double card_s, loader_s, train_s, amp_s, infer_s;
  double loader_seconds_per_point;
  bool loader_three_points;
  double train_timed_s;
  int train_warmup;
  int amp_seeds, amp_epochs;
  int infer_warmup;
  double infer_timed_s;
};
constexpr StageBudget kFull{43, 26, 88, 73, 12, 3.0, false, 60, 20, 3, 8, 10, 3.0};
constexpr StageBudget kQuick{11, 8, 37, 23, 11, 0.75, true, 8, 10, 2, 3, 3, 1.0};
// What --quick gives up, for the run's facts. The amp study's noise band is 2 sd / sqrt(seeds)
// of the per-seed accuracy differences (bench/amp.cpp): fewer seeds widen it by
// sqrt(full / quick) for the same spread, and fewer epochs leave the runs less converged, so the
// spread itself is larger; both are measured and printed with the AMP row.
std::string quick_run_note() {
  const double wider = std::sqrt(static_cast<double>(kFull.amp_seeds) / kQuick.amp_seeds);
  return "quick probe, a 3-point loader sweep, " + fixed(kQuick.train_timed_s, 0) +
         " s of timed training instead of " + fixed(kFull.train_timed_s, 0) +
         "; AMP study with " + std::to_string(kQuick.amp_seeds) + " seeds x " +
         std::to_string(kQuick.amp_epochs) + " epochs instead of " +
         std::to_string(kFull.amp_seeds) + " x " + std::to_string(kFull.amp_epochs) +
         ": its noise band is " + fixed(wider, 2) + "x wider for the same seed-to-seed spread "
         "(2 sd / sqrt(seeds)), and the spread itself is larger after fewer epochs (both measured: "
         "amp.seed_spread.points, the noise band of amp.accuracy_loss.pct)";
}

// A progress line per stage and, on a terminal, a bar under the lines that shows the running
// stage's elapsed time against its expected time. Every line goes through here so the bar is
// cleared first and redrawn after.
class StageProgress {
 public:
  StageProgress(const OutputOptions& out, bool with_bar) : out_(out) {
    const char* term = std::getenv("TERM");
    bar_ = with_bar && !out.quiet && ::isatty(STDERR_FILENO) && term &&
           std::string(term) != "dumb";
    if (bar_)
      thread_ = std::thread([this] {
        name_this_thread("gb-progress");
        tick();
      });
  }
  ~StageProgress() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    std::lock_guard lock(mutex_);
    clear_bar();
  }
  void line(const std::string& text) {
    if (out_.quiet) return;
    std::lock_guard lock(mutex_);
    clear_bar();
    std::fprintf(stderr, "%s\n", text.c_str());
    draw_bar();
  }
  void stage(std::size_t index, std::size_t count, const bench::BaselineStage& s) {
    {
      std::lock_guard lock(mutex_);
      title_ = "[" + std::to_string(index + 1) + "/" + std::to_string(count) + "] " + s.title;
      expected_s_ = s.expected_s;
      t0_ = std::chrono::steady_clock::now();
    }
    line("baseline " + title_ +
         (s.expected_s > 0 ? " (about " + std::to_string(static_cast<int>(s.expected_s)) + " s)"
                           : std::string()));
  }

 private:
  void tick() {
    while (!stop_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
      std::lock_guard lock(mutex_);
      clear_bar();
      draw_bar();
    }
  }
  void clear_bar() {
    if (bar_ && drawn_) std::fputs("\r\x1b[K", stderr);
    drawn_ = false;
  }
  void draw_bar() {
    if (!bar_ || title_.empty()) return;
    const double el =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    constexpr int kWidth = 30;
    const int filled =
        expected_s_ > 0 ? static_cast<int>(std::min(1.0, el / expected_s_) * kWidth) : 0;
    std::fprintf(stderr, "[%s%s] %3d s of ~%d s  %s", std::string(filled, '#').c_str(),
                 std::string(kWidth - filled, '.').c_str(), static_cast<int>(el),
                 static_cast<int>(expected_s_), title_.c_str());
    std::fflush(stderr);
    drawn_ = true;
  }

  const OutputOptions& out_;
  bool bar_ = false;
  bool drawn_ = false;
  std::mutex mutex_;
  std::string title_;
  double expected_s_ = 0;
  std::chrono::steady_clock::time_point t0_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Name and size of every regular file under dir, sorted: the cache's identity.
std::map<std::string, std::uintmax_t> list_files(const fs::path& dir) {
  std::map<std::string, std::uintmax_t> files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) files[fs::relative(e.path(), dir).generic_string()] = e.file_size();
  return files;
}

std::map<std::string, std::uintmax_t> read_manifest(const fs::path& path) {
  std::map<std::string, std::uintmax_t> files;
  std::ifstream in(path);
  std::uintmax_t size = 0;
  std::string name;
  while (in >> size && std::getline(in >> std::ws, name)) files[name] = size;
  return files;
}

// The result of a key reported so far, or nullptr.
const Result* find_result(bench::ResultSink& sink, std::string_view key) {
  for (const Result& r : sink.results())
    if (r.key == key && r.value) return &r;
  return nullptr;
}

// What the loader stage measured, for choose_training_feed.
bench::FeedInputs feed_inputs(const BaselineCli& cli, bench::ResultSink& sink) {
  bench::FeedInputs in;
  in.starve = cli.starve;
  if (const Result* knee = find_result(sink, "loader.cpu.knee.workers")) {
    in.knee_workers = static_cast<unsigned>(*knee->value);
    const std::string key = "loader.cpu.w" + std::to_string(*in.knee_workers) + ".images_per_s";
    if (const Result* rate = find_result(sink, key)) in.knee_images_per_s = *rate->value;
  }
  if (const Result* gpu = find_result(sink, "loader.gpu_decode.images_per_s")) {
    in.gpu_images_per_s = *gpu->value;
    in.gpu_host_us_per_image = gpu->number_param("decode_host_us_per_image");
  }
  if (const Result* beside = find_result(sink, "loader.gpu_decode.beside_step.data_wait.pct"))
    in.gpu_wait_beside_step_pct = *beside->value;
  for (const Fact& f : sink.facts())
    if (f.key == "host.usable_cores" && f.number && *f.number > 0)
      in.usable_cores = static_cast<unsigned>(*f.number);
  if (const Result* split = find_result(sink, "loader.split.images_per_s")) {
    in.split_images_per_s = *split->value;
    in.split_host_us_per_image = split->number_param("decode_host_us_per_image");
    if (const Result* share = find_result(sink, "loader.split.gpu_share.pct"))
      in.split_gpu_share = *share->value / 100.0;
  } else {
    for (const Result& r : sink.results())
      if (r.key == "loader.split.images_per_s" && !r.reason.empty()) in.nvjpeg_missing = r.reason;
  }
  return in;
}

// The GPU and CPU rows without a training run: skipped with the reason, not "not run".
void add_watch_skipped(bench::ResultSink& sink, const std::string& reason) {
  sink.add(Result::skipped("watch.gpu.util.pct", "GPU utilization during training", "%", reason));
  sink.add(Result::skipped("watch.cpu.busiest_core.pct", "busiest CPU core during training", "%",
                           reason));
}

bench::TrainBenchOptions train_options(const BaselineCli& cli, const StageBudget& b) {
  bench::TrainBenchOptions t;
  t.models = {cli.model};
  t.precisions = {cli.precision};
  t.batch = 256;
  t.warmup = b.train_warmup;
  t.steps = 100000;  // bounded by time: max_timed_s
  t.max_timed_s = b.train_timed_s;
  t.device = cli.device;
  t.report_environment = false;  // the probe reported them
  return t;
}

bench::AmpOptions amp_options(const BaselineCli& cli, const StageBudget& b) {
  bench::AmpOptions a;
  a.data = cli.amp_data;
  a.precisions = {"fp32", "fp16", "bf16"};
  a.seeds = b.amp_seeds;
  a.epochs = b.amp_epochs;
  a.device = cli.device;
  return a;
}

std::vector<bench::BaselineStage> make_stages(const BaselineCli& cli, const StageBudget& b,
                                              const fs::path& dataset_path,
                                              PrometheusExport* prometheus) {
  std::vector<bench::BaselineStage> stages;
  stages.push_back({"card", cli.quick ? "card: quick probe" : "card: probe", b.card_s,
                    [&cli](bench::ResultSink& sink) {
                      bench::ProbeOptions p;
                      p.quick = cli.quick;
                      p.device = cli.device;
                      p.devices = cli.node_devices;
                      const bench::ProbeOutcome o = bench::run_probe(p, sink);
                      bench::StageEnd end;
                      end.gpu_found = o.gpu_found;
                      end.no_gpu_reason = o.no_gpu_reason;
                      return end;
                    }});
  stages.push_back(
      {"loader", "input pipeline: loader worker sweep", b.loader_s,
       [&cli, &b, dataset_path](bench::ResultSink& sink) {
         const auto dataset = data::open_dataset({.path = dataset_path});
         bench::LoaderBenchOptions o;
         o.seconds_per_point = b.loader_seconds_per_point;
         if (b.loader_three_points) {
           const unsigned cores =
               static_cast<unsigned>(std::max<std::size_t>(sys::allowed_cpus().size(), 1));
           o.workers = {1u};
           if (cores / 2 > 1) o.workers.push_back(cores / 2);
           if (cores > 1) o.workers.push_back(cores);
         }
         o.device = cli.device;
         o.data_wait = false;  // the training run measures it for real
         std::string no_gpu;
         o.decode = bench::cuda_device_count(no_gpu) > 0 ? pipeline::DecodeMode::both
                                                         : pipeline::DecodeMode::cpu;
         bench::run_loader_bench(*dataset, o, sink);
         return bench::StageEnd{};
       }});
  stages.push_back(
      {"train",
       "training: " + bench::train_model_title(cli.model) + " " +
           bench::train_precision_title(cli.precision) + " fed by the loader, under watch",
       b.train_s, [&cli, &b, dataset_path, prometheus](bench::ResultSink& sink) {
         sink.declare_sections(watch::watch_section_rules());
         bench::TrainBenchOptions t = train_options(cli, b);
         t.data = dataset_path.string();
         const bench::FeedInputs inputs = feed_inputs(cli, sink);
         // Until the model's rate is known (no GPU: never), the choice from the loader alone.
         const bench::TrainFeedChoice first = bench::choose_training_feed(inputs, std::nullopt);
         t.data_decode = first.decode;
         t.data_workers = first.workers;
         t.data_gpu_share = first.gpu_share;
         t.pick_feed = [inputs](double model_images_per_s) {
           return bench::choose_training_feed(inputs, model_images_per_s);
         };
         std::string no_gpu;
         if (bench::cuda_device_count(no_gpu) == 0) {
           sink.add_fact({"baseline.train.feed", "training fed by", first.why});
           add_watch_skipped(sink, "no GPU: " + no_gpu);
           for (const bench::TrainConfig& c : bench::train_configs(t))
             sink.add(Result::skipped(bench::train_key(c, "data_wait_pct"),
                                      "GPU waiting for data during training", "%",
                                      "no GPU: " + no_gpu));
           const bench::TrainBenchOutcome o = bench::run_train_bench(t, sink);
           bench::StageEnd end;
           end.gpu_found = o.gpu_found;
           end.no_gpu_reason = o.no_gpu_reason.empty() ? no_gpu : o.no_gpu_reason;
           end.skipped_reason = "no GPU: " + no_gpu;
           return end;
         }
         watch::BackgroundWatchOptions watch_options{.device = cli.device};
         if (prometheus)
           watch_options.on_sample = [prometheus](const watch::WatchSample& s) {
             prometheus->add(s);
           };
         watch::BackgroundWatch w(watch_options);
         w.start();
         // The rows judge the timed training steps, not the build and autotuning before them
         // (with --quick those took 26 of the stage's 36 s and set the CPU row).
         t.on_timed_start = [&w] { w.judge_from_now(); };
         bench::TrainBenchOutcome o;
         try {
           o = bench::run_train_bench(t, sink);
         } catch (const Cancelled&) {
           // Ctrl-C: what the sampler saw until then is part of what was measured.
           watch::WatchOutcome seen = w.stop();
           for (Result& r : seen.results) sink.add(std::move(r));
           throw;
         }
         watch::WatchOutcome seen = w.stop();
         // The feed the training stage chose once it had timed the model alone.
         std::string fed_by = first.why;
         for (const Result& r : sink.results())
           if (r.key.starts_with("train.") && r.key.ends_with(".images_per_s"))
             if (const auto why = r.text_param("feed")) fed_by = *why;
         sink.add_fact({"baseline.train.feed", "training fed by", fed_by});
         for (Fact& f : seen.facts) sink.add_fact(std::move(f));
         for (Result& r : seen.results) sink.add(std::move(r));
         bench::StageEnd end;
         end.gpu_found = o.gpu_found;
         end.no_gpu_reason = o.no_gpu_reason;
         return end;
       }});
  stages.push_back({"amp", "mixed precision: FP32 vs FP16 vs BF16, " +
                               std::to_string(b.amp_seeds) + " seeds",
                    b.amp_s, [&cli, &b](bench::ResultSink& sink) {
                      const bench::AmpOptions a = amp_options(cli, b);
                      if (a.data.empty() && bench::default_fashion_mnist_dir().empty()) {
                        const std::string why =
                            "Fashion-MNIST not found (Debian package dataset-fashion-mnist, or "
                            "--amp-data DIR with IDX files)";
                        bench::add_amp_skipped(a, why, sink);
                        return bench::StageEnd::skipped(why);
                      }
                      const bench::AmpOutcome o = bench::run_amp(a, sink);
                      bench::StageEnd end;
                      end.gpu_found = o.gpu_found;
                      end.no_gpu_reason = o.no_gpu_reason;
                      if (!o.gpu_found) end.skipped_reason = o.no_gpu_reason;
                      return end;
                    }});
  stages.push_back({"infer", "inference: " + bench::train_model_title("resnet50") +
                                 " forward only, CUDA graph, batch 64, FP32/FP16/BF16",
                    b.infer_s, [&cli, &b](bench::ResultSink& sink) {
                      bench::InferBenchOptions o;
                      o.device = cli.device;
                      o.warmup = b.infer_warmup;
                      o.max_timed_s = b.infer_timed_s;
                      const bench::InferBenchOutcome out = bench::run_infer_bench(o, sink);
                      bench::StageEnd end;
                      end.gpu_found = out.gpu_found;
                      end.no_gpu_reason = out.no_gpu_reason;
                      if (!out.gpu_found) end.skipped_reason = "no GPU: " + out.no_gpu_reason;
                      return end;
                    }});
  return stages;
}


// `baseline -- CMD`: the card check and the watch both need the GPU to themselves. A live
// process with GPU activity in the driver's per-process samples, or a device busy now (a
// process in another PID namespace NVML names but /proc does not show), refuses the run.
void refuse_if_gpu_in_use(int device) {
  const sys::Nvml nvml = sys::Nvml::load();
  if (!nvml.available()) return;  // no GPU: the card check says so
  const auto dev = nvml.device(device);
  if (!dev) return;
  std::string others;
  for (const sys::ProcessUtil& p : dev->process_utilization()) {
    if (static_cast<int>(p.pid) == static_cast<int>(::getpid())) continue;
    if (p.sm_pct <= 0 && p.mem_pct <= 0) continue;
    std::error_code ec;
    if (!fs::exists("/proc/" + std::to_string(p.pid), ec)) continue;  // ended since
    const std::string comm = [&] {
      std::ifstream in("/proc/" + std::to_string(p.pid) + "/comm");
      std::string c;
      std::getline(in, c);
      return c.empty() ? std::string("?") : c;
    }();
    others += (others.empty() ? "" : ", ") + std::to_string(p.pid) + " (" + comm + ", SM " +
              std::to_string(static_cast<int>(p.sm_pct)) + " %)";
  }
  const sys::NvmlSample now = dev->sample();
  if (others.empty() && now.gpu_util_pct && *now.gpu_util_pct > 5)
    others = "a process NVML does not name (GPU " +
             std::to_string(static_cast<int>(*now.gpu_util_pct)) + " % busy)";
  if (!others.empty())
    throw Error(ErrorKind::runtime,
                "GPU " + std::to_string(device) + " is in use by " + others +
                    ": the card check and the watch of your job would both be distorted; wait "
                    "for it to finish or pick another GPU with -d");
}

bench::BaselineStage job_stage(const BaselineCli& cli, std::optional<int>& job_exit,
                               PrometheusExport* prometheus) {
  std::string title;
  for (const std::string& a : cli.command) title += (title.empty() ? "" : " ") + a;
  return {"job", "your job under watch: " + title, 0,
          [&cli, title, &job_exit, prometheus](bench::ResultSink& sink) {
            sink.declare_sections(watch::watch_section_rules());
            watch::WatchOptions o;
            o.command = cli.command;
            o.device = cli.device;
            watch::WatchOutcome w = run_watch_with_view(
                o, cli.out.quiet ? ViewMode::none : ViewMode::automatic, title, cli.out.quiet,
                [prometheus](const watch::WatchSample& s) {
                  if (prometheus) prometheus->add(s);
                });
            for (Fact& f : w.facts) sink.add_fact(std::move(f));
            for (Result& r : w.results) sink.add(std::move(r));
            if (w.exit && w.exit->shell_code() != 0) job_exit = w.exit->shell_code();
            bench::StageEnd end;
            if (!w.gpu_available) {
              end.gpu_found = false;
              end.no_gpu_reason = w.gpu_unavailable;
            }
            // Ctrl-C: the job got its grace and ended; the run ends interrupted, like watch.
            throw_if_cancelled();
            return end;
          }};
}

}  // namespace

void explain_job_rows(Run& run) {
  const Result* wait = run.find("watch.cuda.data_wait.pct");
  const diagnose::MetricRowSpec* spec = diagnose::find_metric_row("data_loading");
  for (ChecklistRow& row : run.checklist) {
    if (row.status != Status::skipped || row.measured) continue;
    if (row.id == "amp_accuracy") {
      row.evidence =
          "not measured for your job: mixed precision's accuracy cost depends on the model and "
          "data; run `gpubase amp --data YOUR_IDX_SET` (or compare your own FP32 and AMP runs)";
    } else if (row.id == "data_loading" && wait && wait->value && spec) {
      // The job's share of wall time waiting for data, seen through CUDA activity.
      const double v = *wait->value;
      row.measured = diagnose::format_number(v) + " %";
      row.status = v < spec->pass_limit    ? Status::pass
                   : v <= spec->warn_limit ? Status::warn
                                           : Status::fail;
      row.evidence = wait->label + " " + *row.measured + " (" + wait->key + ")";
      if (!wait->reason.empty()) row.evidence += ": " + wait->reason;
      if (row.status != Status::pass) row.advice = std::string(spec->advice);
    } else if (row.id == "data_loading") {
      row.evidence =
          wait && !wait->reason.empty()
              ? "not measurable from outside: " + wait->reason
              : "not measurable from outside: NVML and /proc see the GPU busy or idle but not "
                "where a step starts or what the job waits on; `gpubase watch` with CUDA "
                "activity (CUPTI) measures it where available, and `gpubase train --data` "
                "measures it for our loader";
    }
  }
}

fs::path cached_synthetic_set(const fs::path& dir, std::size_t images, std::size_t classes,
                              double size_scale,
                              const std::function<void(const std::string&)>& note) {
  const fs::path manifest = dir.string() + ".manifest";
  std::error_code ec;
  if (fs::is_directory(dir, ec) && fs::exists(manifest, ec)) {
    const auto want = read_manifest(manifest);
    if (!want.empty() && list_files(dir) == want) {
      note("using the synthetic set " + dir.string());
      return dir;
    }
    note("the synthetic set " + dir.string() + " changed since it was made: making it again");
  }
  fs::remove_all(dir);
  fs::remove(manifest, ec);
  const fs::path tmp = dir.string() + ".tmp";
  fs::remove_all(tmp);
  note("making a synthetic ImageNet-like set (" + std::to_string(images) + " JPEGs, " +
       std::to_string(classes) + " classes) in " + dir.string() + ", reused by later runs");
  data::SynthOptions synth;
  synth.output = tmp;
  synth.images = images;
  synth.classes = classes;
  synth.size_scale = size_scale;
  synth.layout = data::SynthLayout::image_folder;
  data::synth_dataset(synth, [](std::size_t, std::size_t) { throw_if_cancelled(); });
  fs::rename(tmp, dir);
  // Written last: a manifest exists only for a set that was made completely.
  std::ofstream out(manifest);
  for (const auto& [name, size] : list_files(dir)) out << size << ' ' << name << '\n';
  if (!out) throw Error(ErrorKind::runtime, "cannot write " + manifest.string());
  return dir;
}

std::shared_ptr<BaselineCli> add_baseline_command(CLI::App& app, CLI::App*& cmd) {
  auto cli = std::make_shared<BaselineCli>();
  cmd = app.add_subcommand(
      "baseline",
      "the four questions in one run: probe, loader sweep, a training run fed by the loader "
      "under watch, a short AMP study; prints the checklist, saves the run");
  cmd->add_flag("--quick", cli->quick,
                "quick probe, a 3-point loader sweep, 8 s of timed training, 2 seeds x 3 epochs "
                "of the AMP study (about 80 s on an H200 with the synthetic set made; a wider "
                "noise band)");
  cmd->add_option("--data", cli->data,
                  "training set (ImageFolder, WebDataset shards, .gbpack; JPEG samples); "
                  "default: a synthetic ImageNet-like set made once under the data folder");
  cmd->add_option("--amp-data", cli->amp_data,
                  "the AMP study's set (IDX folder); default: Fashion-MNIST "
                  "(/usr/share/datasets/fashion-mnist)");
  cmd->add_option("--model", cli->model, "the trained model (resnet50, mobilenet_v2)")
      ->capture_default_str();
  cmd->add_option("--precision", cli->precision, "its precision (fp32, tf32, fp16, bf16)")
      ->capture_default_str();
  cmd->add_flag("--starve", cli->starve,
                "feed the training run with one loader worker, to see the rows catch it");
  cmd->add_option("command", cli->command,
                  "your own job, after --: the quick card check, then the job under watch "
                  "(gpubase baseline -- python train.py)");
  add_device_option(*cmd, cli->device);
  cmd->add_option("--devices", cli->devices,
                  "all, or device indices separated by commas: one baseline per GPU, in turn "
                  "(with several, -o needs %g); the card stage's p2p and nccl span them")
      ->excludes("--device");
  cmd->add_flag("--no-save", cli->no_save, "do not save the run");
  add_prometheus_options(*cmd, cli->prometheus);
  add_output_options(*cmd, cli->out);
  cmd->footer(baseline_help());
  return cli;
}

namespace {

// `gpubase baseline -- CMD...`: the quick card check, then the job under watch.
int run_job_baseline(const BaselineCli& cli) {
  watch::WatchOptions check;
  check.command = cli.command;
  check.device = cli.device;
  watch::validate(check);
  check_output_writable(cli.out);
  check_prometheus_options(cli.prometheus);
  refuse_if_gpu_in_use(cli.device);

  StageProgress progress(cli.out, /*with_bar=*/false);
  SuiteRun suite("baseline");
  bench::ResultSink sink([&](const std::string& line) { progress.line(line); });
  std::unique_ptr<PrometheusExport> prometheus;
  if (cli.prometheus.enabled())
    prometheus = std::make_unique<PrometheusExport>(cli.prometheus, cli.device);
  BaselineCli card = cli;
  card.quick = true;
  std::vector<bench::BaselineStage> stages = make_stages(card, kQuick, {}, nullptr);
  stages.resize(1);  // the card
  std::optional<int> job_exit;
  stages.push_back(job_stage(cli, job_exit, prometheus.get()));
  bench::BaselineHooks hooks;
  hooks.on_start = [&](std::size_t i, std::size_t n, const bench::BaselineStage& s) {
    progress.stage(i, n, s);
  };
  Run& run = suite.run_suite(sink, cli.out, [&] {
    const bench::BaselineOutcome o = bench::run_baseline(stages, sink, hooks);
    SuiteEnd end{o.gpu_found, o.no_gpu_reason};
    end.exit_code = job_exit;  // a failed job's code is ours, like `gpubase watch`
    return end;
  });
  explain_job_rows(run);
  return suite.finish(cli.out, !cli.no_save);
}

}  // namespace

namespace {

// `baseline --devices`: the whole baseline on each selected GPU in turn, one run per GPU (keyed
// by its index and UUID in the gpu.* facts, -o's %g its index); the exit code is the worst
// (130 as soon as one is interrupted: the rest do not start).
int run_baseline_devices(const BaselineCli& cli) {
  if (!cli.command.empty())
    throw Error(ErrorKind::usage, "--devices with -- CMD: your job runs on the GPUs it picks; "
                                  "give -d for the GPU to watch");
  std::string no_gpu_reason;
  const std::vector<int> devices = bench::select_devices(cli.devices, no_gpu_reason);
  check_several_outputs(cli.out, devices.size());
  BaselineCli one = cli;
  one.devices.clear();
  if (devices.empty()) return run_baseline_command(one);  // no GPU: one run that says why
  one.node_devices = devices;
  int rc = 0;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const int d = devices[i];
    progress_line(cli.out, "baseline: GPU " + std::to_string(d) + " (" + std::to_string(i + 1) +
                               " of " + std::to_string(devices.size()) + ")");
    one.device = d;
    one.out.gpu = d;
    const int code = run_baseline_command(one);
    if (code == static_cast<int>(ExitCode::interrupted)) return code;
    rc = std::max(rc, code);
  }
  return rc;
}

}  // namespace

int run_baseline_command(const BaselineCli& cli) {
  if (!cli.devices.empty()) return run_baseline_devices(cli);
  if (!cli.command.empty()) return run_job_baseline(cli);
  const StageBudget& b = cli.quick ? kQuick : kFull;
  // Usage errors before anything runs.
  require_device_index(cli.device, 0);
  if (cli.model != "resnet50" && cli.model != "mobilenet_v2")
    throw Error(ErrorKind::usage, "--model " + cli.model +
                                      ": the training stage takes 224x224 images: resnet50 or "
                                      "mobilenet_v2");
  (void)bench::train_configs(train_options(cli, b));
  if (!cli.amp_data.empty()) bench::validate_amp_options(amp_options(cli, b));
  if (!cli.data.empty()) (void)data::open_dataset({.path = cli.data});
  check_output_writable(cli.out);
  check_prometheus_options(cli.prometheus);

  StageProgress progress(cli.out, /*with_bar=*/true);
  SuiteRun suite("baseline");
  const auto setup_t0 = std::chrono::steady_clock::now();
  const fs::path dataset_path =
      !cli.data.empty()
          ? fs::path(cli.data)
          : cached_synthetic_set(data_dir() / "datasets" / "baseline-synth-2048", kSynthImages,
                                 kSynthClasses, 1.0,
                                 [&](const std::string& l) { progress.line("baseline: " + l); });
  bench::ResultSink sink([&](const std::string& line) { progress.line(line); });
  if (cli.quick)
    sink.add_fact({"baseline.quick", "quick run", quick_run_note()});
  // The training stage's samples, live, and the loader stage's rates once it ends.
  std::unique_ptr<PrometheusExport> prometheus;
  if (cli.prometheus.enabled())
    prometheus = std::make_unique<PrometheusExport>(cli.prometheus, cli.device);
  const std::vector<bench::BaselineStage> stages =
      make_stages(cli, b, dataset_path, prometheus.get());
  bench::BaselineHooks hooks;
  hooks.on_start = [&](std::size_t i, std::size_t n, const bench::BaselineStage& s) {
    progress.stage(i, n, s);
  };
  hooks.setup_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - setup_t0).count();
  hooks.on_end = [&](const bench::StageRecord& r) {
    std::string text = "  " + r.id + " " + std::string(bench::to_string(r.state)) + " in " +
                       std::to_string(static_cast<int>(r.seconds + 0.5)) + " s";
    if (!r.reason.empty()) text += ": " + r.reason;
    progress.line(text);
    if (prometheus && r.id == "loader")
      for (const Result& result : sink.results()) prometheus->add_result(result);
  };
  suite.run_suite(sink, cli.out, [&] {
    const bench::BaselineOutcome o = bench::run_baseline(stages, sink, hooks);
    return SuiteEnd{o.gpu_found, o.no_gpu_reason};
  });
  return suite.finish(cli.out, !cli.no_save);
}

int run_baseline_args(const std::vector<std::string>& args) {
  return run_subcommand_args("baseline", args, add_baseline_command,
                             [](const auto& cli) { return run_baseline_command(*cli); });
}

}  // namespace gb::cli
