// The daemon's diagnosis of its jobs' ends: a finished job's exit report classified into its
// last event (and a fatal GPU fault into a drain of its node), and the category of every
// interruption in the event log, for the events API and /metrics. The classification itself is
// src/diag's; this file only ties it to the service's inputs.
#include <cstdio>
#include <string>

#include "api/service.h"
#include "diag/diagnose.h"
#include "diag/event_category.h"
#include "diag/xid.h"

namespace toposched::api {

namespace {

// One line, at most `max` bytes (a reason is one line of the event log).
std::string OneLine(std::string s, size_t max) {
  for (char& c : s) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  if (s.size() > max) s = s.substr(0, max - 3) + "...";
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

// "exit code 1", "killed by signal 9 (SIGKILL)", "exit code 137, signal 9 (SIGKILL)".
std::string ExitText(const ExitReport& r) {
  std::string out;
  if (r.exit_code) out = "exit code " + std::to_string(*r.exit_code);
  if (r.signal) {
    const std::string name = SignalName(*r.signal);
    out += (out.empty() ? "killed by signal " : ", signal ") + std::to_string(*r.signal) +
           (name.empty() ? "" : " (" + name + ")");
  }
  return out.empty() ? "no exit status" : out;
}

// The strongest cause that is a fault (a "healthy" log is not one), or null.
const diag::Cause* TopFault(const diag::Diagnosis& d) {
  for (const diag::Cause& c : d.causes) {
    if (c.category != diag::Category::kHealthy) return &c;
  }
  return nullptr;
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
          int code = 0;
          const std::string_view f = e.Field("code");
          for (char ch : f) {
            if (ch < '0' || ch > '9' || code > 100000) break;
            code = code * 10 + (ch - '0');
          }
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

}  // namespace

Status Service::Complete(int64_t id, const ExitReport& r) {
  RETURN_IF_ERROR(health());
  if (r.signal && (*r.signal < 1 || *r.signal > 64)) {
    return InvalidArgumentError("signal: expected 1..64, got " + std::to_string(*r.signal));
  }
  int64_t seq = 0;
  {
    std::lock_guard<std::mutex> lk(mu_);
    const std::optional<job::JobState> st = sched_->State(id);
    if (!st) return NotFoundError("no job job-" + std::to_string(id));
    if (*st != job::JobState::kRunning && *st != job::JobState::kCompleting) {
      return FailedPreconditionError("job-" + std::to_string(id) +
                                     ": cannot complete a job in state " + job::JobStateName(*st));
    }
    // The node the log comes from: the one named, else the job's only node (-1: unknown, so no
    // drain). Its topology (the first node's when unknown: a job's nodes share a profile as a
    // rule) is what the diagnosis ties network causes to.
    int node = -1, context = -1;
    const sched::Placement* p = sched_->PlacementOf(id);
    if (!r.node.empty()) {
      node = cluster_->FindNode(r.node);
      if (node < 0) return NotFoundError("node: no node \"" + r.node + "\"");
    } else if (p != nullptr && p->parts.size() == 1) {
      node = p->parts.front().node;
    }
    context = node >= 0 ? node : p != nullptr && !p->parts.empty() ? p->parts.front().node : -1;
    const std::string job = "job-" + std::to_string(id);
    diag::Diagnosis d;
    if (!r.log.empty()) {
      std::optional<diag::NodeContext> ctx;
      if (context >= 0) {
        const topo::ClusterNode& cn = cluster_->nodes[context];
        ctx = diag::NodeContext{cn.name, cluster_->profiles[cn.profile].topology};
      }
      d = diag::DiagnoseText(r.log, "exit report of " + job, ctx ? &*ctx : nullptr);
    }
    // A GPU the next job must not get: drain its node first, recorded as its own input.
    if (const std::string fatal = FatalGpuFault(d);
        !fatal.empty() && node >= 0 && !sched_->cluster_state().NodeDrained(node)) {
      ASSIGN_OR_RETURN(seq, ApplyRecordLocked(sched::DrainNode{
                                node, true, fatal + " (" + job + "'s exit report)"}));
    }
    const bool failed = (r.exit_code && *r.exit_code != 0) || r.signal.has_value();
    sched::Input in{std::in_place_type<sched::CompleteJob>};
    auto& c = std::get<sched::CompleteJob>(in);
    c.job = sched::JobId{id};
    if (failed) c.failure = FailureReason(r, TopFault(d));
    ASSIGN_OR_RETURN(int64_t done, ApplyRecordLocked(in));
    if (done != 0) seq = done;
  }
  TriggerPass();
  return WaitDurable(seq);
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
