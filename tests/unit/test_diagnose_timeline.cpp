// tests/unit/test_diagnose_timeline.cpp: when a watched job's findings held (diagnose/timeline):
// the condition of each finding checked at every point of the series, spans from the start of
// the first interval to the end of the last, nearby spans merged, whole-run findings left out.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "diagnose/timeline.hpp"

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

gb::RunSeries series(const std::vector<double>& util, const std::vector<double>& saturated = {}) {
  gb::RunSeries s;
  for (std::size_t i = 0; i < util.size(); ++i) s.t_s.push_back(static_cast<double>(i + 1));
  s.panels.push_back({"gpu", "GPU", "%", 100, {{"gpu_util_pct", "busy", util}}});
  if (!saturated.empty())
    s.panels.push_back({"job", "job", "processes", 0, {{"job_saturated_processes", "sat", saturated}}});
  return s;
}

gb::Run run_with(std::initializer_list<const char*> ids) {
  gb::Run run;
  for (const char* id : ids) run.findings.push_back({id, gb::Status::warn, id, "evidence", ""});
  return run;
}

}  // namespace

TEST(FindingTimeline, MarksTheIntervalsWhereTheGpuWasBusy) {
  const auto tl = gb::diagnose::finding_timelines(
      run_with({"gpu_bound"}), series({99, 99, 20, 20, 99, 98, 99}), 0.001);
  ASSERT_EQ(tl.size(), 1u);
  EXPECT_EQ(tl[0].finding_id, "gpu_bound");
  EXPECT_EQ(tl[0].condition, "GPU busy > 95 %");
  ASSERT_EQ(tl[0].spans.size(), 2u);
  // Point 1 (t = 1 s) covers the interval 0..1 s.
  EXPECT_DOUBLE_EQ(tl[0].spans[0].from_s, 0);
  EXPECT_DOUBLE_EQ(tl[0].spans[0].to_s, 2);
  EXPECT_DOUBLE_EQ(tl[0].spans[1].from_s, 4);
  EXPECT_DOUBLE_EQ(tl[0].spans[1].to_s, 7);
  EXPECT_DOUBLE_EQ(tl[0].held_s, 5);
}

TEST(FindingTimeline, StarvationNeedsTheGpuBelowTargetAndAProcessAtItsLimit) {
  const auto tl = gb::diagnose::finding_timelines(
      run_with({"one_process_bound"}), series({40, 40, 40, 99, 40}, {1, 0, 1, 1, 1}), 0.001);
  ASSERT_EQ(tl.size(), 1u);
  ASSERT_EQ(tl[0].spans.size(), 3u) << "points 1, 3 and 5";
  EXPECT_DOUBLE_EQ(tl[0].held_s, 3);
}

TEST(FindingTimeline, MissingPointsNeverHold) {
  const auto tl = gb::diagnose::finding_timelines(run_with({"job_not_using_gpu"}),
                                                  series({0, kNaN, 0}), 0.001);
  ASSERT_EQ(tl.size(), 1u);
  EXPECT_EQ(tl[0].spans.size(), 2u) << "a gap where the GPU was not measured";
}

TEST(FindingTimeline, JoinsSpansCloserThanTheMergeGap) {
  const auto tl = gb::diagnose::finding_timelines(run_with({"gpu_bound"}),
                                                  series({99, 20, 99, 20, 20, 20, 99}), 1.5);
  ASSERT_EQ(tl.size(), 1u);
  ASSERT_EQ(tl[0].spans.size(), 2u) << "a 1-s gap is joined, a 3-s gap is not";
  EXPECT_DOUBLE_EQ(tl[0].held_s, 3) << "the time held counts the points, not the joined span";
}

TEST(FindingTimeline, WholeRunFindingsGetNoTimeline) {
  const auto tl = gb::diagnose::finding_timelines(
      run_with({"no_gpu", "throttled", "gpu_bound", "memory_pressure"}), series({99, 99}));
  ASSERT_EQ(tl.size(), 1u);
  EXPECT_EQ(tl[0].finding_id, "gpu_bound");
}

TEST(FindingTimeline, AFindingThatNeverHeldAtOnePointHasNoSpans) {
  const auto tl = gb::diagnose::finding_timelines(run_with({"gpu_bound"}), series({90, 94}));
  ASSERT_EQ(tl.size(), 1u);
  EXPECT_TRUE(tl[0].spans.empty());
}

TEST(FindingTimeline, SmallKernelsNeedTheSmActivityColumn) {
  EXPECT_TRUE(gb::diagnose::finding_timelines(run_with({"small_kernels"}), series({99})).empty());
  gb::RunSeries s = series({90, 90, 90});
  s.panels[0].lines.push_back({"gpu_sm_active_pct", "SM", {10, 60, 10}});
  const auto tl = gb::diagnose::finding_timelines(run_with({"small_kernels"}), s, 0.001);
  ASSERT_EQ(tl.size(), 1u);
  EXPECT_EQ(tl[0].spans.size(), 2u);
}
