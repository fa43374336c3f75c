#include "sim/policies.h"

#include <algorithm>

#include "core/strings.h"
#include "placer/policy.h"

namespace toposched::sim {

const std::vector<std::string>& PolicyNames() { return sched::PolicyNames(); }

bool PoliciesDistinct() { return true; }

StatusOr<sched::GangPlacerOptions> PlacerOptionsFor(const std::string& name) {
  return sched::PolicyOptions(name);
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
