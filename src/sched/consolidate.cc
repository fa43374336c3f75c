// Consolidation at checkpoints (SchedulerOptions::consolidate): a running job that checkpoints
// is moved to a faster placement when the estimates say it finishes sooner there, restart and
// redone work included.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/time_units.h"
#include "sched/scheduler.h"

namespace toposched::sched {

namespace {

std::string Num(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

}  // namespace

const Scheduler::Move* Scheduler::LastMove(JobId id) const {
  const Job* j = Find(id);
  if (j == nullptr || j->last_move < 0) return nullptr;
  return &moves_[static_cast<size_t>(j->last_move)];
}

Status Scheduler::Consolidate(int64_t now_us) {
  if (!options_.consolidate || estimator_ == nullptr || options_.max_moves_per_job == 0) {
    return OkStatus();
  }
  int recent = 0;
  for (auto it = moves_.rbegin(); it != moves_.rend() && it->at_us > now_us - kUsPerHour; ++it) {
    ++recent;
  }
  if (recent >= options_.max_moves_per_hour) return OkStatus();

  // Jobs at a new checkpoint since they were last looked at, slower than their best: the most
  // slowed first.
  std::vector<Job*> candidates;
  for (const auto& [id, j_ptr] : Running()) {
    Job& j = *j_ptr;
    const job::JobSpec& s = j.spec;
    if (j.record.state() != job::JobState::kRunning || !j.placement ||
        s.checkpoint_interval_s <= 0 || s.Fractional() || s.elastic ||
        j.moves >= options_.max_moves_per_job || now_us < j.checkpoint_origin_us) {
      continue;
    }
    const int64_t k = (now_us - j.checkpoint_origin_us) / (s.checkpoint_interval_s * kUsPerS);
    if (k < 1 || k == j.considered_checkpoint) continue;
    if (!(j.placement->predicted_ms > j.placement->best_possible_ms * (1 + 1e-6))) continue;
    candidates.push_back(&j);
  }
  std::stable_sort(candidates.begin(), candidates.end(), [](const Job* a, const Job* b) {
    return a->placement->predicted_ms / std::max(a->placement->best_possible_ms, 1e-12) >
           b->placement->predicted_ms / std::max(b->placement->best_possible_ms, 1e-12);
  });

  for (Job* jp : candidates) {
    if (recent >= options_.max_moves_per_hour) break;
    Job& j = *jp;
    const job::JobSpec& s = j.spec;
    // Considered at this checkpoint (a job the hourly bound leaves out waits for its next).
    j.considered_checkpoint =
        (now_us - j.checkpoint_origin_us) / (s.checkpoint_interval_s * kUsPerS);
    ClusterState trial = state_;
    RETURN_IF_ERROR(trial.Release(AllocId::Job(j.id)));
    Verdict v = placer_->Place(trial, s);
    if (!v.fit() || !(v.placement->predicted_ms < j.placement->predicted_ms * (1 - 1e-6))) continue;
    const std::optional<int64_t> end = estimator_->ExpectedEndUs(JobId{j.id}, now_us);
    const std::optional<double> here = estimator_->RunSeconds(JobId{j.id}, *j.placement);
    const std::optional<double> there = estimator_->RunSeconds(JobId{j.id}, *v.placement);
    if (!end || !here || !there || !(*here > 0)) continue;
    Move m;
    m.job = JobId{j.id};
    m.at_us = now_us;
    m.before_ms = j.placement->predicted_ms;
    m.after_ms = v.placement->predicted_ms;
    m.left_s = SecondsOfUs(*end - now_us);
    const int64_t interval_us = s.checkpoint_interval_s * kUsPerS;
    m.lost_s = SecondsOfUs((now_us - j.checkpoint_origin_us) % interval_us);
    m.restart_s = static_cast<double>(s.restart_cost_s);
    // What is left, and the work since the checkpoint, at the new placement's speed.
    const double there_s = (m.left_s + m.lost_s) * (*there / *here);
    m.gain_s = m.left_s - (m.restart_s + there_s);
    if (!(m.gain_s > 0)) continue;
    m.expected_end_us = now_us + static_cast<int64_t>(std::ceil((m.restart_s + there_s) * kUsPerS));

    const std::vector<NodeGpus> old_parts = j.placement->parts;
    RETURN_IF_ERROR(state_.Resize(AllocId::Job(j.id), v.placement->parts));
    const std::string why =
        "moved at a checkpoint to " + v.placement->domain + ": predicted " +
        Num("%.3f", m.before_ms) + " -> " + Num("%.3f", m.after_ms) + " ms per step; finishes ~" +
        Num("%.0f", m.gain_s) + " s earlier (" + Num("%.0f", m.left_s) + " s left where it ran; " +
        Num("%.0f", there_s) + " s on the new placement with the " + Num("%.0f", m.lost_s) +
        " s since its checkpoint redone, after a restart of " + Num("%.0f", m.restart_s) +
        " s); move " + std::to_string(j.moves + 1) + " of at most " +
        std::to_string(options_.max_moves_per_job);
    Status st = j.record.Note(now_us, why);
    Sync(j);
    if (!st.ok()) {
      (void)state_.Resize(AllocId::Job(j.id), old_parts);  // the job stays where it ran
      return st;
    }
    v.placement->decision_us = now_us;
    j.placement = std::move(*v.placement);
    j.checkpoint_origin_us = now_us + static_cast<int64_t>(s.restart_cost_s) * kUsPerS;
    j.considered_checkpoint = -1;
    ++j.moves;
    j.last_move = static_cast<int64_t>(moves_.size());
    moves_.push_back(m);
    ++recent;
  }
  return OkStatus();
}

}  // namespace toposched::sched
