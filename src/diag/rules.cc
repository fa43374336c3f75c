// The rule families for hardware, memory, scheduler and application causes, the healthy verdict,
// and the ranking (with the echo pass: a peer's reset is the consequence of a rank that died).
#include "diag/rules.h"

#include <algorithm>
#include <optional>
#include <string>

#include "diag/rules_internal.h"
#include "diag/xid.h"

namespace toposched::diag {

namespace internal {

Cause MakeCause(Category category, double confidence, std::string summary, std::string fix,
                const EvidenceSet& ev, std::initializer_list<Kind> kinds) {
  Cause c;
  c.category = category;
  c.confidence = confidence;
  c.summary = std::move(summary);
  c.fix = std::move(fix);
  c.rule = std::string(CategoryName(category)) + ":" + KindName(*kinds.begin());
  for (Kind k : kinds) {
    const auto& ex = ev.examples(k);
    for (size_t i = 0; i < ex.size() && i < 2 && c.evidence.size() < 6; ++i) {
      c.evidence.push_back(ex[i]);
    }
  }
  return c;
}

int64_t CountOf(const EvidenceSet& ev, std::initializer_list<Kind> kinds) {
  int64_t n = 0;
  for (Kind k : kinds) n += ev.count(k);
  return n;
}

}  // namespace internal

namespace {

using internal::CountOf;
using internal::MakeCause;

// A Xid's code, or the code of the earlier Xid it says it was caused by.
int XidCode(const Evidence& e) {
  const std::string_view prev = e.Field("previous");
  return std::atoi(std::string(prev.empty() ? e.Field("code") : prev).c_str());
}

// The worst Xid seen: a hardware one over one the application caused.
const Evidence* WorstXid(const EvidenceSet& ev) {
  const Evidence* worst = nullptr;
  for (const Evidence& e : ev.examples(Kind::kXid)) {
    const int code = XidCode(e);
    if (LookupXid(code).action != XidAction::kApplication) return &e;
    if (worst == nullptr) worst = &e;
  }
  return worst;
}

void HardwareRules(const EvidenceSet& ev, std::vector<Cause>& out) {
  const char* kDrain =
      "drain the node (toposched drain NODE), reset the GPU (nvidia-smi -r) or "
      "reboot, run dcgmi diag -r 3 before resuming; requeue the job elsewhere";
  if (const Evidence* x = WorstXid(ev)) {
    const int code = XidCode(*x);
    const XidInfo info = LookupXid(code);
    const bool app = info.action == XidAction::kApplication;
    const bool earlier = !x->Field("previous").empty();
    const std::string meaning =
        !earlier     ? std::string(x->Field("meaning"))
        : info.known ? std::string(info.meaning)
                     : std::string("a code not in the table, named by Xid ") +
                           std::string(x->Field("code")) + " as the error it followed";
    std::string s =
        "Xid " + std::to_string(code) + " on GPU " + std::string(x->Field("pci")) + ": " + meaning;
    out.push_back(MakeCause(app ? Category::kApplicationError : Category::kGpuFault,
                            app ? 0.55 : 0.95, s,
                            app ? std::string("restart the job; if it repeats on one node only, "
                                              "check that GPU")
                                : std::string(XidActionName(info.action)) + "; " + kDrain,
                            ev, {Kind::kXid, Kind::kFallenOffBus}));
  }
  if (ev.has(Kind::kFallenOffBus) || ev.has(Kind::kGpuLost)) {
    out.push_back(MakeCause(Category::kGpuFault, ev.has(Kind::kFallenOffBus) ? 0.96 : 0.88,
                            "a GPU stopped answering on PCIe (fallen off the bus / the driver "
                            "cannot reach it)",
                            kDrain, ev,
                            {Kind::kFallenOffBus, Kind::kGpuLost, Kind::kPcieAerError}));
  }
  const int64_t ecc = CountOf(ev, {Kind::kEccUncorrectable, Kind::kRowRemapFailure});
  if (ecc > 0) {
    out.push_back(MakeCause(Category::kGpuFault, 0.92, "uncorrectable GPU memory (ECC) errors",
                            kDrain, ev,
                            {Kind::kEccUncorrectable, Kind::kRowRemapFailure,
                             Kind::kRowRemapPending, Kind::kGpuDiagFail}));
  }
  if (ev.has(Kind::kRowRemapPending) || ev.has(Kind::kGpuDiagFail)) {
    out.push_back(MakeCause(Category::kGpuFault, 0.85,
                            "a GPU has memory row remappings pending or failed its diagnostics: it "
                            "needs a reset before the next job",
                            kDrain, ev, {Kind::kRowRemapPending, Kind::kGpuDiagFail}));
  }
  if (ev.has(Kind::kNvlinkErrors)) {
    out.push_back(MakeCause(Category::kGpuFault, 0.6, "nonzero NVLink error counters",
                            "watch whether the counters grow (nvidia-smi nvlink -e); drain the "
                            "node if they do",
                            ev, {Kind::kNvlinkErrors}));
  }
}

void MemoryRules(const EvidenceSet& ev, std::vector<Cause>& out) {
  if (ev.has(Kind::kCudaOom) || ev.has(Kind::kNcclCudaOom)) {
    out.push_back(MakeCause(Category::kGpuOom, 0.93,
                            "a rank ran out of GPU memory (CUDA out of memory)",
                            "reduce the per-GPU batch or sequence length, shard more (ZeRO/FSDP, "
                            "tensor parallelism), or use GPUs with more memory; the GPU's "
                            "capacity is in the topology (memory_mib)",
                            ev, {Kind::kCudaOom, Kind::kNcclCudaOom}));
  }
  if (ev.has(Kind::kSlurmOom) || ev.has(Kind::kK8sOomKilled)) {
    out.push_back(MakeCause(Category::kHostOom, 0.92,
                            "the job's host memory limit was hit: the cgroup OOM killer ended it",
                            "raise the memory request (sbatch --mem / resources.limits.memory) "
                            "or lower host memory use (data-loader workers, pinned buffers)",
                            ev, {Kind::kSlurmOom, Kind::kK8sOomKilled, Kind::kK8sExit137}));
  } else if (ev.has(Kind::kK8sExit137)) {
    out.push_back(MakeCause(Category::kHostOom, 0.75,
                            "the container exited with 137 (SIGKILL), most often the OOM killer",
                            "check the container's memory limit and raise it", ev,
                            {Kind::kK8sExit137}));
  }
  for (const Evidence& e : ev.examples(Kind::kChildFailed)) {
    if (e.Field("exitcode") == "-9" || e.Field("signal") == "9") {
      out.push_back(MakeCause(Category::kHostOom, 0.65,
                              "a rank was killed by SIGKILL (exit code -9) from outside the "
                              "process, most often the kernel or cgroup OOM killer",
                              "check the node's kernel log / the pod's last state for the OOM "
                              "killer and raise the memory limit; otherwise look for who sent "
                              "SIGKILL (a time limit, a preemption)",
                              ev, {Kind::kChildFailed}));
      break;
    }
  }
}

// The node a scheduler event of `kind` names ("" when none).
std::string NodeOf(const EvidenceSet& ev, Kind kind) {
  const Evidence* e = ev.first(kind);
  return e ? std::string(e->Field("node")) : std::string();
}

// toposched's own record of the job: what it did and why, at the highest confidence (it is not
// inferred from a log, it is what happened).
void OwnEventRules(const EvidenceSet& ev, std::vector<Cause>& out) {
  if (ev.has(Kind::kSchedGpuFail)) {
    const std::string node = NodeOf(ev, Kind::kSchedGpuFail);
    out.push_back(MakeCause(Category::kGpuFault, 0.95,
                            "a GPU of the job on node " + node + " was reported unhealthy",
                            "drain " + node + " (toposched drain " + node +
                                ") until the GPU is checked or replaced (nvidia-smi -q, the "
                                "driver's Xid log); the job went per its on_failure",
                            ev, {Kind::kSchedGpuFail}));
  }
  if (ev.has(Kind::kSchedDegraded)) {
    const std::string node = NodeOf(ev, Kind::kSchedDegraded);
    out.push_back(MakeCause(Category::kNcclDegraded, 0.8,
                            "NVLinks of a GPU on node " + node +
                                " degraded: the job's collectives are predicted slower there",
                            "have " + node +
                                "'s NVLinks checked (nvidia-smi nvlink -e); "
                                "on_degraded: wait lets the scheduler move the job",
                            ev, {Kind::kSchedDegraded}));
  }
  if (ev.has(Kind::kSchedCancelled)) {
    out.push_back(MakeCause(Category::kCancelled, 0.95, "the job was cancelled by a user",
                            "nothing failed: ask who cancelled it (the daemon's audit log)", ev,
                            {Kind::kSchedCancelled}));
  }
  if (const Evidence* e = ev.first(Kind::kSchedExitCause)) {
    // Classified by the daemon from the job's exit report when it ended ("<exit>: cause <c>:
    // <summary>; fix: <fix>"). Below the log rules' confidences: the log itself, when it is
    // given too, is read again here with the node's topology, and its cause says more.
    const std::optional<Category> c = ParseCategory(e->Field("category"));
    const std::string_view reason = e->Field("reason");
    const size_t fix = reason.find("; fix: ");
    out.push_back(MakeCause(
        c.value_or(Category::kUnknown), 0.8,
        "the job's report, as the daemon classified it: " + std::string(reason.substr(0, fix)),
        fix == std::string_view::npos ? std::string("read the job's log (toposched diagnose --log)")
                                      : std::string(reason.substr(fix + 7)),
        ev, {Kind::kSchedExitCause}));
  }
  if (ev.has(Kind::kSchedPending)) {
    out.push_back(MakeCause(
        Category::kUnschedulable, 0.85,
        "the job is pending: " + std::string(ev.first(Kind::kSchedPending)->Field("reason")),
        "see `toposched explain` for what it waits on; ask for fewer GPUs or "
        "a looser constraint, or free the capacity it needs",
        ev, {Kind::kSchedPending}));
  }
}

void SchedulerRules(const EvidenceSet& ev, std::vector<Cause>& out) {
  OwnEventRules(ev, out);
  if (ev.has(Kind::kSchedTimeLimit) || ev.has(Kind::kSlurmTimeLimit)) {
    out.push_back(MakeCause(Category::kTimeout, ev.has(Kind::kSchedTimeLimit) ? 0.97 : 0.95,
                            "the job reached its time limit",
                            "request a longer --time (time_limit) from the job's measured rate "
                            "(or checkpoint and resubmit)",
                            ev, {Kind::kSchedTimeLimit, Kind::kSlurmTimeLimit}));
  }
  if (ev.has(Kind::kSchedNodeFail) || ev.has(Kind::kSlurmNodeFail) ||
      ev.has(Kind::kK8sNodeNotReady)) {
    const std::string node = NodeOf(ev, Kind::kSchedNodeFail);
    out.push_back(MakeCause(
        Category::kNodeFailure, ev.has(Kind::kSchedNodeFail) ? 0.95 : 0.9,
        node.empty() ? "a node of the job failed" : "node " + node + " of the job failed",
        node.empty() ? "requeue avoiding the failed node; check the node before resuming it"
                     : "drain " + node + " (toposched drain " + node +
                           ") and check it before resuming it; the job was requeued, shrunk or "
                           "failed per its on_failure",
        ev, {Kind::kSchedNodeFail, Kind::kSlurmNodeFail, Kind::kK8sNodeNotReady}));
  }
  if (ev.has(Kind::kSchedPreempted) || ev.has(Kind::kSlurmPreempted) ||
      ev.has(Kind::kK8sPreempted)) {
    out.push_back(MakeCause(Category::kPreempted, ev.has(Kind::kSchedPreempted) ? 0.95 : 0.9,
                            "the job was preempted for a higher-priority job",
                            "resubmit with a higher priority or into a non-preemptible queue; "
                            "checkpoint more often",
                            ev,
                            {Kind::kSchedPreempted, Kind::kSlurmPreempted, Kind::kK8sPreempted}));
  }
  if (ev.has(Kind::kK8sEvicted)) {
    out.push_back(MakeCause(Category::kEvicted, 0.9, "the pod was evicted under node pressure",
                            "set memory requests equal to the pod's real use (pods using more "
                            "than they request are evicted first), or give it Guaranteed QoS",
                            ev, {Kind::kK8sEvicted}));
  }
  if (CountOf(ev, {Kind::kK8sInsufficientGpu, Kind::kK8sGangUnschedulable}) > 0) {
    out.push_back(MakeCause(Category::kUnschedulable, 0.85,
                            "the job cannot be placed: not enough free GPUs for the whole gang",
                            "free or add GPUs (look for stale pods holding GPUs), or ask for fewer "
                            "GPUs/replicas; a gang starts only when all its members fit",
                            ev, {Kind::kK8sInsufficientGpu, Kind::kK8sGangUnschedulable}));
  }
  if (ev.has(Kind::kSlurmPending) || ev.has(Kind::kSlurmNodesUnavailable)) {
    std::string s = "the job cannot start: ";
    const Evidence* p = ev.first(Kind::kSlurmPending);
    s += p ? "pending with reason " + std::string(p->Field("reason"))
           : std::string("nodes are drained, down or in maintenance");
    out.push_back(MakeCause(Category::kUnschedulable, ev.has(Kind::kSlurmPending) ? 0.8 : 0.7, s,
                            "wait for the nodes to return (scontrol show node for the reason), or "
                            "ask for a partition/GPU count the available nodes can hold",
                            ev, {Kind::kSlurmPending, Kind::kSlurmNodesUnavailable}));
  }
}

void AppRules(const EvidenceSet& ev, std::vector<Cause>& out) {
  for (const Evidence& e : ev.examples(Kind::kK8sExitCode)) {
    const std::string_view code = e.Field("code");
    if (code == "0" || code == "137") continue;
    out.push_back(MakeCause(Category::kApplicationError, 0.6,
                            "a replica exited with code " + std::string(code) +
                                " (the training code failed, not the platform)",
                            "read the failing replica's own log; a non-retryable exit code should "
                            "fail the job rather than restart it",
                            ev, {Kind::kK8sExitCode, Kind::kK8sJobRestarting}));
    return;
  }
}

// Only when no fault was found: a log that shows a correct set-up.
void HealthyRule(const EvidenceSet& ev, std::vector<Cause>& out) {
  int kinds = 0;
  for (Kind k : {Kind::kNcclNetIb, Kind::kNcclNetworkIb, Kind::kNcclChannelIb,
                 Kind::kNcclChannelIntra, Kind::kNcclConnected, Kind::kNcclNvlsAvailable,
                 Kind::kNcclRingOrder, Kind::kNvlinkCountersClean, Kind::kNcclInitComplete,
                 Kind::kTrainingProgress, Kind::kRunCompleted}) {
    kinds += ev.has(k) ? 1 : 0;
  }
  // A start that is going through (a launcher's or NCCL's start lines) is the weakest sign: it
  // alone makes a log with no fault a normal start (0.4), and adds nothing to stronger signs.
  const bool start_only = kinds == 0 && ev.has(Kind::kRunStarted);
  if (start_only) kinds = 1;
  if (kinds == 0) return;
  out.push_back(MakeCause(
      Category::kHealthy, std::min(0.8, 0.4 + 0.1 * (kinds - 1)),
      "the log shows a correct set-up and no fault", "nothing to fix", ev,
      {Kind::kNcclChannelIb, Kind::kNcclChannelIntra, Kind::kNcclConnected,
       Kind::kNcclNvlsAvailable, Kind::kNcclNetIb, Kind::kNcclRingOrder, Kind::kNvlinkCountersClean,
       Kind::kNcclInitComplete, Kind::kTrainingProgress, Kind::kRunCompleted, Kind::kRunStarted}));
  // Its own calibration record: a start and nothing after it is a weaker verdict than a set-up
  // or progress seen.
  if (start_only) out.back().rule = "healthy:run_started";
}

bool IsFault(Category c) { return c != Category::kHealthy && c != Category::kNcclDegraded; }

// The pod was placed or the workload admitted after all ("Successfully assigned", "Admitted by
// ClusterQueue"): a "no capacity" read from the log has passed, and another cause of the job's
// end (an eviction, a failure) ranks above it. The scheduler's own pending record is not
// touched.
void PassedAdmission(std::vector<Cause>& causes) {
  for (Cause& c : causes) {
    if (c.category != Category::kUnschedulable) continue;
    const bool own = !c.evidence.empty() && c.evidence.front().kind == Kind::kSchedPending;
    if (!own) c.confidence = std::min(c.confidence, 0.45);
  }
}

// A feature or path NCCL reports it runs without (NVLS unavailable, GPUDirect RDMA disabled, a
// feature ignored, a topology fallback, a slow PCIe link) makes a running job degraded, not
// healthy: such a cause outranks the healthy verdict. Degraded causes read from an absence (no
// "/GDRDMA" on any channel line, an unreadable PCI tree: strength under 0.5) still yield to a
// healthy set-up of two or more kinds.
void YieldHealthyToDegraded(std::vector<Cause>& causes) {
  double stated = 0;
  for (const Cause& c : causes) {
    if (c.category == Category::kNcclDegraded && c.confidence >= 0.5) {
      stated = std::max(stated, c.confidence);
    }
  }
  if (stated == 0) return;
  for (Cause& c : causes) {
    if (c.category == Category::kHealthy) c.confidence = std::min(c.confidence, stated - 0.05);
  }
}

// A rank that died (GPU OOM, GPU fault, host OOM, node failure) makes its peers see reset or
// closed connections: those become peer_failure, below the cause.
void EchoPass(std::vector<Cause>& causes) {
  bool died = false;
  for (const Cause& c : causes) {
    died |= c.category == Category::kGpuOom || c.category == Category::kGpuFault ||
            c.category == Category::kHostOom || c.category == Category::kNodeFailure ||
            c.category == Category::kApplicationError;
  }
  if (!died) return;
  for (Cause& c : causes) {
    if (c.category == Category::kNetworkError && !internal::CitesFabric(c)) {
      c.category = Category::kPeerFailure;
      c.confidence = 0.5;
      c.summary = "peers saw closed or reset connections: the echo of the rank that died first";
      c.fix = "fix the first failure; these errors follow from it";
      c.rule = "peer_failure:echo";
    }
  }
}

}  // namespace

std::vector<Cause> RankCauses(const EvidenceSet& evidence, const NodeContext* node) {
  std::vector<Cause> causes;
  HardwareRules(evidence, causes);
  MemoryRules(evidence, causes);
  SchedulerRules(evidence, causes);
  internal::NetworkRules(evidence, node, causes);
  internal::ProcessRules(evidence, causes);
  AppRules(evidence, causes);
  const bool fault =
      std::any_of(causes.begin(), causes.end(), [](const Cause& c) { return IsFault(c.category); });
  if (evidence.has(Kind::kAdmitted)) PassedAdmission(causes);
  if (!fault) HealthyRule(evidence, causes);
  YieldHealthyToDegraded(causes);
  EchoPass(causes);
  std::stable_sort(causes.begin(), causes.end(), [](const Cause& a, const Cause& b) {
    if (a.confidence != b.confidence) return a.confidence > b.confidence;
    return a.category < b.category;
  });
  // One entry per category: the strongest.
  std::vector<Cause> unique;
  for (Cause& c : causes) {
    const bool seen = std::any_of(unique.begin(), unique.end(),
                                  [&](const Cause& u) { return u.category == c.category; });
    if (!seen) unique.push_back(std::move(c));
  }
  internal::Calibrate(unique);
  return unique;
}

}  // namespace toposched::diag
