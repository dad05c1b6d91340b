// bench/sink_snapshot.hpp: what a ResultSink holds, copied while its suite still runs on
// another thread: the report the CLI's watchdog makes when a suite is stuck (a wait that never
// returns) and does not stop after Ctrl-C. ResultSink::add, add_fact and declare_sections take
// the same lock as snapshot(); the sink's other accessors belong to the suite's own thread.
#pragma once
#include <vector>

#include "bench/suite.hpp"

namespace gb::bench {

struct SinkSnapshot {
  std::vector<Fact> facts;
  std::vector<SectionSpec> sections;
  std::vector<Result> results;
};

SinkSnapshot snapshot(ResultSink& sink);

}  // namespace gb::bench
