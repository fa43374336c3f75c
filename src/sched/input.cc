#include "sched/input.h"

#include <type_traits>
#include <utility>

#include "core/enum_names.h"

namespace toposched::sched {

namespace {

constexpr EnumName<HealthTarget> kHealthTargetNames[] = {{HealthTarget::kNode, "node"},
                                                         {HealthTarget::kGpu, "gpu"},
                                                         {HealthTarget::kNic, "nic"},
                                                         {HealthTarget::kNvlink, "nvlink"}};

}  // namespace

const char* HealthTargetName(HealthTarget t) { return NameOf(kHealthTargetNames, t, "?"); }

StatusOr<HealthTarget> ParseHealthTarget(const std::string& text) {
  if (auto t = ValueOf(kHealthTargetNames, text)) return *t;
  return InvalidArgumentError("component: expected node, gpu, nic or nvlink, got \"" + text + "\"");
}

const char* InputKind(const Input& in) {
  return std::visit(Overload{
                        [](const SubmitJob&) { return "submit"; },
                        [](const SubmitPodGroup&) { return "submit_pod_group"; },
                        [](const CancelJob&) { return "cancel"; },
                        [](const CompleteJob&) { return "complete"; },
                        [](const SetJobPriority&) { return "priority"; },
                        [](const DrainNode&) { return "drain"; },
                        [](const HealthReport&) { return "health"; },
                        [](const sched::Tick&) { return "tick"; },
                        [](const SchedulePass&) { return "schedule"; },
                        [](const Pass&) { return "pass"; },
                        [](const JobDegraded&) { return "job_degraded"; },
                        [](const NodeTopologyReport&) { return "node_topology"; },
                        [](const NodeNetworkReport&) { return "node_network"; },
                    },
                    in);
}

}  // namespace toposched::sched
