#include "sched/lookahead.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/time_units.h"
#include "sched/scheduler_util.h"

namespace toposched::sched {

namespace {

using internal::AllocatePlacement;
using internal::kNever;
using internal::PlusLimit;
using internal::Seconds;

// A span of time for explanations, rounded: "~45 s", "~12 min", "~3.1 h".
std::string Approx(double seconds) {
  char buf[48];
  if (seconds < 90) {
    std::snprintf(buf, sizeof buf, "~%.0f s", seconds);
  } else if (seconds < 5400) {
    std::snprintf(buf, sizeof buf, "~%.0f min", seconds / 60);
  } else {
    std::snprintf(buf, sizeof buf, "~%.1f h", seconds / 3600);
  }
  return buf;
}

}  // namespace

int64_t Lookahead::ReservationEndUs(const Job& j, int64_t now_us) const {
  const int64_t end = Scheduler::EndUs(j);
  // A kill deadline is never kNever, so `end` already answers for it.
  if (end != kNever || !s_.options_.backfill_by_estimates || s_.estimator_ == nullptr ||
      j.spec.time_limit_s > 0) {
    return end;
  }
  const std::optional<int64_t> e = s_.estimator_->ExpectedEndUs(JobId{j.id}, now_us);
  return e ? std::max(*e, now_us) : kNever;
}

std::optional<int64_t> Lookahead::BackfillEndUs(const Job& j, const Placement& p, int64_t now_us,
                                                bool estimate_ok, bool* estimated) const {
  *estimated = false;
  if (j.spec.time_limit_s > 0) {
    const int64_t end = PlusLimit(now_us, j.spec.time_limit_s);
    if (end == kNever) return std::nullopt;
    return end;
  }
  if (!estimate_ok || !s_.options_.backfill_by_estimates || s_.estimator_ == nullptr) {
    return std::nullopt;
  }
  const std::optional<double> run = s_.estimator_->RunSeconds(JobId{j.id}, p);
  if (!run || !std::isfinite(*run) || *run < 0) return std::nullopt;
  const double us = std::ceil(*run * kUsPerS);
  if (!(us < 9e18)) return std::nullopt;  // below 2^63: the cast is defined
  const int64_t d = static_cast<int64_t>(us);
  if (d > kNever - now_us) return std::nullopt;
  *estimated = true;
  return now_us + d;
}

Lookahead::Reservation Lookahead::MakeReservation(const Job& j, const job::JobSpec& spec,
                                                  int64_t now_us) const {
  std::vector<std::pair<int64_t, const Job*>> running;  // (end for the reservation, job)
  for (const auto& [id, o_ptr] : s_.Running()) {
    const Job& o = *o_ptr;
    if (o.placement) running.emplace_back(ReservationEndUs(o, now_us), &o);
  }
  std::stable_sort(running.begin(), running.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  ClusterState trial = s_.state_;
  Reservation r{j.id, kNever, {}};
  bool estimated = false;
  for (const auto& [end, o] : running) {
    (void)trial.Release(AllocId::Job(o->id));
    if (end == kNever) continue;  // only reached when released as part of "never"
    estimated = estimated || end != Scheduler::EndUs(*o);
    // Too few free GPUs cluster-wide: no placement yet (saves a placer call per release).
    if (!spec.Fractional() && trial.ClusterCapacity().free_gpus < spec.total_gpus) continue;
    Verdict v = s_.placer_->Place(trial, spec);
    if (v.fit()) {
      r.start_us = std::max(end, now_us);
      r.parts = v.placement->parts;
      r.estimated = estimated;
      return r;
    }
  }
  // Never by time limits: reserve the GPUs it would take with every running job gone.
  Verdict v = s_.placer_->Place(trial, spec);
  if (v.fit()) r.parts = v.placement->parts;
  return r;
}

std::optional<Lookahead::WaitPlan> Lookahead::PlanWait(const Job& j, const job::JobSpec& spec,
                                                       const Placement& now_p,
                                                       const ClusterState& base,
                                                       int64_t now_us) const {
  if (!s_.options_.wait_or_spread || s_.estimator_ == nullptr || j.spec.elastic ||
      spec.Fractional()) {
    return std::nullopt;
  }
  const int64_t limit = j.wait_finish_by_us >= 0 ? j.wait_finish_by_us : kNever;
  if (now_us >= limit) return std::nullopt;                                 // waited it out
  if (!(now_p.predicted_ms > now_p.best_possible_ms)) return std::nullopt;  // already best
  const std::optional<double> run_now = s_.estimator_->RunSeconds(JobId{j.id}, now_p);
  if (!run_now) return std::nullopt;
  WaitPlan best;
  best.finish_now_us = static_cast<double>(now_us) + *run_now * kUsPerS;
  best.finish_us = best.finish_now_us;            // the bound: no later start can win
  std::vector<std::pair<int64_t, int64_t>> ends;  // (expected end, job id)
  for (const auto& [id, o] : s_.running_) {
    if (!o->placement) continue;
    if (std::optional<int64_t> e = s_.estimator_->ExpectedEndUs(JobId{id}, now_us)) {
      ends.emplace_back(std::max(*e, now_us), id);
    }
  }
  std::sort(ends.begin(), ends.end());
  // Release groups: by time times[g], the jobs ends[0, upto[g]) have ended.
  std::vector<int64_t> times;
  std::vector<size_t> upto;
  for (size_t k = 0; k < ends.size(); ++k) {
    if (k + 1 == ends.size() || ends[k + 1].first != ends[k].first) {
      times.push_back(ends[k].first);
      upto.push_back(k + 1);
    }
  }
  int attempts = 0;
  // Places the job on `trial` (released through group g); keeps the best finish. True when the
  // placement there is the best possible (no later group can give a faster one).
  auto evaluate = [&](const ClusterState& trial, size_t g) {
    ++attempts;
    Verdict v = s_.placer_->Place(trial, spec);
    if (!v.fit()) return false;
    const bool at_best = !(v.placement->predicted_ms > v.placement->best_possible_ms);
    if (!(v.placement->predicted_ms < now_p.predicted_ms)) return at_best;
    const std::optional<double> run = s_.estimator_->RunSeconds(JobId{j.id}, *v.placement);
    if (!run) return at_best;
    const double finish = static_cast<double>(times[g]) + *run * kUsPerS;
    if (!best.alternative || finish < best.finish_us) {
      best.alternative = true;
      best.start_us = times[g];
      best.finish_us = finish;
      best.placement = std::move(*v.placement);
    }
    return at_best;
  };
  auto beyond = [&](size_t g) {  // a start at group g cannot win any more
    const double bound = std::min(
        best.alternative ? std::min(best.finish_us, best.finish_now_us) : best.finish_now_us,
        static_cast<double>(limit));
    return static_cast<double>(times[g]) >= bound;
  };
  // Groups 0, 1, 3, 7, ... until the placement is the best possible; then a binary search
  // between the last two for the earliest group where it is. One trial state moves between
  // groups by releasing running jobs and taking them back (no copies).
  ClusterState trial = base;
  size_t released = 0;  // ends[0, released) are released in `trial`
  auto move_to = [&](size_t g) {
    for (; released < upto[g]; ++released) (void)trial.Release(AllocId::Job(ends[released].second));
    while (released > upto[g]) {
      --released;
      const Job* o = s_.Find(ends[released].second);
      if (o != nullptr && o->placement) {
        (void)AllocatePlacement(trial, AllocId::Job(o->id), *o->placement);
      }
    }
  };
  std::optional<size_t> below;  // the last group tried whose placement was not the best
  for (size_t g = 0; g < times.size() && attempts < s_.options_.wait_plan_attempts; g = 2 * g + 1) {
    if (beyond(g)) break;
    move_to(g);
    if (!evaluate(trial, g)) {
      below = g;
      continue;
    }
    if (!below) break;
    size_t lo = *below, hi = g;  // hi reaches the best placement, lo does not
    while (hi - lo > 1 && attempts < s_.options_.wait_plan_attempts) {
      const size_t mid = lo + (hi - lo) / 2;
      if (beyond(mid)) break;
      move_to(mid);
      (evaluate(trial, mid) ? hi : lo) = mid;
    }
    break;
  }
  best.wait = best.alternative && best.finish_us < best.finish_now_us &&
              best.finish_us <= static_cast<double>(limit);
  if (!best.alternative) best.finish_us = best.finish_now_us;
  return best;
}

std::string Lookahead::WaitWords(const Job& j, const WaitPlan& plan, const Placement& now_p,
                                 int64_t now_us) const {
  char ms[96];
  std::snprintf(ms, sizeof ms, "%.3f ms there against %.3f ms now", plan.placement.predicted_ms,
                now_p.predicted_ms);
  return "waiting for " + plan.placement.domain + " (free in " +
         Approx(SecondsOfUs(plan.start_us - now_us)) + ", at " +
         Seconds(plan.start_us, s_.options_.epoch_clock) + "): finishes " +
         Approx((plan.finish_now_us - plan.finish_us) / kUsPerS) +
         " earlier than starting now across " + now_p.domain + " (" + ms +
         "; waits only while it can still finish by " +
         Seconds(j.wait_finish_by_us, s_.options_.epoch_clock) + ")";
}

std::string Lookahead::SpreadNote(const WaitPlan& plan, const Placement& now_p) const {
  const std::string finish =
      Seconds(static_cast<int64_t>(plan.finish_now_us), s_.options_.epoch_clock);
  if (!plan.alternative) {
    return "; across " + now_p.domain + " now it finishes at ~" + finish +
           ", before any faster placement is expected free";
  }
  return "; across " + now_p.domain + " now it finishes at ~" + finish + ", " +
         Approx((plan.finish_us - plan.finish_now_us) / kUsPerS) + " before waiting for " +
         plan.placement.domain + " (free at " + Seconds(plan.start_us, s_.options_.epoch_clock) +
         ") would";
}

}  // namespace toposched::sched
