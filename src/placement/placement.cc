#include "placement/placement.h"

namespace toposched::sched {

const char* VerdictKindName(VerdictKind k) {
  switch (k) {
    case VerdictKind::kFit:
      return "fit";
    case VerdictKind::kUnschedulable:
      return "unschedulable";
    case VerdictKind::kUnresolvable:
      return "unresolvable";
  }
  return "?";
}

std::string Verdict::Explain() const {
  if (placement && kind == VerdictKind::kFit) return placement->explanation;
  std::string s;
  for (const std::string& r : reasons) s += (s.empty() ? "" : "; ") + r;
  return s;
}

}  // namespace toposched::sched
