// Calibrated confidence: what a cause's confidence says is measured, not chosen. Each rule has a
// strength, written beside it from the kind of its evidence (a direct record of the fault by the
// driver, the kernel or a scheduler is strong; a consequence seen from another rank, or a
// correct set-up read as health, is weak). Its confidence is that strength updated by how often
// the rule was right when it named a log's top cause on the development set of the corpus
// (data/diagnosis-corpus, set=dev; never the measure set):
//   confidence = (right + kPriorWeight * strength) / (led + kPriorWeight)
// a Beta prior of weight kPriorWeight centred on the strength. A rule the development set never
// saw lead keeps its strength.
#include <algorithm>
#include <string_view>

#include "diag/rules_internal.h"

namespace toposched::diag::internal {

namespace {

// How many logs the strength counts as: 4, so that a rule that led on 4 development logs weighs
// its record and its evidence's kind equally, and one or two logs cannot move it far.
constexpr double kPriorWeight = 4;

struct RuleRecord {
  std::string_view rule;  // Cause::rule
  int led;                // development logs whose top cause it named
  int right;              // of those, the ones the corpus's label agrees with
};

// From `python3 scripts/diagnose-corpus.py --set dev --rules` (the rules' strengths as in this
// commit; rerun and copy its table when a rule or its strength changes).
constexpr RuleRecord kDevRecord[] = {
    {"application_error:collective_mismatch", 1, 1},
    {"application_error:cuda_illegal_access", 3, 2},
    {"application_error:nccl_invalid_usage", 1, 1},
    {"application_error:python_exception", 2, 2},
    {"application_error:python_traceback", 2, 1},
    {"cancelled:slurm_cancelled", 5, 5},
    {"cancelled:user_interrupt", 3, 3},
    {"evicted:eviction_pressure", 2, 2},
    {"evicted:k8s_evicted", 5, 5},
    {"gpu_fault:cuda_unknown_error", 1, 1},
    {"gpu_fault:ecc_uncorrectable", 2, 2},
    {"gpu_fault:fallen_off_bus", 1, 1},
    {"gpu_fault:gpu_init_failed", 1, 1},
    {"gpu_fault:nccl_nvls_failed", 1, 1},
    {"gpu_fault:xid", 1, 1},
    {"gpu_oom:cuda_oom", 6, 6},
    {"healthy:nccl_channel_ib", 23, 19},
    {"healthy:run_started", 4, 4},
    {"host_oom:killed_by_signal", 2, 2},
    {"host_oom:slurm_oom", 2, 2},
    {"nccl_degraded:nccl_feature_ignored", 1, 1},
    {"nccl_degraded:nccl_gdr_disabled", 1, 1},
    {"nccl_degraded:nccl_nvls_unavailable", 1, 1},
    {"nccl_degraded:nccl_topo_fallback", 1, 1},
    {"nccl_degraded:nccl_topo_unreadable", 1, 1},
    {"nccl_timeout:killed_by_signal", 1, 1},
    {"nccl_timeout:nccl_watchdog_timeout", 11, 11},
    {"nccl_transport_fallback:nccl_network_socket", 8, 6},
    {"network_error:ib_async_event", 3, 3},
    {"network_error:nccl_ib_completion_error", 1, 1},
    {"node_failure:node_unhealthy", 1, 1},
    {"peer_failure:nccl_connection_closed", 1, 1},
    {"peer_failure:peer_gone", 5, 4},
    {"peer_failure:rendezvous_closed", 1, 1},
    {"preempted:preempt_notice", 4, 4},
    {"preempted:sched_preempted", 2, 2},
    {"rendezvous_failure:nccl_bootstrap_failed", 1, 1},
    {"rendezvous_failure:rendezvous_error", 7, 7},
    {"timeout:killed_by_signal", 1, 1},
    {"timeout:sched_time_limit", 4, 4},
    {"unschedulable:pod_pending", 1, 1},
    {"unschedulable:queued_no_capacity", 3, 3},
};

}  // namespace

double CalibratedConfidence(const Cause& c) {
  for (const RuleRecord& r : kDevRecord) {
    if (r.rule == c.rule) {
      return (r.right + kPriorWeight * c.confidence) / (r.led + kPriorWeight);
    }
  }
  return c.confidence;
}

void Calibrate(std::vector<Cause>& ranked) {
  for (Cause& c : ranked) c.confidence = CalibratedConfidence(c);
  // The order is the rules' (a cause that explains another first): no cause below another is
  // shown more confident than it.
  for (size_t i = 1; i < ranked.size(); ++i) {
    ranked[i].confidence = std::min(ranked[i].confidence, ranked[i - 1].confidence);
  }
}

}  // namespace toposched::diag::internal
