#include "sim/policies.h"

#include <algorithm>

#include "core/strings.h"

namespace toposched::sim {

const std::vector<std::string>& PolicyNames() {
  static const std::vector<std::string> kNames = {"toposched",  "first-fit", "best-fit",
                                                  "pair-score", "kueue-tas", "slurm-tree"};
  return kNames;
}

bool PoliciesDistinct() { return false; }

StatusOr<sched::GangPlacerOptions> PlacerOptionsFor(const std::string& name) {
  const auto& names = PolicyNames();
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    std::string known;
    for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
    return InvalidArgumentError("unknown policy \"" + name + "\" (policies: " + known + ")");
  }
  // The scheduler core's per-policy option sets are not in this build yet: every policy runs
  // the default gang placer (PoliciesDistinct() is false and the report says so).
  return sched::GangPlacerOptions{};
}

StatusOr<std::vector<std::string>> ParsePolicyList(const std::string& list) {
  if (Trim(list) == "all") return PolicyNames();
  std::vector<std::string> out;
  for (const std::string& raw : Split(list, ',')) {
    const std::string name(Trim(raw));
    RETURN_IF_ERROR(PlacerOptionsFor(name).status());
    if (std::find(out.begin(), out.end(), name) != out.end()) {
      return InvalidArgumentError("policy \"" + name + "\" given twice");
    }
    out.push_back(name);
  }
  if (out.empty()) return InvalidArgumentError("no policy given");
  return out;
}

}  // namespace toposched::sim
