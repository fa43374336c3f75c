#include "placement/placement.h"

#include "core/enum_names.h"

namespace toposched::sched {

namespace {

constexpr EnumName<VerdictKind> kVerdictKindNames[] = {
    {VerdictKind::kFit, "fit"},
    {VerdictKind::kUnschedulable, "unschedulable"},
    {VerdictKind::kUnresolvable, "unresolvable"}};

}  // namespace

const char* VerdictKindName(VerdictKind k) { return NameOf(kVerdictKindNames, k, "?"); }

std::string Verdict::Explain() const {
  if (placement && kind == VerdictKind::kFit) return placement->explanation;
  std::string s;
  for (const std::string& r : reasons) s += (s.empty() ? "" : "; ") + r;
  return s;
}

}  // namespace toposched::sched
