// toposched's own job events, as `toposched events`, the job's events from the daemon, and the
// golden scripts print them: "<seconds>s job-<n> <FROM> -> <TO>: <reason>" (job::FormatEvent),
// and a pending job's explanation as "job-<n> PENDING: <explanation>". The scheduler wrote the
// reasons (src/sched/scheduler_events.cc), so they are matched exactly.
#include <string>
#include <string_view>

#include "diag/cause.h"
#include "diag/readers.h"
#include "diag/text.h"

namespace toposched::diag {

namespace {

// The node name after `marker` ("node gpu002 unhealthy (...)" → "gpu002").
std::string NodeAfter(std::string_view text, std::string_view marker) {
  return std::string(TokenAfter(text, marker, " (;,"));
}

void Add(Kind kind, const LineRef& line, EvidenceSet& out, const std::string& node = "") {
  if (Evidence* e = out.Add(kind, line)) {
    if (!node.empty()) e->fields.emplace_back("node", node);
  }
}

// "12.000000s job-7 " (job::FormatEvent) or "job-7 PENDING: " at the start of the line (after
// spaces): what follows is the scheduler's.
bool IsSchedulerLine(std::string_view t) {
  t = SkipSpaces(t);
  size_t i = 0;
  while (i < t.size() && ((t[i] >= '0' && t[i] <= '9') || t[i] == '.')) ++i;
  if (i > 0) {
    if (t.substr(i, 6) != "s job-") return false;
    return Has(t, " -> ");
  }
  if (t.substr(0, 4) != "job-") return false;
  size_t j = 4;
  while (j < t.size() && t[j] >= '0' && t[j] <= '9') ++j;
  return j > 4 && t.substr(j, 10) == " PENDING: ";
}

}  // namespace

bool ReadSchedulerLine(const LineRef& line, EvidenceSet& out) {
  const std::string_view t = line.text;
  if (!IsSchedulerLine(t)) return false;
  if (auto pending = After(t, " PENDING: "); pending && !Has(t, " -> ")) {
    if (Evidence* e = out.Add(Kind::kSchedPending, line)) {
      e->fields.emplace_back("reason", std::string(*pending));
    }
    return true;
  }
  if (Has(t, "-> COMPLETING: time limit") || Has(t, "-> TIMEOUT")) {
    Add(Kind::kSchedTimeLimit, line, out);
  }
  if (Has(t, "-> PREEMPTED: preempted by job-")) Add(Kind::kSchedPreempted, line, out);
  if (Has(t, "-> NODE_FAIL: node ")) {
    Add(Kind::kSchedNodeFail, line, out, NodeAfter(t, "-> NODE_FAIL: node "));
  }
  if (Has(t, ": GPU ") && Has(t, " unhealthy") &&
      (Has(t, "-> FAILED") || Has(t, "-> NODE_FAIL") || Has(t, "-> PREEMPTED"))) {
    Add(Kind::kSchedGpuFail, line, out, NodeAfter(t, " of "));
  }
  if (Has(t, "NVLinks of GPU ") && Has(t, " degraded")) {
    Add(Kind::kSchedDegraded, line, out, NodeAfter(t, " on "));
  }
  if (Has(t, "-> COMPLETING: cancelled by user") || Has(t, "-> CANCELLED: cancelled by user")) {
    Add(Kind::kSchedCancelled, line, out);
  }
  // The daemon's classification of a report of the job's (an exit report ending it, a log
  // report while it runs: Service::Complete, Service::ReportLog). Only a reason that starts as
  // the daemon writes one counts: text from elsewhere (a health report's or a node's message)
  // inside a reason cannot pass for a classification.
  const size_t job = t.find("job-");
  const size_t colon = t.find(": ", job == std::string_view::npos ? 0 : job);
  if (colon != std::string_view::npos) {
    const std::string_view reason = t.substr(colon + 2);
    const bool ours = reason.rfind("exit code ", 0) == 0 ||
                      reason.rfind("killed by signal ", 0) == 0 ||
                      reason.rfind("log report: cause ", 0) == 0;
    const std::string name(TokenAfter(reason, "cause ", ":"));
    if (ours && ParseCategory(name)) {
      if (Evidence* e = out.Add(Kind::kSchedExitCause, line)) {
        e->fields.emplace_back("category", name);
        e->fields.emplace_back("reason", std::string(reason));
      }
    }
  }
  return true;
}

}  // namespace toposched::diag
