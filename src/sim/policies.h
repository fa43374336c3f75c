// The placement policies the simulator compares, by name. Each is a set of gang-placer options
// for the same scheduler core, so only the placement logic differs between them. The simulator
// never implements placement itself: it looks a policy up here and hands the options to
// sched::GangPlacer. Knows nothing of traces or reports.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "placer/gang.h"

namespace toposched::sim {

// "toposched", "first-fit", "best-fit", "pair-score", "kueue-tas", "slurm-tree", in this order.
const std::vector<std::string>& PolicyNames();

// The placer options of a policy: sched::PolicyOptions. InvalidArgument naming the known policies
// for an unknown name.
StatusOr<sched::GangPlacerOptions> PlacerOptionsFor(const std::string& name);

// True when PlacerOptionsFor gives each policy its own options (the scheduler core's plug-in
// sets); false while every name runs the default placer, which the report then says.
bool PoliciesDistinct();

// "a,b" → {"a", "b"}; "all" → PolicyNames(). InvalidArgument for an unknown or repeated name.
StatusOr<std::vector<std::string>> ParsePolicyList(const std::string& list);

}  // namespace toposched::sim
