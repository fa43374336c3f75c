// The daemon's diagnosis of its jobs' ends: a finished job's exit report classified into its
// last event (and a fatal GPU fault into a drain of its node), and the category of every
// interruption in the event log, for the events API and /metrics. The classification itself is
// src/diag's; this file only ties it to the service's inputs.
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "api/input_codec.h"
#include "api/service.h"
#include "diag/diagnose.h"
#include "diag/event_category.h"
#include "diag/topology.h"
#include "diag/xid.h"

namespace toposched::api {

namespace {

// One line, at most `max` bytes (a reason is one line of the event log), never cut inside a
// UTF-8 character.
std::string OneLine(std::string s, size_t max) {
  for (char& c : s) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  if (s.size() > max) {
    size_t cut = max - 3;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
    s = s.substr(0, cut) + "...";
  }
  return s;
}

const char* SignalName(int sig) {
  switch (sig) {
    case 1:
      return "SIGHUP";
    case 2:
      return "SIGINT";
    case 6:
      return "SIGABRT";
    case 7:
      return "SIGBUS";
    case 9:
      return "SIGKILL";
    case 11:
      return "SIGSEGV";
    case 15:
      return "SIGTERM";
  }
  return "";
}

// "exit code 1", "killed by signal 9 (SIGKILL)", "exit code 137, signal 9 (SIGKILL)"; only for
// a report with an exit code or a signal.
std::string ExitText(const ExitReport& r) {
  std::string out;
  if (r.exit_code) out = "exit code " + std::to_string(*r.exit_code);
  if (r.signal) {
    const std::string name = SignalName(*r.signal);
    out += (out.empty() ? "killed by signal " : ", signal ") + std::to_string(*r.signal) +
           (name.empty() ? "" : " (" + name + ")");
  }
  return out;
}

// The strongest cause that is a fault (a "healthy" log is not one), or null.
const diag::Cause* TopFault(const diag::Diagnosis& d) {
  for (const diag::Cause& c : d.causes) {
    if (c.category != diag::Category::kHealthy) return &c;
  }
  return nullptr;
}

// Whether a failure with this top cause is the platform's, not the job's: then the job follows
// its on_failure (a requeue lands it on other GPUs), as on a health event. A job's own error
// (its code, its memory, its configuration) ends it FAILED: running it again repeats it. A
// timeout or a peer's end says nothing of whose fault it was, so it ends FAILED too.
bool PlatformCause(const diag::Cause* c) {
  if (c == nullptr) return false;
  switch (c->category) {
    case diag::Category::kGpuFault:
    case diag::Category::kNodeFailure:
    case diag::Category::kNetworkError:
    case diag::Category::kEvicted:
    case diag::Category::kPreempted:
      return true;
    default:
      return false;
  }
}

// What makes the node unfit for the next job, from the GPU-fault causes' evidence: a Xid that
// calls for a GPU reset or node service (NVIDIA's Xid catalogue, src/diag/xid.h), a GPU off the
// bus or lost, an uncorrectable ECC error, a failed row remapping. "" when nothing does.
std::string FatalGpuFault(const diag::Diagnosis& d) {
  using diag::Kind;
  for (const diag::Cause& c : d.causes) {
    if (c.category != diag::Category::kGpuFault) continue;
    for (const diag::Evidence& e : c.evidence) {
      switch (e.kind) {
        case Kind::kXid: {
          // Read as the rule that made the cause reads it (src/diag/rules.cc, WorstXid).
          const int code = std::atoi(std::string(e.Field("code")).c_str());
          const diag::XidInfo x = diag::LookupXid(code);
          if (x.action == diag::XidAction::kApplication) break;
          return "Xid " + std::to_string(code) +
                 (x.known ? " (" + std::string(x.meaning) + ")" : "") + ": " +
                 diag::XidActionName(x.action);
        }
        case Kind::kFallenOffBus:
          return "a GPU has fallen off the bus";
        case Kind::kGpuLost:
          return "a GPU is lost to the driver";
        case Kind::kEccUncorrectable:
          return "an uncorrectable ECC error";
        case Kind::kRowRemapFailure:
          return "a row remapping failure";
        default:
          break;
      }
    }
  }
  return "";
}

// The reason of a failed job's last event: its exit, then "cause <category>: <summary>", where
// the evidence is, and the fix. The scheduler-event reader reads the category back
// (src/diag/scheduler_reader.cc), so it is written exactly so.
std::string FailureReason(const ExitReport& r, const diag::Cause* cause) {
  std::string out = ExitText(r) + ": cause ";
  if (cause == nullptr) {
    return out + diag::CategoryName(diag::Category::kUnknown) + ": " +
           (r.log.empty() ? "the report has no log" : "no line of its log names a known cause");
  }
  out += std::string(diag::CategoryName(cause->category)) + ": " + OneLine(cause->summary, 300);
  if (!cause->evidence.empty()) {
    out += " (" + cause->evidence.front().file + " line " +
           std::to_string(cause->evidence.front().line) + ")";
  }
  if (!cause->fix.empty()) out += "; fix: " + OneLine(cause->fix, 300);
  return out;
}

// A transport fallback's predicted time for a multi-node job: its inter-node share (its PP and
// DP parts) as the cost model prices NET/Socket against NET/IB for the report's node (src/diag
// AdviseNetwork, a 1 GiB AllReduce over two such nodes). 0 (unknown) for other causes and where
// the node's NICs give no ratio.
double DegradedMs(const sched::Placement& p, const diag::Cause& cause,
                  const std::optional<diag::NodeContext>& node) {
  if (cause.category != diag::Category::kNcclTransportFallback || !node) return 0;
  const diag::NetworkAdvice a = diag::AdviseNetwork(*node);
  if (!a.ib_ms || !a.socket_ms || *a.ib_ms <= 0) return 0;
  return p.tp_ms + (p.pp_ms + p.dp_ms) * (*a.socket_ms / *a.ib_ms);
}

}  // namespace

StatusOr<Service::ReportSite> Service::ReportSiteLocked(int64_t id, const ExitReport& r) const {
  const std::optional<job::JobState> st = sched_->State(JobId{id});
  if (!st) return NotFoundError("no job job-" + std::to_string(id));
  if (*st != job::JobState::kRunning && *st != job::JobState::kCompleting) {
    return FailedPreconditionError("job-" + std::to_string(id) + ": not running (" +
                                   job::JobStateName(*st) + ")");
  }
  ReportSite site;
  const sched::Placement* p = sched_->PlacementOf(JobId{id});
  if (!r.node.empty()) {
    site.node = cluster_->FindNode(r.node);
    if (site.node < 0) return NotFoundError("node: no node \"" + r.node + "\"");
    const bool ours =
        p != nullptr && std::any_of(p->parts.begin(), p->parts.end(),
                                    [&](const sched::NodeGpus& g) { return g.node == site.node; });
    if (!ours) {
      return InvalidArgumentError("node: job-" + std::to_string(id) + " does not run on " + r.node);
    }
  } else if (p != nullptr && p->parts.size() == 1) {
    site.node = p->parts.front().node;
  }
  // A job's nodes share a profile as a rule: the first one's topology stands for them.
  const int context = site.node >= 0                      ? site.node
                      : p != nullptr && !p->parts.empty() ? p->parts.front().node
                                                          : -1;
  if (context >= 0) {
    const topo::ClusterNode& cn = cluster_->nodes[context];
    site.context = diag::NodeContext{cn.name, sched_->OwnTopology(context)};
  }
  return site;
}

StatusOr<Service::DiagnosedReport> Service::DiagnoseReport(int64_t id, const ExitReport& r,
                                                           std::unique_lock<std::mutex>& lock) {
  lock.lock();
  DiagnosedReport out;
  ASSIGN_OR_RETURN(out.site, ReportSiteLocked(id, r));
  lock.unlock();
  if (!r.log.empty()) {
    out.diagnosis = diag::DiagnoseText(r.log, "report of job-" + std::to_string(id),
                                       out.site.context ? &*out.site.context : nullptr);
  }
  lock.lock();
  // It may have ended, or moved, meanwhile.
  ASSIGN_OR_RETURN(ReportSite again, ReportSiteLocked(id, r));
  if (again.node != out.site.node) {
    return FailedPreconditionError("job-" + std::to_string(id) +
                                   " moved while its report was read; send it again");
  }
  return out;
}

StatusOr<int64_t> Service::ApplyStoredFormLocked(const sched::Input& in) {
  store::InputRecord rec = EncodeInput(in, *cluster_);
  ASSIGN_OR_RETURN(sched::Input stored, DecodeInput(rec, *cluster_));
  return ApplyRecordLocked(stored);
}

Status Service::Complete(int64_t id, const ExitReport& r) {
  RETURN_IF_ERROR(Writable());
  if (r.signal && (*r.signal < 1 || *r.signal > 64)) {
    return InvalidArgumentError("signal: expected 1..64, got " + std::to_string(*r.signal));
  }
  int64_t seq = 0;
  {
    std::unique_lock<std::mutex> lk(mu_, std::defer_lock);
    ASSIGN_OR_RETURN(const DiagnosedReport report, DiagnoseReport(id, r, lk));
    const diag::Diagnosis& d = report.diagnosis;
    const int node = report.site.node;
    const std::string job = "job-" + std::to_string(id);
    sched::Input in{std::in_place_type<sched::CompleteJob>};
    auto& c = std::get<sched::CompleteJob>(in);
    c.job = sched::JobId{id};
    const bool failed = (r.exit_code && *r.exit_code != 0) || r.signal.has_value();
    if (failed) {
      c.failure = FailureReason(r, TopFault(d));
      c.platform = PlatformCause(TopFault(d));
      if (c.platform) c.failed_node = node;
    }
    // A GPU the next job must not get: its node is drained in the same input.
    if (const std::string fatal = FatalGpuFault(d);
        !fatal.empty() && node >= 0 && !sched_->cluster_state().NodeDrained(node)) {
      c.drain_node = node;
      c.drain_reason = OneLine(fatal, 300) + " (" + job + "'s exit report)";
    }
    ASSIGN_OR_RETURN(seq, ApplyStoredFormLocked(in));
  }
  TriggerPass();
  return WaitDurable(seq);
}

StatusOr<std::string> Service::ReportLog(int64_t id, const ExitReport& r) {
  RETURN_IF_ERROR(Writable());
  if (r.log.empty()) return InvalidArgumentError("log: required, the job's log (its end)");
  int64_t seq = 0;
  nlohmann::ordered_json out;
  {
    std::unique_lock<std::mutex> lk(mu_, std::defer_lock);
    ASSIGN_OR_RETURN(const DiagnosedReport report, DiagnoseReport(id, r, lk));
    const int node = report.site.node;
    const std::string job = "job-" + std::to_string(id);
    const diag::Cause* cause = TopFault(report.diagnosis);
    std::vector<std::string> actions;
    std::string fatal = FatalGpuFault(report.diagnosis);
    if (fatal.empty() || node < 0 || sched_->cluster_state().NodeDrained(node)) fatal.clear();
    const sched::Placement* p = sched_->PlacementOf(JobId{id});
    // NCCL uses the network only between nodes: on one node a fallback costs nothing.
    const bool network = p != nullptr && p->parts.size() > 1;
    const bool network_cause =
        cause != nullptr && (cause->category == diag::Category::kNcclTransportFallback ||
                             cause->category == diag::Category::kNcclDegraded);
    if (network_cause && network && sched_->State(JobId{id}) == job::JobState::kRunning) {
      sched::Input in{std::in_place_type<sched::JobDegraded>};
      auto& g = std::get<sched::JobDegraded>(in);
      g.job = sched::JobId{id};
      g.reason = "log report: cause " + std::string(diag::CategoryName(cause->category)) + ": " +
                 OneLine(cause->summary, 300);
      g.after_ms = DegradedMs(*p, *cause, report.site.context);
      if (!fatal.empty()) {
        g.drain_node = node;
        g.drain_reason = OneLine(fatal, 300) + " (" + job + "'s log report)";
      }
      ASSIGN_OR_RETURN(seq, ApplyStoredFormLocked(in));
      actions.push_back("job degraded, on_degraded followed");
    } else if (!fatal.empty()) {
      ASSIGN_OR_RETURN(seq, ApplyStoredFormLocked(sched::DrainNode{
                                node, true, OneLine(fatal, 300) + " (" + job + "'s log report)"}));
    }
    if (!fatal.empty()) actions.push_back("drained " + cluster_->nodes[node].name);
    if (network_cause && !network) {
      actions.push_back("none: the job runs on one node, where NCCL does not use the network");
    }
    out["job_id"] = job;
    out["state"] = job::JobStateName(*sched_->State(JobId{id}));
    out["cause"] = cause == nullptr
                       ? nlohmann::ordered_json(nullptr)
                       : nlohmann::ordered_json{{"category", diag::CategoryName(cause->category)},
                                                {"confidence", cause->confidence},
                                                {"summary", cause->summary},
                                                {"topology", cause->topology},
                                                {"fix", cause->fix}};
    out["actions"] = actions;
  }
  TriggerPass();
  RETURN_IF_ERROR(WaitDurable(seq));
  return out.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

void Service::SyncCategoriesLocked() const {
  const auto& log = sched_->Events();
  if (interruptions_.empty()) interruptions_.assign(diag::kCategoryCount, 0);
  // The log only grows while the service lives (replay rebuilds it before any read).
  for (size_t i = event_category_.size(); i < log.size(); ++i) {
    const std::optional<diag::Category> c = diag::InterruptionCategory(log[i]);
    event_category_.push_back(c ? static_cast<int8_t>(*c) : int8_t{-1});
    if (c) ++interruptions_[static_cast<size_t>(*c)];
  }
}

std::string Service::EventCategoryLocked(size_t i) const {
  SyncCategoriesLocked();
  if (i >= event_category_.size() || event_category_[i] < 0) return "";
  return diag::CategoryName(static_cast<diag::Category>(event_category_[i]));
}

}  // namespace toposched::api
