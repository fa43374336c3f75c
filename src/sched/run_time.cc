#include "sched/run_time.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/time_units.h"

namespace toposched::sched {

double CommStretch(double comm_share, double predicted_ms, double best_possible_ms) {
  if (!(best_possible_ms > 0) || !std::isfinite(predicted_ms)) return 1.0;
  return (1.0 - comm_share) + comm_share * predicted_ms / best_possible_ms;
}

Status DeclaredRunTimes::Declare(JobId id, double run_s, double comm_share) {
  if (!(run_s > 0 && run_s <= 1e9)) {
    return InvalidArgumentError("run time of job " + std::to_string(id.value) +
                                " must be in (0, 1e9] s");
  }
  if (!(comm_share >= 0 && comm_share <= 1)) {
    return InvalidArgumentError("communication share of job " + std::to_string(id.value) +
                                " must be in [0, 1]");
  }
  jobs_[id] = Declared{run_s, comm_share};
  return OkStatus();
}

Status DeclaredRunTimes::DeclareHideFactor(JobId id, double factor) {
  if (!(factor > 0 && factor <= 1e6)) {
    return InvalidArgumentError("DP hide factor of job " + std::to_string(id.value) +
                                " must be in (0, 1e6]");
  }
  hide_factor_[id] = factor;
  return OkStatus();
}

std::optional<double> DeclaredRunTimes::DpHideFactor(JobId id) const {
  auto it = hide_factor_.find(id);
  if (it == hide_factor_.end()) return std::nullopt;
  return it->second;
}

std::optional<double> DeclaredRunTimes::RunSeconds(JobId id, const Placement& p) const {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return std::nullopt;
  return it->second.run_s * CommStretch(it->second.comm_share, p.predicted_ms, p.best_possible_ms);
}

std::optional<int64_t> ExpectedEndFromStart(const Scheduler& scheduler,
                                            const RunTimeEstimator& estimator, JobId id,
                                            int64_t now_us) {
  const Placement* p = scheduler.PlacementOf(id);
  if (p == nullptr) return std::nullopt;
  // Moved at a checkpoint: the move's own estimate (restart and redone work included).
  if (const Scheduler::Move* m = scheduler.LastMove(id)) {
    return std::max(now_us, m->expected_end_us);
  }
  const std::optional<double> run = estimator.RunSeconds(id, *p);
  if (!run) return std::nullopt;
  return std::max(now_us, p->decision_us + static_cast<int64_t>(std::llround(*run * kUsPerS)));
}

std::optional<int64_t> DeclaredRunTimes::ExpectedEndUs(JobId id, int64_t now_us) const {
  if (scheduler_ == nullptr) return std::nullopt;
  return ExpectedEndFromStart(*scheduler_, *this, id, now_us);
}

std::optional<double> SpecRunTimes::RunSeconds(JobId id, const Placement& p) const {
  const job::JobSpec* spec = scheduler_.Spec(id);
  if (spec == nullptr || !spec->estimate) return std::nullopt;
  return static_cast<double>(spec->estimate->run_s) *
         CommStretch(spec->estimate->comm_share, p.predicted_ms, p.best_possible_ms);
}

std::optional<int64_t> SpecRunTimes::ExpectedEndUs(JobId id, int64_t now_us) const {
  std::optional<int64_t> end = ExpectedEndFromStart(scheduler_, *this, id, now_us);
  // A declared time limit ends it by then at the latest.
  const job::JobSpec* spec = scheduler_.Spec(id);
  const std::optional<int64_t> started = scheduler_.StartedUs(id);
  if (end && spec != nullptr && spec->time_limit_s > 0 && started) {
    end = std::max(now_us, std::min(*end, *started + spec->time_limit_s * 1'000'000));
  }
  return end;
}

}  // namespace toposched::sched
