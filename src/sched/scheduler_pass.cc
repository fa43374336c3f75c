#include "sched/scheduler_pass.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <utility>

#include "core/time_units.h"
#include "job/job_state.h"

namespace toposched::sched {

namespace {

using internal::AllocatePlacement;
using internal::JobName;
using internal::kNever;
using internal::Seconds;
using job::JobState;

// Allocation keys (AllocId): a job's, a hold's, and the blocks on trial copies each in their own
// owner's space, so that a block can never meet a live hold (it did: the shadow reservation's
// −1 was hold 1's).
constexpr int64_t kShadowBlock = 1;  // the backfill shadow's reservation; its shared room above

// Holds the currently free GPUs of `parts` in `state` under `id` (so a placement on the result
// avoids them). GPUs held by someone else stay theirs; for a block (the shadow reservation), the
// room left on shared GPUs of `parts` is held too, under the next block numbers, so that no
// fractional job fills a GPU reserved for the head job.
void Block(ClusterState& state, const std::vector<NodeGpus>& parts, AllocId id) {
  std::vector<NodeGpus> free_parts;
  int64_t next_shadow = id.number() + 1;
  for (const NodeGpus& p : parts) {
    GpuMask m = p.gpus & state.FreeMask(p.node);
    if (!m.empty()) free_parts.push_back(NodeGpus{p.node, m});
    if (id.owner() != AllocId::Owner::kBlock) continue;
    for (GpuMask s = p.gpus & state.HeldMask(p.node); !s.empty();) {
      const int g = s.lowest();
      s.reset(g);
      const int room = state.Shared(p.node, g) ? 1000 - state.UsedMilli(p.node, g) : 0;
      if (room > 0) {
        (void)state.AllocateShared(AllocId::Block(next_shadow++), p.node, g, room);
      }
    }
  }
  if (!free_parts.empty()) (void)state.Allocate(id, free_parts);
}

// Adds a started job to the shadow state of a pass: whole GPUs blocked as they are, a
// fractional job's milli on its GPU (the rest of the GPU stays open to other fractional jobs).
void Shadow(ClusterState& shadow, const Placement& p, int64_t id) {
  const AllocId alloc = AllocId::Job(id);
  if (p.gpu_milli > 0) {
    if (!AllocatePlacement(shadow, alloc, p).ok()) Block(shadow, p.parts, alloc);
    return;
  }
  Block(shadow, p.parts, alloc);
}

}  // namespace

StatusOr<std::vector<JobId>> SchedulingPass::Run() {
  s_.Accrue(now_us_);
  CompactPending();
  shares_ = s_.ActiveWeights();
  BuildOrder();
  while (Job* j = NextJob()) {
    ASSIGN_OR_RETURN(const bool go_on, Consider(*j));
    if (!go_on) break;
  }
  RETURN_IF_ERROR(Finish());
  return started_;
}

// The pending list may hold jobs that left PENDING since (or were listed twice): compact.
void SchedulingPass::CompactPending() {
  for (Job* j : s_.pending_list_) {
    if (j->record.state() == JobState::kPending && j->listed) {
      pending_.push_back(j);
      j->listed = false;  // marks it taken; set again below
    } else {
      j->listed = false;
    }
  }
  for (Job* j : pending_) j->listed = true;
  s_.pending_list_ = pending_;
}

// The order: jobs are grouped in buckets of equal (priority, user, queue), each sorted by
// (submit, id); the penalty depends on user and queue only, so the next job is the head of
// the best bucket. The buckets sit in a heap; a start changes the penalty of the buckets of
// its user or queue only, and the heap is rebuilt over the buckets (few), not the jobs.
// Cost per pass: O(P log P) for the sort plus O(B) per start, B = buckets.
void SchedulingPass::BuildOrder() {
  usage_ = s_.CurrentUsage();
  links_ = s_.RunningLinks();
  links_ptr_ = links_ ? &*links_ : nullptr;
  {
    std::map<std::tuple<int, int, int>, size_t> index;
    for (Job* j : pending_) {
      auto key = std::make_tuple(j->spec.priority, j->user_id, j->queue_id);
      auto [it, added] = index.emplace(key, buckets_.size());
      if (added) {
        buckets_.emplace_back();
        buckets_.back().priority = j->spec.priority;
        buckets_.back().user = &j->spec.user;
        buckets_.back().queue = &j->spec.queue;
      }
      buckets_[it->second].jobs.push_back(Queued{j->record.submit_time_us(), j->id, j});
    }
  }
  for (Bucket& b : buckets_) {
    std::sort(b.jobs.begin(), b.jobs.end(), [](const Queued& x, const Queued& y) {
      return x.submit_us != y.submit_us ? x.submit_us < y.submit_us : x.id < y.id;
    });
    b.penalty = s_.Penalty(*b.jobs[0].job, usage_, shares_);
  }
  for (size_t i = 0; i < buckets_.size(); ++i) heap_.push_back(i);
  std::make_heap(heap_.begin(), heap_.end(), [this](size_t x, size_t y) { return After(x, y); });
  const size_t shapes = s_.shape_ids_.size();
  no_fit_.assign(shapes, std::string());
  no_fit_known_.assign(shapes, 0);
  no_fit_shadow_.assign(shapes, 0);
  behind_reason_.assign(shapes, nullptr);
}

// Bucket x's head sorts after bucket y's head.
bool SchedulingPass::After(size_t x, size_t y) const {
  const Bucket& a = buckets_[x];
  const Bucket& b = buckets_[y];
  if (a.priority != b.priority) return a.priority < b.priority;
  if (a.penalty != b.penalty) return a.penalty > b.penalty;
  const Queued& ja = a.jobs[a.next];
  const Queued& jb = b.jobs[b.next];
  if (ja.submit_us != jb.submit_us) return ja.submit_us > jb.submit_us;
  return ja.id > jb.id;
}

// Re-keys the buckets of a user or queue (all when both are null) and restores the heap.
void SchedulingPass::Rekey(const std::string* user, const std::string* queue) {
  for (size_t i : heap_) {
    Bucket& b = buckets_[i];
    if ((user == nullptr && queue == nullptr) || (user && *b.user == *user) ||
        (queue && *b.queue == *queue)) {
      b.penalty = s_.Penalty(*b.jobs[b.next].job, usage_, shares_);
    }
  }
  std::make_heap(heap_.begin(), heap_.end(), [this](size_t x, size_t y) { return After(x, y); });
}

// The head of the best bucket, taken out of the order; nullptr when none is left.
SchedulingPass::Job* SchedulingPass::NextJob() {
  if (heap_.empty()) return nullptr;
  auto after = [this](size_t x, size_t y) { return After(x, y); };
  std::pop_heap(heap_.begin(), heap_.end(), after);
  Bucket& bucket = buckets_[heap_.back()];
  Job* j = bucket.jobs[bucket.next++].job;
  if (bucket.next < bucket.jobs.size()) {
    std::push_heap(heap_.begin(), heap_.end(), after);
  } else {
    heap_.pop_back();
  }
  return j;
}

// One job's turn: limits, its verdict now, then a place at the head (no reservation yet) or
// behind the reservation (backfill only).
StatusOr<bool> SchedulingPass::Consider(Job& j) {
  if (std::string lim = s_.LimitReason(j, usage_); !lim.empty()) {
    j.pending_reason = Scheduler::Words(lim);
    return true;
  }
  const job::JobSpec& spec = s_.PlacementSpec(j, now_us_);
  Turn t(j, spec);
  t.held = &spec != &j.spec;
  t.shape = t.held ? j.local_shape_id : j.shape_id;
  t.now_v = VerdictNow(t);
  if (t.now_v.kind == VerdictKind::kUnresolvable) {
    j.pending_reason = Scheduler::Words("unresolvable: " + t.now_v.Explain());
    return true;
  }
  t.gpus = std::to_string(j.spec.total_gpus) + " GPUs";
  if (!res_) return PlaceAtHead(t);
  RETURN_IF_ERROR(PlaceBehindReservation(t));
  return true;
}

// The verdict on the live state, from the no-fit cache where the shape is known not to fit.
Verdict SchedulingPass::VerdictNow(const Turn& t) {
  Verdict now_v;
  if (no_fit_known_[t.shape]) {
    now_v.kind = VerdictKind::kUnschedulable;
    if (!res_) now_v.reasons = {no_fit_[t.shape]};  // behind a reservation: behind_reason_
    return now_v;
  }
  now_v = s_.placer_->Place(s_.state_, t.spec, links_ptr_, HideFactor(t));
  if (t.held && now_v.kind == VerdictKind::kUnschedulable) {
    now_v.reasons.insert(
        now_v.reasons.begin(),
        "held to one " + t.spec.constraints.job.level + " while it waits for locality (up to " +
            std::to_string(s_.options_.locality_wait_us / kUsPerS) + " s after submission)");
  }
  if (now_v.kind == VerdictKind::kUnschedulable) {
    no_fit_known_[t.shape] = 1;
    no_fit_[t.shape] = now_v.Explain();
  }
  return now_v;
}

void SchedulingPass::CountStart(const Job& started) {
  usage_.user_gpus[started.spec.user] += started.spec.total_gpus;
  usage_.queue_gpus[started.spec.queue] += started.spec.total_gpus;
  started_.push_back(JobId{started.id});
  if (links_ && started.placement) {
    AddToLinks(*links_, *started.placement, s_.DpHideFactor(started.id));
  }
  if (s_.options_.fair_share_half_life_s <= 0) Rekey(&started.spec.user, &started.spec.queue);
}

// After GPUs were freed by shrinking or preempting others: fresh usage, order and caches.
void SchedulingPass::AfterRelease(const Job& j) {
  started_.push_back(JobId{j.id});
  usage_ = s_.CurrentUsage();
  if (links_) {
    links_ = s_.RunningLinks();
    links_ptr_ = &*links_;
  }
  Rekey(nullptr, nullptr);
  std::fill(no_fit_known_.begin(), no_fit_known_.end(), 0);
}

// Wait-or-spread: true when the job waits for a faster placement (its reason set, `t.plan`
// kept), else false with `t.note` the numbers that decided to start now on `p` ("" when none).
bool SchedulingPass::Waits(Turn& t, const Placement& p, const ClusterState& base) {
  Job& j = t.j;
  t.note.clear();
  t.plan = t.held ? std::nullopt : Lookahead(s_).PlanWait(j, t.spec, p, base, now_us_);
  if (!t.plan) return false;
  if (!t.plan->wait) {
    t.note = Lookahead(s_).SpreadNote(*t.plan, p);
    return false;
  }
  if (j.wait_finish_by_us < 0) {
    j.wait_finish_by_us = static_cast<int64_t>(std::ceil(t.plan->finish_now_us));
  }
  j.wait_start_us = t.plan->start_us;
  waiting_ = true;
  j.pending_reason = Scheduler::Words(Lookahead(s_).WaitWords(j, *t.plan, p, now_us_));
  return true;
}

// Sets the pass's reservation and its shadow: state_ with the reserved free GPUs blocked.
void SchedulingPass::Reserve(const Lookahead::Reservation& r) {
  res_ = r;
  shadow_ = s_.state_;
  Block(*shadow_, res_->parts, AllocId::Block(kShadowBlock));
}

// No reservation yet: start it, let it wait (holding the reservation), shrink or preempt
// others for it, or make it the reservation (with backfill; without, the pass stops).
StatusOr<bool> SchedulingPass::PlaceAtHead(Turn& t) {
  Job& j = t.j;
  const Scheduler::Options& options = s_.options_;
  if (t.now_v.fit()) {
    if (Waits(t, *t.now_v.placement, s_.state_)) {
      Reserve(Lookahead::Reservation{j.id, t.plan->start_us, t.plan->placement.parts});
      return true;
    }
    const std::string why =
        "scheduled (" + t.gpus + t.now_v.placement->contention_note + t.note + ")";
    RETURN_IF_ERROR(s_.Start(j, std::move(*t.now_v.placement), now_us_, why));
    CountStart(j);
    return true;
  }
  if (j.spec.priority >= options.preempt_priority_threshold && options.elastic_shrink) {
    ASSIGN_OR_RETURN(bool ok, s_.TryShrinkOthers(j, now_us_));
    if (ok) {
      AfterRelease(j);
      return true;
    }
  }
  if (j.spec.priority >= options.preempt_priority_threshold) {
    ASSIGN_OR_RETURN(bool ok, Preemption(s_).TryStart(j, now_us_));
    if (ok) {
      AfterRelease(j);
      return true;
    }
  }
  waiting_ = true;
  if (!options.backfill) {
    j.pending_reason = Scheduler::Words("waiting for resources: " + t.now_v.Explain());
    return false;  // strict order: nobody passes the head
  }
  Reserve(Lookahead(s_).MakeReservation(j, t.spec, now_us_));
  j.pending_reason = Scheduler::Words(
      "head of queue, reserved to start at " + Seconds(res_->start_us, options.epoch_clock) +
      (res_->estimated ? " (by the running jobs' estimated ends)" : "") + ": " + t.now_v.Explain());
  return true;
}

// Behind the reservation: backfill only, when the job ends before the reservation's start or
// fits clear of its GPUs.
Status SchedulingPass::PlaceBehindReservation(Turn& t) {
  Job& j = t.j;
  const bool epoch = s_.options_.epoch_clock;
  if (!t.now_v.fit()) {
    waiting_ = true;
    // The same words for every job of a shape: built once per pass, shared.
    if (!behind_reason_[t.shape]) {
      behind_reason_[t.shape] = std::make_shared<const std::string>(
          "waiting for resources (behind the reservation of " + JobName(res_->job_id) + " at " +
          Seconds(res_->start_us, epoch) + "): " + t.now_v.Explain());
    }
    j.pending_reason = behind_reason_[t.shape];
    return OkStatus();
  }
  t.end_us = Lookahead(s_).BackfillEndUs(j, *t.now_v.placement, now_us_, res_->estimated,
                                         &t.end_estimated);
  const bool ends_before = res_->start_us != kNever && t.end_us && *t.end_us <= res_->start_us;
  if (ends_before && Waits(t, *t.now_v.placement, *shadow_)) return OkStatus();
  if (!ends_before) return BackfillBeside(t);
  const std::string quiet = t.now_v.placement->contention_note;
  RETURN_IF_ERROR(s_.Start(
      j, std::move(*t.now_v.placement), now_us_,
      "backfilled (" + t.gpus + quiet +
          (t.end_estimated
               ? ", expected to end at " + Seconds(*t.end_us, epoch) + " (its estimated run time)"
               : ", ends by " + Seconds(*t.end_us, epoch)) +
          " before the reservation of " + JobName(res_->job_id) + " at " +
          Seconds(res_->start_us, epoch) + t.note + ")"));
  Shadow(*shadow_, *j.placement, j.id);
  CountStart(j);
  return OkStatus();
}

// Behind the reservation, running past its start: only a placement clear of the reserved GPUs
// (on the shadow state).
Status SchedulingPass::BackfillBeside(Turn& t) {
  Job& j = t.j;
  Verdict side;
  if (!no_fit_shadow_[t.shape])
    side = s_.placer_->Place(*shadow_, t.spec, links_ptr_, HideFactor(t));
  if (!side.fit()) no_fit_shadow_[t.shape] = 1;
  if (side.fit() && Waits(t, *side.placement, *shadow_)) return OkStatus();
  if (side.fit()) {
    const std::string quiet = side.placement->contention_note;
    RETURN_IF_ERROR(s_.Start(j, std::move(*side.placement), now_us_,
                             "backfilled (" + t.gpus + quiet + ", clear of the GPUs reserved for " +
                                 JobName(res_->job_id) + t.note + ")"));
    Shadow(*shadow_, *j.placement, j.id);
    CountStart(j);
    return OkStatus();
  }
  waiting_ = true;
  j.pending_reason = Scheduler::Words(
      "would delay the reservation of " + JobName(res_->job_id) + " at " +
      Seconds(res_->start_us, s_.options_.epoch_clock) + ": fits only on its reserved GPUs and " +
      (t.end_estimated ? "its estimated run ends at " +
                             Seconds(*t.end_us, s_.options_.epoch_clock) + ", after it"
                       : "its limit " +
                             (j.spec.time_limit_s > 0 ? job::FormatDuration(j.spec.time_limit_s)
                                                      : std::string("(none)")) +
                             " ends after it"));
  return OkStatus();
}

// The tail of a pass: the no-backfill reasons, elastic growth and consolidation (both only when
// nobody was left waiting for resources).
Status SchedulingPass::Finish() {
  if (!s_.options_.backfill) {
    for (Job* j : pending_) {
      if (j->record.state() != JobState::kPending) continue;
      if (!j->pending_reason || j->pending_reason->rfind("submitted", 0) == 0) {
        j->pending_reason = Scheduler::Words("waiting behind a higher-ordered job (no backfill)");
      }
    }
  }
  if (s_.options_.elastic_grow && !waiting_) {
    std::vector<Job*> growable;
    for (const auto& [id, j_ptr] : s_.Running()) {
      Job& j = *j_ptr;
      if (j.record.state() == JobState::kRunning && j.spec.elastic &&
          j.spec.replicas < j.spec.elastic->max_replicas) {
        growable.push_back(&j);
      }
    }
    std::stable_sort(growable.begin(), growable.end(), [](const Job* a, const Job* b) {
      return a->spec.priority > b->spec.priority;
    });
    for (Job* j : growable) RETURN_IF_ERROR(s_.TryGrow(*j, now_us_).status());
  }
  if (!waiting_) RETURN_IF_ERROR(s_.Consolidate(now_us_));
  return OkStatus();
}

StatusOr<std::vector<JobId>> Scheduler::Schedule(int64_t now_us) {
  SchedulingPass pass(*this, now_us);
  return pass.Run();
}

}  // namespace toposched::sched
