// diagnose/data_wait.cpp: the share of step time the GPU waited for input
// (train.<config>.data_wait_pct, from `gpubase train --data`), judged with the limits of the
// checklist's data-loading row, so the figure and the row always agree.
#include <string>

#include "diagnose/rules.hpp"
#include "diagnose/text.hpp"
#include "diagnose/thresholds.hpp"

namespace gb::diagnose {

bool judge_data_wait(Result& r) {
  if (!r.key.starts_with("train.") || !r.key.ends_with(".data_wait_pct") || !r.value)
    return false;
  const MetricRowSpec* row = find_metric_row("data_loading");
  if (!row) return false;
  const double wait = *r.value;
  r.reason = "the GPU waited for data " + format_number(wait) + " % of the step time (target " +
             std::string(row->target) + ")";
  if (wait < row->pass_limit) {
    r.status = Status::pass;
    return true;
  }
  r.status = wait <= row->warn_limit ? Status::warn : Status::fail;
  r.advice = "the loader cannot keep up with this model: more workers (--workers), the nvJPEG "
             "path or the CPU/GPU split (--decode gpu|both), a packed dataset on faster storage";
  return true;
}

}  // namespace gb::diagnose
