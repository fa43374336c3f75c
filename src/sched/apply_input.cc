// Scheduler::Apply: one typed input (sched/input.h) applied to the scheduler, as the daemon's
// replay, its requests and the simulator all do.
#include <type_traits>
#include <utility>

#include "sched/input.h"
#include "sched/scheduler.h"

namespace toposched::sched {

StatusOr<Applied> Scheduler::Apply(const Input& in, int64_t now_us) {
  Applied out;
  auto done = [&](Status st) -> StatusOr<Applied> {
    if (!st.ok()) return st;
    return std::move(out);
  };
  return std::visit(
      Overload{
          [&](const SubmitJob& s) -> StatusOr<Applied> {
            ASSIGN_OR_RETURN(out.job, Submit(s.spec, now_us));
            return std::move(out);
          },
          [&](const SubmitPodGroup& s) -> StatusOr<Applied> {
            ASSIGN_OR_RETURN(int64_t id, SubmitAs(s.spec, now_us, s.group));
            out.job = JobId{id};
            return std::move(out);
          },
          [&](const CancelJob& c) { return done(Cancel(c.job, now_us)); },
          [&](const CompleteJob& c) {
            return done(Complete(c.job, now_us, c.failure, c.drain_node, c.drain_reason, c.platform,
                                 c.failed_node));
          },
          [&](const SetJobPriority& p) { return done(SetPriority(p.job, p.priority, now_us)); },
          [&](const DrainNode& d) {
            return done(
                SetNodeDrained(d.node, d.drained, now_us,
                               d.reason.empty() && d.drained ? "drained by operator" : d.reason));
          },
          [&](const HealthReport& h) {
            const std::string why = h.reason.empty()
                                        ? std::string(HealthTargetName(h.target)) +
                                              " health report: " + topo::HealthName(h.health)
                                        : h.reason;
            switch (h.target) {
              case HealthTarget::kNode:
                return done(SetNodeHealth(h.node, h.health, now_us, why));
              case HealthTarget::kGpu:
                return done(SetGpuHealth(h.node, h.index, h.health, now_us, why));
              case HealthTarget::kNic:
                return done(SetNicHealth(h.node, h.index, h.health, now_us, why));
              case HealthTarget::kNvlink:
                return done(SetNvlinkHealth(h.node, h.index, h.health, now_us, why));
            }
            return done(InvalidArgumentError("health report: unknown target"));
          },
          [&](const sched::Tick&) { return done(Tick(now_us)); },
          [&](const JobDegraded& d) {
            return done(
                ReportDegraded(d.job, d.reason, d.after_ms, now_us, d.drain_node, d.drain_reason));
          },
          [&](const NodeTopologyReport& r) {
            return done(SetNodeTopology(r.node, r.topology, now_us,
                                        r.source.empty() ? "node topology report" : r.source));
          },
          [&](const NodeNetworkReport& r) { return done(SetNodeNetwork(r, now_us)); },
          [&](const SchedulePass&) -> StatusOr<Applied> {
            ASSIGN_OR_RETURN(out.started, Schedule(now_us));
            return std::move(out);
          },
          [&](const Pass&) -> StatusOr<Applied> {
            RETURN_IF_ERROR(Tick(now_us));
            ASSIGN_OR_RETURN(out.started, Schedule(now_us));
            return std::move(out);
          },
      },
      in);
}

}  // namespace toposched::sched
