// diagnose/diagnose.hpp: turns results and their telemetry into verdicts, advice and the
// baseline checklist (DESIGN.md "The four questions"). Pure functions of the Run: no GPU, no
// I/O. Thresholds and their justification: diagnose/thresholds.hpp, docs/thresholds.md.
//
//   diagnose::apply_verdicts(run);                      // pass/warn/fail/invalid + evidence
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
// applying it twice changes nothing.
void apply_verdicts(Run& run);

// The checklist: "card speed" (a roll-up of the probe verdicts, present when probe results
// exist), then GPU utilization, CPU utilization per core, data-loading share and AMP accuracy.
// Rows whose suite has not run are "skipped" and name the command that measures them.
std::vector<ChecklistRow> build_checklist(const Run& run);

}  // namespace gb::diagnose
