// bench/baseline.cpp: the stage runner of `gpubase baseline` (see baseline.hpp). The stages
// themselves are built by the CLI (cli/baseline_cmd.cpp) from the suites.
#include "bench/baseline.hpp"

#include <algorithm>
#include <chrono>
#include <exception>
#include <set>

#include "bench/loader.hpp"
#include "core/cancel.hpp"
#include "core/error.hpp"
#include "core/format.hpp"

namespace gb::bench {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Two suites report the same host facts (the probe and the loader both read the CPU model): the
// first report stays.
void drop_repeated_facts(ResultSink& sink) {
  std::vector<Fact>& facts = sink.facts();
  std::set<std::string> seen;
  std::vector<Fact> kept;
  for (Fact& f : facts)
    if (seen.insert(f.key).second) kept.push_back(std::move(f));
  facts = std::move(kept);
}

void run_stages(std::span<const BaselineStage> stages, std::vector<StageRecord>& records,
                ResultSink& sink, const BaselineHooks& hooks, BaselineOutcome& outcome) {
  for (std::size_t i = 0; i < stages.size(); ++i) {
    throw_if_cancelled();  // Ctrl-C between stages: the rest are reported "not run"
    const BaselineStage& stage = stages[i];
    StageRecord& rec = records[i];
    if (hooks.on_start) hooks.on_start(i, stages.size(), stage);
    const auto t0 = Clock::now();
    rec.state = StageState::running;
    try {
      const StageEnd end = stage.run(sink);
      rec.state = end.skipped_reason.empty() ? StageState::ran : StageState::skipped;
      rec.reason = end.skipped_reason;
      if (!end.gpu_found && outcome.gpu_found) {
        outcome.gpu_found = false;
        outcome.no_gpu_reason = end.no_gpu_reason;
      }
    } catch (const Cancelled&) {
      rec.seconds = seconds_since(t0);
      throw;
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::usage) throw;
      rec.state = e.kind() == ErrorKind::no_gpu ? StageState::skipped : StageState::failed;
      rec.reason = e.what();
      if (e.kind() == ErrorKind::no_gpu && outcome.gpu_found) {
        outcome.gpu_found = false;
        outcome.no_gpu_reason = e.what();
      }
    } catch (const std::exception& e) {
      rec.state = StageState::failed;
      rec.reason = e.what();
    }
    rec.seconds = seconds_since(t0);
    drop_repeated_facts(sink);
    if (hooks.on_end) hooks.on_end(rec);
  }
}

}  // namespace

std::string_view to_string(StageState s) {
  switch (s) {
    case StageState::not_run: return "not run";
    case StageState::running: return "interrupted";
    case StageState::ran: return "ran";
    case StageState::skipped: return "skipped";
    case StageState::failed: return "failed";
  }
  return "?";
}

std::span<const SectionRule> baseline_section_rules() {
  static constexpr SectionRule kRules[] = {
      {"baseline.stage", "baseline.stages", "Stages of the baseline (wall time)",
       Layout::monitor},
  };
  return kRules;
}

namespace {

// A line of the stage table for time spent outside the stages.
Result outside_stages_result(const std::string& id, const std::string& title, double seconds) {
  Result r = Result::measured("baseline.stage." + id + ".s", title, "s", {seconds},
                              /*higher_is_better=*/false);
  r.param("state", std::string("outside the stages"));
  return r;
}

}  // namespace

std::vector<Result> stage_results(std::span<const StageRecord> records) {
  std::vector<Result> out;
  for (const StageRecord& s : records) {
    const std::string key = "baseline.stage." + s.id + ".s";
    Result r;
    switch (s.state) {
      case StageState::ran:
      case StageState::failed:
        r = Result::measured(key, s.title, "s", {s.seconds}, /*higher_is_better=*/false);
        if (s.state == StageState::failed) {
          r.status = Status::fail;
          r.reason = "failed: " + s.reason;
          r.advice = "the other stages ran; rerun the suite of this stage alone for details";
        }
        break;
      case StageState::skipped:
        r = Result::skipped(key, s.title, "s", s.reason);
        break;
      case StageState::running:
        r = Result::skipped(key, s.title, "s",
                            "interrupted (Ctrl-C) after " + std::to_string(static_cast<int>(
                                                                 s.seconds + 0.5)) +
                                " s; what it measured until then is kept");
        break;
      case StageState::not_run:
        r = Result::skipped(key, s.title, "s", "not run: the baseline was interrupted before it");
        break;
    }
    r.param("expected_s", s.expected_s, "s", 0);
    r.param("state", std::string(to_string(s.state)));
    out.push_back(std::move(r));
  }
  return out;
}

BaselineOutcome run_baseline(std::span<const BaselineStage> stages, ResultSink& sink,
                             const BaselineHooks& hooks) {
  // Shared with the sink's end summary, which reports the stage table however the run ends.
  // It is registered last (after the stages' own summaries: the amp study makes its results at
  // the end), so the stage table prints after every stage's section.
  auto records = std::make_shared<std::vector<StageRecord>>();
  for (const BaselineStage& s : stages)
    records->push_back(StageRecord{.id = s.id, .title = s.title, .expected_s = s.expected_s});
  sink.declare_sections(baseline_section_rules());
  // When the stages ended (or were interrupted): the summaries' time is counted from here.
  auto stages_end = std::make_shared<Clock::time_point>(Clock::now());
  const std::optional<double> setup_s = hooks.setup_s;
  auto report_stages = [&sink, records, stages_end, setup_s] {
    *stages_end = Clock::now();
    sink.at_end([records, stages_end, setup_s](ResultSink& end_sink, bool) {
      std::vector<Result> rows;
      if (setup_s)
        rows.push_back(outside_stages_result(
            "setup", "before the stages: the training set made or checked", *setup_s));
      for (Result& r : stage_results(*records)) rows.push_back(std::move(r));
      if (setup_s)
        rows.push_back(outside_stages_result(
            "summaries", "after the stages: their end summaries (AMP results, diagnosis)",
            seconds_since(*stages_end)));
      for (Result& r : rows) end_sink.add(std::move(r));
    });
  };

  BaselineOutcome outcome;
  try {
    run_stages(stages, *records, sink, hooks, outcome);
  } catch (const Cancelled&) {
    report_stages();
    throw;
  }
  report_stages();
  outcome.stages = *records;
  return outcome;
}


TrainFeedChoice choose_training_feed(const FeedInputs& in,
                                     std::optional<double> model_images_per_s) {
  TrainFeedChoice f;
  if (in.starve) {
    f.workers = 1;
    f.why = "one CPU worker (--starve): the loader cannot keep up, the rows show it";
    return f;
  }
  auto rate = [](const std::optional<double>& r) { return r && *r > 0 ? *r : 0.0; };
  const double gpu_rate = rate(in.gpu_images_per_s);
  const double split_rate = rate(in.split_images_per_s);
  const double knee_rate = in.knee_workers ? rate(in.knee_images_per_s) : 0.0;
  auto with = [](const std::string& because) {
    return because.empty() ? std::string() : ": " + because;
  };
  auto gpu = [&](const std::string& because) {
    f.decode = pipeline::DecodeMode::gpu;
    f.workers = 0;
    f.why = "the nvJPEG path (" + grouped(gpu_rate) + " images/s in the loader stage)" +
            with(because);
    return f;
  };
  auto split = [&](const std::string& because) {
    f.decode = pipeline::DecodeMode::both;
    f.workers = 0;
    f.gpu_share = in.split_gpu_share.value_or(0);
    f.why = "the CPU/GPU split (nvJPEG + CPU workers, " + grouped(split_rate) +
            " images/s in the loader stage)" + with(because);
    return f;
  };
  auto knee = [&](const std::string& because) {
    f.decode = pipeline::DecodeMode::cpu;
    f.workers = *in.knee_workers;
    f.why = std::to_string(f.workers) + " CPU workers, the knee of the loader sweep (" +
            (knee_rate > 0 ? grouped(knee_rate) + " images/s" : std::string("its rate unknown")) +
            ")" + with(because);
    return f;
  };
  if (!model_images_per_s || *model_images_per_s <= 0) {
    // The model's rate is unknown: the fastest the loader stage measured.
    if (split_rate > knee_rate && split_rate >= gpu_rate)
      return split("the fastest measured, the model's rate unknown");
    if (gpu_rate > knee_rate) return gpu("the fastest measured, the model's rate unknown");
    if (in.knee_workers) return knee("");
    f.why = "the pipeline's default workers (the loader stage found no knee)";
    return f;
  }

  const double model = *model_images_per_s;
  const std::string vs_model = "x the model's " + grouped(model) + " images/s alone";
  auto ratio = [&](double r) { return fixed(r / model, 2) + vs_model; };
  // Where the decode overlapped a busy GPU, the nvJPEG paths feed up to the model's rate; else an
  // nvJPEG-fed step is the model's step plus the decode of its batch (see the header).
  const bool overlaps =
      in.gpu_wait_beside_step_pct && nvjpeg_overlaps_step(*in.gpu_wait_beside_step_pct);
  auto nvjpeg_expected = [&](double loader_rate, const std::optional<double>& host_us) {
    if (loader_rate <= 0) return 0.0;
    const double host_s = host_us && *host_us > 0 && !overlaps ? *host_us * 1e-6 : 0.0;
    return std::min(loader_rate, 1.0 / (1.0 / model + host_s));
  };
  const double gpu_expected = nvjpeg_expected(gpu_rate, in.gpu_host_us_per_image);
  const double split_expected = nvjpeg_expected(split_rate, in.split_host_us_per_image);
  const double knee_expected = in.knee_workers ? std::min(knee_rate, model) : 0.0;
  auto expected = [&](const char* what, double r, const std::optional<double>& host_us) {
    std::string s = std::string(what) + " would feed about " + grouped(r) + " images/s (" +
                    fixed(r / model, 2) + "x";
    if (overlaps)
      s += ": its decode overlapped a busy GPU in the loader stage";
    else if (host_us && *host_us > 0)
      s += ": the decode of each batch and the step take turns, " + fixed(*host_us, 1) +
           " us an image";
    return s + ")";
  };
  std::string nvjpeg_note;
  if (gpu_rate > 0) nvjpeg_note = expected("the nvJPEG path", gpu_expected, in.gpu_host_us_per_image);
  if (split_rate > 0)
    nvjpeg_note += (nvjpeg_note.empty() ? "" : ", ") +
                   expected("the split", split_expected, in.split_host_us_per_image);
  if (nvjpeg_note.empty())
    nvjpeg_note = "no nvJPEG path" + (in.nvjpeg_missing.empty() ? "" : " (" + in.nvjpeg_missing + ")");

  const std::string knee_note =
      in.knee_workers && knee_rate > 0 ? "the CPU knee " + ratio(knee_rate) : "no CPU knee";
  const bool knee_keeps_up = in.knee_workers && knee_rate >= kFeedHeadroom * model;
  // The share of all cores the knee's workers would keep busy at the model's rate (each worker
  // decodes knee rate / workers images a second on a core of its own).
  std::optional<double> knee_cpu_pct;
  if (knee_keeps_up && in.usable_cores && *in.usable_cores > 0)
    knee_cpu_pct = 100.0 * model / (knee_rate / *in.knee_workers) / *in.usable_cores;
  const std::string cpu_note =
      knee_cpu_pct ? ", its workers would keep " + fixed(*knee_cpu_pct, 0) + " % of the " +
                         std::to_string(*in.usable_cores) + " cores busy at the model's rate"
                   : std::string();
  auto knee_keeping_up = [&] {
    return knee(ratio(knee_rate) + ", it keeps up" + cpu_note + "; " + nvjpeg_note);
  };
  if (knee_keeps_up && (!knee_cpu_pct || *knee_cpu_pct <= kKneeCpuBudgetPct))
    return knee_keeping_up();
  if (overlaps) {
    // The knee would drown the CPU (or does not keep up): an nvJPEG path that keeps up.
    const std::string why_not_knee =
        knee_keeps_up ? knee_note + cpu_note + ", over " + fixed(kKneeCpuBudgetPct, 0) + " %"
                      : knee_note;
    if (split_expected >= kFeedHeadroom * model)
      return split(expected("it", split_expected, in.split_host_us_per_image) +
                   ", it keeps up with the CPU and the JPEG engines sharing the work; " +
                   why_not_knee);
    if (gpu_expected >= kFeedHeadroom * model)
      return gpu(expected("it", gpu_expected, in.gpu_host_us_per_image) +
                 ", it keeps up and leaves the CPU cores free; " + why_not_knee);
  }
  if (knee_keeps_up) return knee_keeping_up();
  if (knee_expected <= 0 && gpu_expected <= 0 && split_expected <= 0) {
    f.why = "the pipeline's default workers (the loader stage found no knee)";
    return f;
  }
  if (knee_expected >= gpu_expected && knee_expected >= split_expected)
    return knee((knee_rate > 0 ? ratio(knee_rate) + ", below " + fixed(kFeedHeadroom, 1) +
                                     "x and still the most expected; "
                               : std::string()) +
                nvjpeg_note);
  if (split_expected >= gpu_expected)
    return split(expected("it", split_expected, in.split_host_us_per_image) +
                 ", the most expected; " + knee_note +
                 (gpu_rate > 0 ? ", " + expected("the nvJPEG path", gpu_expected,
                                                  in.gpu_host_us_per_image)
                               : std::string()));
  return gpu(expected("it", gpu_expected, in.gpu_host_us_per_image) + ", the most expected; " +
             knee_note +
             (split_rate > 0 ? ", " + expected("the split", split_expected,
                                                in.split_host_us_per_image)
                             : std::string()));
}

}  // namespace gb::bench
