// diagnose/references.cpp: peers' figures beside ours. A quoted figure (core/references)
// attaches to its result only when the run's device is the spec-table entry it was measured
// on, and says "quoted" with its source; no verdict comes from it.
#include "core/references.hpp"
#include "diagnose/rules.hpp"

namespace gb::diagnose {

void attach_quoted_references(Run& run, const RunFacts& facts) {
  if (!facts.spec) return;
  for (Result& r : run.results) {
    if (!r.value) continue;
    for (const QuotedFigure& q : quoted_figures()) {
      if (q.key != r.key || q.spec != facts.spec->name || r.find_reference(q.kind)) continue;
      if (!q.unless_param.empty() && r.find_param(q.unless_param)) continue;
      r.reference(std::string(q.kind), q.value, quoted_source(q), "quoted");
    }
  }
}

}  // namespace gb::diagnose
