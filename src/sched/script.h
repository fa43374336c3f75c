// Scheduler scripts: a text of timed commands that drives one Scheduler on a cluster, and the
// transcript of what happened (every job event, explanations, placements). The format of the
// golden tests and of `toposched replay`, so that an operator can reproduce a sequence of
// submissions, failures and passes exactly. Knows nothing of files beyond the text it is given.
#pragma once

#include <string>

#include "core/status.h"
#include "topo/cluster.h"

namespace toposched::sched {

// Script format, one command per line, '#' starts a comment:
//   option KEY=VALUE ...      before the first timed command. Keys: policy (a PolicyNames name),
//                             preempt (priority threshold), backfill (0/1), grace (kill grace, s),
//                             half_life (fair-share half-life, s), grow (0/1), shrink (0/1),
//                             user_weight.U, queue_weight.Q, user_limit.U, queue_limit.Q,
//                             locality_wait (s; −1 off; policy locality-relax: default
//                             kDefaultLocalityWaitS), wait_or_spread (0/1; plans with the
//                             jobs' declared run times, DeclaredRunTimes), consolidate (0/1;
//                             the same estimates), backfill_by_estimates (0/1; the same
//                             estimates), max_moves_per_job, max_moves_per_hour
//   T submit NAME [user=U] [queue=Q] [prio=P] (gpus=G | tp=T pp=P dp=D) [limit=S]
//            [min=R max=R] [on_failure=requeue|shrink|fail] [on_degraded=continue|wait]
//            [job=LEVEL:required|preferred] [tpc=LEVEL:required|preferred] [model=GPU_MODEL]
//            [run=S comm=PERCENT]  (run time on its best placement, communication share there)
//            [ckpt=S restart=S]  (checkpoint interval and restart cost, seconds)
//            [hide=PERCENT]  (its backward pass hides its DP all-reduce up to this percent of
//                       the all-reduce's unloaded time, 1..100000000: the contention score
//                       counts only what a loaded link exposes, DeclaredRunTimes)
//            [group=NS/NAME]  (submitted as that Kubernetes pod group: SubmitPodGroup)
//       gpus=G means TP min(G, 8) x DP G/TP; traffic: 1 GiB per DP AllReduce, 64 MiB per TP
//       AllReduce and per PP send
//   T schedule | T tick | T complete NAME | T cancel NAME | T priority NAME P
//   T node-health NODE H [reason...]     H: healthy | degraded | unhealthy
//   T gpu-health NODE GPU H [reason...]  T nic-health NODE NIC H [...]  T nvlink-health NODE GPU H
//   T drain NODE | T resume NODE
//   T explain NAME | T show NAME (domain, GPUs per node, times) | T ranks NAME (node, GPU, NIC
//   of every rank) | T capacity
// T is seconds (non-negative integer, non-decreasing). NODE is a node name; GPU and NIC are
// positions in the node's topology. Transcript: each command echoed as "> line", then, indented,
// the job events it caused (job::FormatEvent), its output, or "error: ..." when the scheduler
// refused it. After every command the scheduler's invariants are checked.
// Errors: InvalidArgument "source:line: ..." for a malformed line; Internal when an invariant
// breaks (with the line).
StatusOr<std::string> RunScript(const topo::Cluster& cluster, const std::string& text,
                                const std::string& source);

}  // namespace toposched::sched
