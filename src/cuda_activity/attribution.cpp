// cuda_activity/attribution.cpp: thread-state ticks x interval records -> idle causes.
#include "cuda_activity/attribution.hpp"

#include <algorithm>

namespace gb::cuda_activity {

ThreadState thread_state(char c) {
  switch (c) {
    case 'R':
      return ThreadState::running;
    case 'S':
    case 'I':
      return ThreadState::sleeping;
    case 'D':
      return ThreadState::disk;
    default:
      return ThreadState::other;
  }
}

const char* idle_cause_name(IdleCause c) {
  switch (c) {
    case IdleCause::sync:
      return "sync";
    case IdleCause::host:
      return "host";
    case IdleCause::data:
      return "data";
    case IdleCause::other:
      return "other";
  }
  return "other";
}

IdleCause classify_idle(const ThreadTick& t, bool host_in_sync) {
  // A spinning sync shows the thread running: the sync spans decide first.
  if (host_in_sync) return IdleCause::sync;
  if (t.launcher_running) return IdleCause::host;
  if (t.launcher_disk || t.workers_busy > 0) return IdleCause::data;
  return IdleCause::other;
}

std::optional<double> AttributionTotals::idle_pct() const {
  if (ticks == 0) return std::nullopt;
  return 100.0 * static_cast<double>(idle_ticks) / static_cast<double>(ticks);
}

std::optional<double> AttributionTotals::cause_pct(IdleCause c) const {
  if (ticks == 0) return std::nullopt;
  return 100.0 * static_cast<double>(by_cause[static_cast<int>(c)]) / static_cast<double>(ticks);
}

void AttributionTotals::add(const AttributionTotals& o) {
  ticks += o.ticks;
  idle_ticks += o.idle_ticks;
  for (int c = 0; c < kIdleCauses; ++c) by_cause[c] += o.by_cause[c];
  unresolved += o.unresolved;
}

void IdleAttribution::add_record(const IntervalRecord& r) {
  if (r.kind != RecordKind::interval) return;
  Producer& p = producers_[r.pid];
  p.records.push_back(r);
  p.covered_until = std::max(p.covered_until, r.t1_ns);
  resolve(false);
}

void IdleAttribution::producer_ended(std::uint32_t pid) {
  const auto it = producers_.find(pid);
  if (it == producers_.end()) return;
  it->second.ended = true;
  resolve(false);
}

void IdleAttribution::add_tick(const ThreadTick& tick) {
  pending_.push_back(tick);
  if (pending_.size() > kMaxPendingTicks) {
    if (!producers_.empty()) ++totals_.unresolved;  // no CUDA process at all: not counted
    pending_.pop_front();
  }
  resolve(false);
}

void IdleAttribution::finish() { resolve(true); }

IdleAttribution::Moment IdleAttribution::moment(std::uint64_t t) const {
  Moment m;
  for (const auto& [pid, p] : producers_) {
    (void)pid;
    for (const IntervalRecord& r : p.records) {
      if (t < r.t0_ns || t >= r.t1_ns) continue;
      m.covered = true;
      const int ms = static_cast<int>((t - r.t0_ns) / 1'000'000);
      for (std::uint32_t d = 0; d < r.devices; ++d)
        if (r.dev[d].used && !mask_bit(r.dev[d].idle_mask, ms)) m.busy = true;
      if (mask_bit(r.sync_mask, ms)) m.in_sync = true;
      break;
    }
  }
  return m;
}

void IdleAttribution::resolve(bool final) {
  // A tick can be judged once every running producer has written past it.
  std::uint64_t covered = UINT64_MAX;
  bool any_running = false;
  for (const auto& [pid, p] : producers_) {
    (void)pid;
    if (p.ended) continue;
    any_running = true;
    covered = std::min(covered, p.covered_until);
  }
  if (producers_.empty() && !final) return;
  while (!pending_.empty()) {
    const ThreadTick& t = pending_.front();
    if (!final && any_running && t.t_ns >= covered) break;
    const Moment m = moment(t.t_ns);
    if (m.covered) {
      ++totals_.ticks;
      if (!m.busy) {
        ++totals_.idle_ticks;
        ++totals_.by_cause[static_cast<int>(classify_idle(t, m.in_sync))];
      }
      if (t.t_ns >= window_start_ns_) count_in_window(t, m);
    }
    pending_.pop_front();
  }
  trim();
}

void IdleAttribution::count_in_window(const ThreadTick& t, const Moment& m) {
  ++window_tail_.ticks;
  if (m.busy) {
    window_idle_from_ns_ = 0;
  } else {
    if (!window_idle_from_ns_) window_idle_from_ns_ = t.t_ns;
    ++window_tail_.idle_ticks;
    ++window_tail_.by_cause[static_cast<int>(classify_idle(t, m.in_sync))];
  }
  // An idle stretch past the limit counts from then on, to its end.
  if (m.busy || t.t_ns - window_idle_from_ns_ > max_idle_tail_ns_) {
    window_.add(window_tail_);
    window_tail_ = AttributionTotals();
  }
}

void IdleAttribution::trim() {
  // Records ending before the oldest pending tick are not needed again; keep each producer's
  // newest one at least.
  const std::uint64_t oldest = pending_.empty() ? UINT64_MAX : pending_.front().t_ns;
  for (auto& [pid, p] : producers_) {
    (void)pid;
    while (p.records.size() > 1 && p.records.front().t1_ns <= oldest) p.records.pop_front();
  }
}

}  // namespace gb::cuda_activity
