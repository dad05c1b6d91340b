// diagnose/own_loader.cpp: advice for a training run gpubase fed itself (`gpubase baseline`'s
// training stage, `gpubase train --data`). The watch rules' advice speaks of a separate job's
// DataLoader (num_workers, pin_memory, prefetch_factor); here the loader is gpubase's own input
// pipeline, its workers are threads of this process, and the levers are its options: the decode
// path (`--decode cpu|gpu|both`, the CPU/GPU split's `--gpu-share`) and `--workers`.
//
// Which run is which: the in-process sampler (watch/background) reports the fact `watch.target`
// starting with `in_process`; a data-wait figure under `train.` always measured gpubase's own
// loader.
#include <algorithm>
#include <optional>
#include <string>
#include <string_view>

#include "core/format.hpp"
#include "diagnose/watch_rules.hpp"

namespace gb::diagnose {

namespace {

// The decode mode the run's loader-fed training used ("cpu", "gpu", "both"), empty if none.
std::string own_decode(const Run& run) {
  for (const Result& r : run.results) {
    if (!r.key.starts_with("train.")) continue;
    if (const auto d = r.text_param("decode")) return *d;
  }
  return {};
}

constexpr std::string_view kMeasure =
    "; `gpubase loader --decode both --data DIR` measures each path's rate alone, to hold "
    "against the model's";

// What an nvJPEG-fed step waits for (bench/NOTES.md b10, b11: with the decode on a thread of its
// own, nvJPEG's call under training took the whole step, 52.7 ms a batch against 11.0 with the
// GPU idle, and the step grew by the decode, on an H100).
constexpr std::string_view kDecodeTakesTurns =
    "nvJPEG's batched decode returns only once the GPU has finished the work queued before it, "
    "the training step included, so the decode of each batch and the step take turns";

// The GPU waited for gpubase's loader: the lever depends on what fed it.
std::string starved_advice(const std::string& decode) {
  if (decode == "both")
    return "gpubase's loader (the CPU/GPU split: nvJPEG and CPU decode threads) did not keep "
           "up with the model: " + std::string(kDecodeTakesTurns) +
           ". Feed it with the CPU decode threads alone (`gpubase train --data DIR --decode cpu "
           "--workers N`, N the knee of `gpubase loader`'s sweep) where they keep up with the "
           "model, else send nvJPEG a smaller share (`--gpu-share`), or make each image "
           "cheaper (pre-resized JPEGs, a packed .gbpack: `gpubase dataset`)" +
           std::string(kMeasure);
  if (decode == "gpu")
    return "gpubase's loader (nvJPEG, its reader threads) did not keep up with the model: " +
           std::string(kDecodeTakesTurns) +
           ". Feed it with CPU decode threads (`gpubase train --data DIR --decode cpu --workers "
           "N`, N the knee of `gpubase loader`'s sweep) where they keep up with the model, "
           "else with the CPU/GPU split (`--decode both`, a smaller `--gpu-share` for a shorter "
           "decode of each batch), or make each image cheaper (pre-resized JPEGs, a packed "
           ".gbpack: `gpubase dataset`)" +
           std::string(kMeasure);
  return "gpubase's loader (CPU decode threads in this process) did not keep up with the model: "
         "feed it with the CPU/GPU split (`gpubase train --data DIR --decode both`: nvJPEG "
         "decodes part of every batch) or nvJPEG alone (`--decode gpu`); more `--workers` help "
         "only below the knee of `gpubase loader`'s sweep" +
         std::string(kMeasure);
}

// The training run's images/s (the loader-fed configuration's), if it ran.
std::optional<double> train_images_per_s(const Run& run) {
  for (const Result& r : run.results)
    if (r.key.starts_with("train.") && r.key.ends_with(".images_per_s") && r.value) return r.value;
  return std::nullopt;
}

// True when the busiest thread is its process's first thread (tid == pid): in gpubase, the
// consumer that takes the batches and launches the steps.
bool busiest_is_main_thread(const Run& run) {
  const Result* r = run.find("watch.job.busiest_thread.cpu.pct");
  const auto tid = r ? r->number_param("tid") : std::nullopt;
  const auto pid = r ? r->number_param("pid") : std::nullopt;
  return tid && pid && *tid == *pid;
}

// What the run's CPU bought: "the job used 14.1 of 16 cores to train 7,029 images/s, 2.01 ms of
// CPU an image"; empty when a figure is missing.
std::string cpu_cost(const Run& run) {
  const auto ips = train_images_per_s(run);
  const Result* job = run.find("watch.job.cpu.pct");
  if (!ips || *ips <= 0 || !job || !job->value) return {};
  const Result* cores = run.find("watch.host.cores");
  return "the job used " + fixed(*job->value / 100, 1) + " " +
         (cores && cores->value ? "of " + grouped(*cores->value) + " cores" : "cores") +
         " to train " + grouped(*ips) + " images/s, " + fixed(10 * *job->value / *ips, 2) +
         " ms of CPU an image; ";
}

std::string busy_core_advice(const Run& run, const std::string& decode) {
  std::string s =
      "the busiest core runs gpubase's own threads (loader workers, the consumer that hands "
      "batches to the GPU, the sampler): " + cpu_cost(run);
  if (busiest_is_main_thread(run))
    s += "the busiest thread is the consumer, so leave it a core (`--workers` one below the "
         "usable cores), ";
  else if (decode == "gpu")
    return s + "nvJPEG's reader threads and its decode thread are cheap, so look for another "
               "process on the host";
  if (decode == "gpu")
    return s + "and look for another process on the host";
  constexpr std::string_view kCheaperImages =
      ", or make each image cheaper (pre-resized JPEGs, a packed .gbpack: `gpubase dataset`)";
  if (decode == "both")
    return s + "give nvJPEG a larger share (`--gpu-share`)" + std::string(kCheaperImages);
  return s + "move decode to the GPU (`--decode both` or `--decode gpu`: nvJPEG shares the GPU "
             "with the model, so time it with `gpubase train --data DIR --decode both`)" +
         std::string(kCheaperImages);
}

}  // namespace

bool watched_in_process(const Run& run) {
  const Fact* f = run.find_fact("watch.target");
  return f && f->value.starts_with("in_process");
}

std::string own_loader_advice(const Run& run, std::string_view row_id) {
  const std::string decode = own_decode(run);
  if (row_id == "cpu_util") return busy_core_advice(run, decode);
  return starved_advice(decode);  // gpu_util, data_loading
}

void adapt_to_own_loader(const Run& run, std::vector<Finding>& findings) {
  if (!watched_in_process(run)) return;
  const std::string decode = own_decode(run);
  // Findings whose advice is about a separate job's DataLoader processes or training loop.
  constexpr std::string_view kStarved[] = {"input_bound_cpu", "main_process_bound",
                                           "one_process_bound", "launch_bound"};
  constexpr std::string_view kCores[] = {"too_many_workers", "too_many_threads"};
  for (Finding& f : findings) {
    if (std::find(std::begin(kStarved), std::end(kStarved), f.id) != std::end(kStarved)) {
      if (f.id == "main_process_bound") f.title = "gpubase's own threads are CPU-bound";
      f.advice = starved_advice(decode);
    } else if (std::find(std::begin(kCores), std::end(kCores), f.id) != std::end(kCores)) {
      f.advice = busy_core_advice(run, decode);
    }
  }
}

}  // namespace gb::diagnose
