// diagnose/diagnose.hpp: turns results and their telemetry into verdicts, advice and the
// baseline checklist (docs/thresholds.md "Checklist"). Pure functions of the Run: no GPU, no
// I/O. Thresholds and their justification: diagnose/thresholds.hpp, docs/thresholds.md.
//
//   diagnose::apply_verdicts(run);                      // pass/warn/fail/invalid + evidence
//   run.findings = diagnose::diagnose_watch(run);       // what holds a watched job back
//   run.checklist = diagnose::build_checklist(run);     // the table every run ends with
#pragma once
#include <vector>

#include "core/result.hpp"

namespace gb::diagnose {

// For every Result that has a value and status info:
//  - a hardware/thermal slowdown or power brake in its telemetry -> invalid (reason names the
//    slowdown and the clock drop; the value is kept, marked, not hidden);
//  - otherwise judged against its "achievable" reference (added from the table in
//    docs/thresholds.md when the key has one): pass >= 90 %, warn >= 75 %, fail below;
//  - latencies stay info unless far off a healthy host (warn);
//  - running at the power cap adds a note to the reason and never invalidates.
// The PCIe link results (probe.pcie.link.*) and the replay counter get their own rules.
// Results that already carry a verdict (pass/warn/fail/skipped/invalid) are left alone, so
// applying it twice changes nothing. watch.* results are left to diagnose_watch(): a utilization
// seen under a thermal slowdown is still the job's utilization, not an invalid figure.
void apply_verdicts(Run& run);

// gpubase watch: what holds the monitored job back, from the watch.* results (docs/results.md)
// and the "gpu.available" / "host.cpu.cores" facts. Most important first (fail, warn, pass,
// info; then by cause). Problems are warn/fail with the measured evidence and concrete advice
// ("input_bound_cpu", "storage_bound", "too_many_workers", "tensor_cores_unused",
// "small_kernels", "launch_bound", ...); "gpu_bound" (pass) is the good news; notes are info.
// A rule whose inputs were not measured (skipped or absent) stays silent; findings never
// contradict each other (docs/thresholds.md "Watch"). Empty for a run without watch results.
std::vector<Finding> diagnose_watch(const Run& run);

// The checklist: "card speed" (a roll-up of the probe verdicts, present when probe results
// exist), then GPU utilization, CPU utilization per core, data-loading share and AMP accuracy.
// Rows whose suite has not run are "skipped" and name the command that measures them.
// A GPU or CPU utilization row that warns or fails names its cause from run.findings (set by
// diagnose_watch() before) and gives that finding's advice instead of the generic one.
std::vector<ChecklistRow> build_checklist(const Run& run);

}  // namespace gb::diagnose
