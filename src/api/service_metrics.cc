// The daemon's Prometheus text (GET /metrics): queue lengths, jobs per state, pass latency,
// GPUs by state, pod-held GPUs, fragmentation, predicted communication time, the store's
// position. Split from service.cc: reads only, under the service's mutex.
#include <cstdio>
#include <iterator>
#include <map>
#include <string>

#include "api/service.h"
#include "diag/cause.h"

namespace toposched::api {

namespace {

using job::JobState;

std::string Escape(const std::string& s) {  // Prometheus label value
  std::string out;
  for (char c : s) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

}  // namespace

std::string Service::MetricsText() const {
  std::string o;
  auto line = [&o](const std::string& s) { o += s + "\n"; };
  auto num = [](double v) {
    char b[64];
    std::snprintf(b, sizeof b, "%.17g", v);
    return std::string(b);
  };
  std::lock_guard<std::mutex> lk(mu_);
  std::map<std::string, int> pending;
  for (const std::string& q : queues_) pending[q] = 0;
  std::map<std::string, int> by_state;
  for (int s = 0; s < job::kNumJobStates; ++s) by_state[job::JobStateName(JobState(s))] = 0;
  for (const auto& [id, ji] : jobs_) {
    const std::optional<JobState> st = sched_->State(JobId{id});
    if (!st) continue;
    ++by_state[job::JobStateName(*st)];
    if (*st == JobState::kPending) ++pending[ji.spec.queue];
  }
  line("# HELP toposched_queue_length Pending jobs per queue.");
  line("# TYPE toposched_queue_length gauge");
  for (const auto& [q, n] : pending) {
    line("toposched_queue_length{queue=\"" + Escape(q) + "\"} " + std::to_string(n));
  }
  line("# HELP toposched_jobs Jobs per state.");
  line("# TYPE toposched_jobs gauge");
  for (const auto& [s, n] : by_state) {
    line("toposched_jobs{state=\"" + s + "\"} " + std::to_string(n));
  }
  // Every interruption in the event log (the whole history, replay included), by the cause
  // category its event gives (docs/diagnose.md); every category is listed, 0 included.
  SyncCategoriesLocked();
  line(
      "# HELP toposched_job_interruptions_total Running jobs stopped short of their normal end, "
      "by cause category.");
  line("# TYPE toposched_job_interruptions_total counter");
  for (int c = 0; c < diag::kCategoryCount; ++c) {
    line(std::string("toposched_job_interruptions_total{category=\"") +
         diag::CategoryName(static_cast<diag::Category>(c)) + "\"} " +
         std::to_string(interruptions_[static_cast<size_t>(c)]));
  }
  line("# HELP toposched_placements_total Jobs started by scheduling passes (the whole history).");
  line("# TYPE toposched_placements_total counter");
  line("toposched_placements_total " + std::to_string(metrics_.placements));
  line("# HELP toposched_decision_latency_seconds Duration of one scheduling pass.");
  line("# TYPE toposched_decision_latency_seconds histogram");
  int64_t cum = 0;
  for (size_t b = 0; b < metrics_.latency_bounds_s.size(); ++b) {
    cum += metrics_.latency_buckets[b];
    line("toposched_decision_latency_seconds_bucket{le=\"" + num(metrics_.latency_bounds_s[b]) +
         "\"} " + std::to_string(cum));
  }
  cum += metrics_.latency_buckets.back();
  line("toposched_decision_latency_seconds_bucket{le=\"+Inf\"} " + std::to_string(cum));
  line("toposched_decision_latency_seconds_sum " + num(metrics_.latency_sum_s));
  line("toposched_decision_latency_seconds_count " + std::to_string(metrics_.latency_count));

  const sched::ClusterState& cs = sched_->cluster_state();
  // Each GPU in exactly one state: allocated (held, whatever its health), unhealthy (not held;
  // the GPU or its node unhealthy), drained (not held, healthy, on a drained node), free.
  int total = 0, allocated = 0, free = 0, unhealthy = 0, drained = 0, free_partial = 0;
  for (size_t n = 0; n < cluster_->nodes.size(); ++n) {
    const int node = static_cast<int>(n);
    const int g = cs.GpuCount(node);
    const int f = cs.FreeMask(node).count();
    total += g;
    allocated += cs.HeldMask(node).count();
    free += f;
    if (f < g) free_partial += f;
    for (int i = 0; i < g; ++i) {
      if (cs.HeldMask(node).test(i) || cs.FreeMask(node).test(i)) continue;
      if (cs.NodeHealth(node) == topo::Health::kUnhealthy ||
          cs.GpuHealth(node, i) == topo::Health::kUnhealthy) {
        ++unhealthy;
      } else if (cs.NodeDrained(node)) {
        ++drained;
      }
    }
  }
  line(
      "# HELP toposched_gpus GPUs by state, each in one: allocated, unhealthy (not allocated), "
      "drained (not allocated, healthy, node drained), free; and the total.");
  line("# TYPE toposched_gpus gauge");
  line("toposched_gpus{state=\"allocated\"} " + std::to_string(allocated));
  line("toposched_gpus{state=\"free\"} " + std::to_string(free));
  line("toposched_gpus{state=\"unhealthy\"} " + std::to_string(unhealthy));
  line("toposched_gpus{state=\"drained\"} " + std::to_string(drained));
  line("toposched_gpus{state=\"total\"} " + std::to_string(total));
  int held_by_pods = 0;
  for (const auto& [id, parts] : sched_->Holds()) {
    for (const sched::NodeGpus& p : parts) held_by_pods += p.gpus.count();
  }
  for (const auto& [id, info] : jobs_) {
    if (info.pod_group.empty()) continue;
    if (const sched::Placement* p = sched_->PlacementOf(JobId{id})) {
      for (const sched::NodeGpus& part : p->parts) held_by_pods += part.gpus.count();
    }
  }
  line(
      "# HELP toposched_k8s_pod_gpus GPUs held for Kubernetes pods: pod groups' running jobs, "
      "and reservations of earlier builds' records.");
  line("# TYPE toposched_k8s_pod_gpus gauge");
  line("toposched_k8s_pod_gpus " + std::to_string(held_by_pods));
  line("# HELP toposched_fragmentation_ratio Share of free GPUs on partly used nodes.");
  line("# TYPE toposched_fragmentation_ratio gauge");
  line("toposched_fragmentation_ratio " + num(free > 0 ? double(free_partial) / free : 0.0));
  line(
      "# HELP toposched_job_predicted_comm_ms Predicted communication time per step of a running "
      "job.");
  line("# TYPE toposched_job_predicted_comm_ms gauge");
  double sum_ms = 0;
  for (const auto& [id, ji] : jobs_) {
    const sched::Placement* p = sched_->PlacementOf(JobId{id});
    if (p == nullptr) continue;
    sum_ms += p->predicted_ms;
    line("toposched_job_predicted_comm_ms{job=\"job-" + std::to_string(id) + "\",name=\"" +
         Escape(ji.spec.name) + "\"} " + num(p->predicted_ms));
  }
  line(
      "# HELP toposched_running_predicted_comm_ms Sum of the running jobs' predicted "
      "communication time per step.");
  line("# TYPE toposched_running_predicted_comm_ms gauge");
  line("toposched_running_predicted_comm_ms " + num(sum_ms));
  line("# HELP toposched_store_applied_seq Inputs applied to the scheduler.");
  line("# TYPE toposched_store_applied_seq gauge");
  line("toposched_store_applied_seq " + std::to_string(applied_seq_));
  line("# HELP toposched_applied_seq The last input of the log applied to this scheduler.");
  line("# TYPE toposched_applied_seq gauge");
  line("toposched_applied_seq " + std::to_string(applied_seq_));
  std::lock_guard<std::mutex> qlk(qmu_);  // after mu_, as everywhere
  line("# HELP toposched_commit_seconds Time of one store append (a group of inputs).");
  line("# TYPE toposched_commit_seconds histogram");
  cum = 0;
  for (size_t b = 0; b < std::size(kCommitBoundsS); ++b) {
    cum += commit_buckets_[b];
    line("toposched_commit_seconds_bucket{le=\"" + num(kCommitBoundsS[b]) + "\"} " +
         std::to_string(cum));
  }
  cum += commit_buckets_.back();
  line("toposched_commit_seconds_bucket{le=\"+Inf\"} " + std::to_string(cum));
  line("toposched_commit_seconds_sum " + num(commit_sum_s_));
  line("toposched_commit_seconds_count " + std::to_string(commit_count_));
  return o;
}

}  // namespace toposched::api
