// Kubernetes: kubectl describe/get output, events, container statuses, Volcano/scheduler-plugins
// PodGroup conditions and Kubeflow training-operator lines. Patterns: docs/diagnose.md, source
// "Kubernetes" (pod lifecycle, node-pressure eviction, preemption), Volcano, Kubeflow.
#include <string>
#include <string_view>

#include "diag/readers.h"
#include "diag/text.h"

namespace toposched::diag {

namespace {

// "Exit Code:    137", "exitCode: 137", "\"exitCode\":137"; a container's own nonzero code (not
// 128+N, a signal's) is the program failing.
void ReadExitCode(const LineRef& line, EvidenceSet& out) {
  auto code = IntAfter(line.text, "Exit Code:");
  if (!code) code = IntAfter(line.text, "exitCode:");
  if (!code) code = IntAfter(line.text, "\"exitCode\":");
  if (code && *code == 137) out.Add(Kind::kK8sExit137, line);
  if (code && *code > 0 && *code < 128) {
    if (Evidence* e = out.Add(Kind::kWorkerFailed, line)) {
      e->fields.emplace_back("code", std::to_string(*code));
    }
  }
}

// An age as kubectl prints it: "11m", "65s", "3h", "2d5h", "5m30s".
bool IsAge(std::string_view s) {
  if (s.empty() || s.front() < '0' || s.front() > '9') return false;
  const char last = s.back();
  return (last == 's' || last == 'm' || last == 'h' || last == 'd') &&
         s.find_first_not_of("0123456789smhd") == std::string_view::npos;
}

// kubectl's tables ("NAME  READY  STATUS  RESTARTS  AGE") and describe output: a pod or a job
// still Pending, or a container the kubelet keeps restarting after it failed.
void ReadStatusRow(const LineRef& line, EvidenceSet& out) {
  const std::string_view t = line.text;
  const size_t end = t.find_last_not_of(" \t");
  if (end == std::string_view::npos) return;
  const size_t last = t.find_last_of(" \t", end);
  const bool row = last != std::string_view::npos && IsAge(t.substr(last + 1, end - last));
  const std::string_view lead = SkipSpaces(t);
  const bool field = lead.starts_with("Status:") || lead.starts_with("Phase:");
  if (!row && !field) return;
  if (HasWord(t, "Pending")) out.Add(Kind::kPodPending, line);
  if (HasWord(t, "CrashLoopBackOff") || (row && HasWord(t, "Error") && !Has(t, ":"))) {
    out.Add(Kind::kWorkerFailed, line);
  }
}

}  // namespace

void ReadKubernetesLine(const LineRef& line, EvidenceSet& out) {
  const std::string_view t = line.text;
  if (Has(t, "OOMKilled")) out.Add(Kind::kK8sOomKilled, line);
  if (Has(t, "xit Code:") || Has(t, "exitCode")) ReadExitCode(line, out);
  if (HasWord(t, "Evicted") || Has(t, "The node was low on resource")) {
    out.Add(Kind::kK8sEvicted, line);
  }
  if (HasWord(t, "Preempted") || Has(t, "preempted by") || HasWord(t, "Preempting")) {
    out.Add(Kind::kK8sPreempted, line);
  }
  if (Has(t, "Insufficient nvidia.com/gpu")) out.Add(Kind::kK8sInsufficientGpu, line);
  if (Has(t, "in gang unschedulable") || Has(t, "pod group is not ready") ||
      (Has(t, "PodGroup") && Has(t, "Unschedulable"))) {
    out.Add(Kind::kK8sGangUnschedulable, line);
  }
  if (Has(t, "is restarting because")) out.Add(Kind::kK8sJobRestarting, line);
  if (auto code = IntAfter(t, "exited with code ")) {
    if (Evidence* e = out.Add(Kind::kK8sExitCode, line)) {
      e->fields.emplace_back("code", std::to_string(*code));
    }
  }
  if (Has(t, "NodeNotReady") || Has(t, "NodeLost")) out.Add(Kind::kK8sNodeNotReady, line);
  if (Has(t, "Pending") || Has(t, "CrashLoop") || Has(t, "Error")) ReadStatusRow(line, out);
  // The kubelet restarting a failed container; a Job out of retries.
  if (Has(t, "Back") && (Has(t, "Back-off restarting failed container") ||
                         Has(t, "BackoffLimitExceeded") || Has(t, "BackoffLimit"))) {
    out.Add(Kind::kWorkerFailed, line);
  }
  // The pod was placed, the workload admitted, after all: an earlier "no capacity" has passed.
  if (Has(t, "Successfully assigned") || Has(t, "Admitted by ClusterQueue")) {
    out.Add(Kind::kAdmitted, line);
  }
}

}  // namespace toposched::diag
