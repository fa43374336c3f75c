#include "diag/evidence.h"

#include "core/enum_names.h"

namespace toposched::diag {

namespace {

struct KindInfo {
  const char* name;
  Source source;
};

// Indexed by Kind; the static_assert below keeps it in step with the enum.
constexpr KindInfo kKinds[] = {
    {"nccl_net_ib", Source::kNccl},
    {"nccl_net_socket", Source::kNccl},
    {"nccl_network_socket", Source::kNccl},
    {"nccl_network_ib", Source::kNccl},
    {"nccl_channel_ib", Source::kNccl},
    {"nccl_channel_socket", Source::kNccl},
    {"nccl_channel_intra", Source::kNccl},
    {"nccl_ring_order", Source::kNccl},
    {"nccl_connected", Source::kNccl},
    {"nccl_nvls_available", Source::kNccl},
    {"nccl_ib_disabled", Source::kNccl},
    {"nccl_ib_no_device", Source::kNccl},
    {"nccl_ibverbs_missing", Source::kNccl},
    {"nccl_gdr_disabled", Source::kNccl},
    {"nccl_ib_completion_error", Source::kNccl},
    {"nccl_connection_closed", Source::kNccl},
    {"nccl_connection_reset", Source::kNccl},
    {"nccl_remote_error", Source::kNccl},
    {"nccl_connect_failed", Source::kNccl},
    {"nccl_cuda_oom", Source::kNccl},
    {"nccl_watchdog_timeout", Source::kNccl},
    {"xid", Source::kDriver},
    {"fallen_off_bus", Source::kDriver},
    {"ecc_uncorrectable", Source::kDriver},
    {"row_remap_pending", Source::kDriver},
    {"row_remap_failure", Source::kDriver},
    {"gpu_lost", Source::kDriver},
    {"gpu_diag_fail", Source::kDriver},
    {"pcie_link_limited", Source::kDriver},
    {"pcie_aer_error", Source::kDriver},
    {"nvlink_counters_clean", Source::kDriver},
    {"nvlink_errors", Source::kDriver},
    {"slurm_time_limit", Source::kSlurm},
    {"slurm_node_fail", Source::kSlurm},
    {"slurm_preempted", Source::kSlurm},
    {"slurm_oom", Source::kSlurm},
    {"slurm_pending", Source::kSlurm},
    {"slurm_nodes_unavailable", Source::kSlurm},
    {"k8s_oom_killed", Source::kKubernetes},
    {"k8s_exit_137", Source::kKubernetes},
    {"k8s_evicted", Source::kKubernetes},
    {"k8s_preempted", Source::kKubernetes},
    {"k8s_insufficient_gpu", Source::kKubernetes},
    {"k8s_gang_unschedulable", Source::kKubernetes},
    {"k8s_job_restarting", Source::kKubernetes},
    {"k8s_exit_code", Source::kKubernetes},
    {"k8s_node_not_ready", Source::kKubernetes},
    {"cuda_oom", Source::kPyTorch},
    {"child_failed", Source::kPyTorch},
    {"rendezvous_error", Source::kPyTorch},
    {"store_timeout", Source::kPyTorch},
    {"address_in_use", Source::kPyTorch},
    {"sched_time_limit", Source::kScheduler},
    {"sched_preempted", Source::kScheduler},
    {"sched_node_fail", Source::kScheduler},
    {"sched_gpu_fail", Source::kScheduler},
    {"sched_degraded", Source::kScheduler},
    {"sched_cancelled", Source::kScheduler},
    {"sched_pending", Source::kScheduler},
    {"sched_exit_cause", Source::kScheduler},
    {"killed_by_signal", Source::kProcess},
    {"kernel_oom_kill", Source::kDriver},
    {"python_exception", Source::kPyTorch},
    {"cuda_illegal_access", Source::kPyTorch},
    {"cuda_unknown_error", Source::kPyTorch},
    {"gpu_init_failed", Source::kDriver},
    {"nccl_invalid_usage", Source::kNccl},
    {"user_interrupt", Source::kProcess},
    {"slurm_cancelled", Source::kSlurm},
    {"preempt_notice", Source::kProcess},
    {"node_unhealthy", Source::kProcess},
    {"queued_no_capacity", Source::kKubernetes},
    {"eviction_pressure", Source::kKubernetes},
    {"training_progress", Source::kProcess},
    {"nccl_init_complete", Source::kNccl},
    {"rendezvous_closed", Source::kPyTorch},
    {"nccl_feature_ignored", Source::kNccl},
    {"c10d_socket_error", Source::kPyTorch},
    {"run_completed", Source::kProcess},
    {"ib_async_event", Source::kNccl},
    {"ib_verbs_failed", Source::kNccl},
    {"nic_link_down", Source::kDriver},
    {"peer_gone", Source::kPyTorch},
    {"run_started", Source::kProcess},
    {"nccl_single_node", Source::kNccl},
    {"nccl_nvls_unavailable", Source::kNccl},
    {"nccl_nvls_failed", Source::kNccl},
    {"nccl_plugin_missing", Source::kNccl},
    {"nccl_multi_node", Source::kNccl},
    {"rdma_provider_failed", Source::kNccl},
    {"nccl_topo_fallback", Source::kNccl},
    {"nccl_topo_unreadable", Source::kNccl},
    {"nccl_bootstrap_failed", Source::kNccl},
    {"collective_mismatch", Source::kPyTorch},
    {"cuda_hardware_error", Source::kPyTorch},
    {"host_alloc_failed", Source::kProcess},
    {"node_lost", Source::kProcess},
    {"python_traceback", Source::kPyTorch},
    {"worker_failed", Source::kProcess},
    {"pod_pending", Source::kKubernetes},
    {"admitted", Source::kKubernetes},
    {"job_deadline", Source::kProcess},
};
static_assert(sizeof(kKinds) / sizeof(kKinds[0]) == kKindCount, "kKinds out of step with Kind");

}  // namespace

namespace {

constexpr EnumName<Source> kSourceNames[] = {
    {Source::kNccl, "nccl"},       {Source::kDriver, "driver"},
    {Source::kSlurm, "slurm"},     {Source::kKubernetes, "kubernetes"},
    {Source::kPyTorch, "pytorch"}, {Source::kScheduler, "scheduler"},
    {Source::kProcess, "process"},
};

}  // namespace

const char* SourceName(Source s) { return NameOf(kSourceNames, s, "?"); }

const char* KindName(Kind k) { return kKinds[static_cast<int>(k)].name; }
Source KindSource(Kind k) { return kKinds[static_cast<int>(k)].source; }

std::string_view Evidence::Field(std::string_view key) const {
  for (const auto& [k, v] : fields) {
    if (k == key) return v;
  }
  return {};
}

Evidence* EvidenceSet::Add(Kind kind, const LineRef& line) {
  const int k = static_cast<int>(kind);
  ++counts_[k];
  if (examples_[k].size() >= static_cast<size_t>(kMaxExamples)) return nullptr;
  Evidence e;
  e.source = KindSource(kind);
  if (line.file != nullptr) e.file = *line.file;
  e.line = line.line;
  std::string_view t = line.text.substr(0, kMaxEvidenceText);
  e.text.reserve(t.size());
  for (char c : t) {
    // Control bytes (binary input, terminal escapes) would break the text and JSON reports.
    const auto u = static_cast<unsigned char>(c);
    e.text.push_back(u < 0x20 && c != '\t' ? '?' : c);
  }
  e.kind = kind;
  if (!line_time_.empty()) e.fields.emplace_back("line_time", line_time_);
  examples_[k].push_back(std::move(e));
  return &examples_[k].back();
}

void EvidenceSet::Merge(const EvidenceSet& later) {
  for (int k = 0; k < kKindCount; ++k) {
    counts_[k] += later.counts_[k];
    for (const Evidence& e : later.examples_[k]) {
      if (examples_[k].size() >= static_cast<size_t>(kMaxExamples)) break;
      examples_[k].push_back(e);
    }
  }
}

const Evidence* EvidenceSet::first(Kind k) const {
  const auto& ex = examples_[static_cast<int>(k)];
  return ex.empty() ? nullptr : &ex.front();
}

int64_t EvidenceSet::total() const {
  int64_t n = 0;
  for (int64_t c : counts_) n += c;
  return n;
}

}  // namespace toposched::diag
