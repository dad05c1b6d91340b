// diagnose/verdicts.cpp: apply_verdicts(), the order the rules run in. The link rules go first
// (their results are counts, not speeds), then the amp study's (accuracies and speedups, no
// datasheet); then each result that still has no verdict gets its references, is checked for
// slowdowns, and is judged by the rule its key has; last, a trained-down link is named as the
// cause of slow pinned copies. Results of a watched job are diagnose_watch()'s: they describe
// the job, not the card's speed.
#include "diagnose/diagnose.hpp"
#include "diagnose/rules.hpp"

namespace gb::diagnose {

void apply_verdicts(Run& run) {
  const RunFacts facts = read_run_facts(run);
  apply_pcie_link_rule(run, facts);
  apply_pcie_replay_rule(run);
  attach_quoted_references(run, facts);
  apply_amp_rules(run);
  for (Result& r : run.results) {
    if (r.status != Status::info || !r.value) continue;
    if (r.key.starts_with("watch.")) continue;  // judged as a whole by diagnose_watch()
    if (judge_gpu_link(r)) {
      note_power_cap(r);
      continue;
    }
    const Reference* achievable = add_achievable_reference(r, facts);
    if (!apply_slowdown_rule(r, facts)) {
      if (achievable)
        judge_against_achievable(r, *achievable);
      else if (!describe_sustained(r) && !judge_latency(r) && !judge_data_wait(r))
        judge_host_contention(r);
    }
    note_power_cap(r);
  }
  apply_link_explains_bandwidth(run);
}

}  // namespace gb::diagnose
