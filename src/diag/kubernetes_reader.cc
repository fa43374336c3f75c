// Kubernetes: kubectl describe/get output, events, container statuses, Volcano/scheduler-plugins
// PodGroup conditions and Kubeflow training-operator lines. Patterns: docs/diagnose.md, source
// "Kubernetes" (pod lifecycle, node-pressure eviction, preemption), Volcano, Kubeflow.
#include <string>
#include <string_view>

#include "diag/readers.h"
#include "diag/text.h"

namespace toposched::diag {

namespace {

// "Exit Code:    137", "exitCode: 137", "\"exitCode\":137".
void ReadExitCode(const LineRef& line, EvidenceSet& out) {
  auto code = IntAfter(line.text, "Exit Code:");
  if (!code) code = IntAfter(line.text, "exitCode:");
  if (!code) code = IntAfter(line.text, "\"exitCode\":");
  if (code && *code == 137) out.Add(Kind::kK8sExit137, line);
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
}

}  // namespace toposched::diag
