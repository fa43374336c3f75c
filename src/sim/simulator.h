// Discrete-event simulation of a trace on a cluster: a virtual clock (int64 µs) drives the very
// same sched::Scheduler as the daemon (Submit at arrival, Complete at the end of a run, Tick and
// one Schedule pass at every instant where something happened). A running job advances at ideal
// step time / current step time (sim/step_model.h: compute + exposed communication of its own
// layout on its placement, network parts slowed by the links it shares with other jobs,
// sim/link_model.h), recomputed whenever the running set changes; the trace duration is its run
// time at ideal speed. Knows nothing of the CLI, files or report formats (sim/report.h).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "placer/gang.h"
#include "placer/policy.h"
#include "sim/sim_types.h"
#include "sim/trace.h"
#include "topo/cluster.h"

namespace toposched::sim {

// Offered load of a trace on a cluster over its arrival window [first, last submission]: the
// time average, over the window, of the GPUs its jobs would hold if each ran from its arrival
// for its duration, over the cluster's GPUs:
//   Σ GPUs · min(duration, window end − submit) / (cluster GPUs · window)
// (a fractional job counting its share). Work past the window's end is not offered in it: a
// month-long run arriving in a one-day trace offers one day of GPUs, not a month, so a trace
// whose GPU time is dominated by a few long runs is not called loaded while the cluster idles.
// 0 when it is undefined (fewer than two arrival times).
double OfferedLoad(const Trace& trace, int cluster_gpus);
// Scales the inter-arrival times (all by one factor, durations unchanged) so that OfferedLoad
// becomes `load`; returns the factor. InvalidArgument for load outside (0, 100], a trace whose
// offered load is undefined, or a load above what the jobs can offer even when they all arrive
// at once (each counted up to the window's end).
StatusOr<double> ScaleToLoad(Trace& trace, int cluster_gpus, double load);

// Runs one policy. `placer_options` come from PlacerOptionsFor. Errors: InvalidArgument for bad
// options or a trace job that does not make a valid spec (file:line); errors of the scheduler
// core (which would be bugs) are returned as they are. Deterministic: the same inputs give the
// same result. Cost: one Schedule pass per distinct event time with jobs waiting.
StatusOr<SimResult> Simulate(const topo::Cluster& cluster, const Trace& trace,
                             const std::string& policy,
                             const sched::GangPlacerOptions& placer_options,
                             const SimOptions& options);

}  // namespace toposched::sim
