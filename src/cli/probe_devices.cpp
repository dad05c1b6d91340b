// cli/probe_devices.cpp: see probe_devices.hpp.
#include "cli/probe_devices.hpp"

#include <algorithm>
#include <memory>
#include <vector>

#include "bench/devices.hpp"
#include "cli/suite_run.hpp"
#include "core/error.hpp"
#include "sys/identity.hpp"

namespace gb::cli {

void check_several_outputs(const OutputOptions& out, std::size_t n) {
  if (n <= 1) return;
  if (!out.output_file.empty() && !sys::has_gpu_placeholder(out.output_file))
    throw Error(ErrorKind::usage, "-o " + out.output_file +
                                      ": with several --devices give a file name with %g (the "
                                      "GPU index), e.g. runs/%N-gpu%g.json: one run file per GPU");
  if (out.output_file.empty() && (out.json || out.html || out.csv))
    throw Error(ErrorKind::usage, "--json, --html or --csv with several --devices: give -o FILE "
                                  "with %g (one file per GPU, e.g. runs/%N-gpu%g.json)");
}

int run_probe_devices(const std::string& command, const bench::ProbeOptions& probe,
                      const OutputOptions& out, bool save, const std::string& devices_spec,
                      bool concurrent) {
  std::string no_gpu_reason;
  std::vector<int> devices = bench::select_devices(devices_spec, no_gpu_reason);
  const bool several = devices.size() > 1;
  check_several_outputs(out, devices.size());
  // Without a GPU: one run that says why, as a probe without --devices does (exit 3).
  const bool no_gpu = devices.empty();
  if (no_gpu) devices.push_back(probe.device);

  const std::size_t n = devices.size();
  std::vector<OutputOptions> outs(n, out);
  std::vector<std::unique_ptr<SuiteRun>> suites;
  std::vector<std::unique_ptr<bench::ResultSink>> sinks;
  std::vector<SuiteEnd> ends(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (!no_gpu) outs[i].gpu = devices[i];
    check_output_writable(outs[i]);
    suites.push_back(std::make_unique<SuiteRun>(command));
    const std::string prefix = several ? "GPU " + std::to_string(devices[i]) + ": " : "";
    sinks.push_back(std::make_unique<bench::ResultSink>(
        [&out, prefix](const std::string& line) { progress_line(out, prefix + line); }));
  }
  std::size_t done = 0;
  const bool interrupted = run_cancellable(out, [&] {
    for (; done < n; ++done) {
      bench::ProbeOptions o = probe;
      o.device = devices[done];
      if (!no_gpu) o.devices = devices;  // the p2p and nccl sections span them
      const bench::ProbeOutcome outcome = bench::run_probe(o, *sinks[done]);
      ends[done] = SuiteEnd{outcome.gpu_found, outcome.no_gpu_reason};
    }
    if (!concurrent || no_gpu) return;
    progress_line(out, "probe: all " + std::to_string(n) + " selected GPUs at once");
    std::vector<std::unique_ptr<bench::ResultSink>> together;
    std::vector<bench::ResultSink*> ptrs;
    for (std::size_t i = 0; i < n; ++i) {
      const std::string prefix = "GPU " + std::to_string(devices[i]) + " (together): ";
      together.push_back(std::make_unique<bench::ResultSink>(
          [&out, prefix](const std::string& line) { progress_line(out, prefix + line); }));
      ptrs.push_back(together.back().get());
    }
    bench::run_probe_concurrently(probe, devices, ptrs);
    for (std::size_t i = 0; i < n; ++i)
      bench::add_concurrent_comparison(*sinks[i], together[i]->results(), devices);
  });
  int rc = 0;
  bool any_interrupted = false;
  for (std::size_t i = 0; i < n; ++i) {
    ends[i].interrupted = interrupted;
    suites[i]->complete(*sinks[i], ends[i]);
    const int code = suites[i]->finish(outs[i], save);
    any_interrupted = any_interrupted || code == static_cast<int>(ExitCode::interrupted);
    rc = std::max(rc, code);
  }
  return any_interrupted ? static_cast<int>(ExitCode::interrupted) : rc;
}

}  // namespace gb::cli
