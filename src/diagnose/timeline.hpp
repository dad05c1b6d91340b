// diagnose/timeline.hpp: when each of a watched job's findings held. A finding is judged on the
// whole run's figures (diagnose_watch); here the condition behind it is checked again at every
// point of the recorded time series (the same thresholds, diagnose/thresholds.cpp), so the
// report can mark the minutes it held on the time axis. Only findings whose evidence the series
// carries get a timeline (GPU busy, SM and tensor activity, busiest core, saturated processes,
// I/O wait, disk busy, data wait); the others are whole-run judgements and get none.
#pragma once
#include <vector>

#include "core/result.hpp"
#include "core/series.hpp"

namespace gb::diagnose {

// One FindingTimeline per finding of `run` that can be placed in time, in the findings' order
// (a finding whose condition never held at a single point has one with no spans). Spans closer
// than `merge_gap_s` are joined (0: the series' span / 800, about a pixel of the chart).
std::vector<FindingTimeline> finding_timelines(const Run& run, const RunSeries& series,
                                               double merge_gap_s = 0);

}  // namespace gb::diagnose
