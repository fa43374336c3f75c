// Moving nodes in a cluster model's network: the place a NodeNetworkReport gives a node (its
// network domains by name, its NVLink domain) applied to a copy of the cluster, and the place a
// node has in a model, in the same terms. The scheduler's overlay of the cluster uses it.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "sched/input.h"
#include "topo/cluster.h"

namespace toposched::sched {

// The node's place in `c`: its network domains top first (names; empty when unattached) and its
// NVLink domain ("" none beyond the node). `node` in range.
NodeNetworkReport NetworkPlaceOf(const topo::Cluster& c, int node);

// Moves every node of `places` (node id → report, in that order) to its reported place in `c`:
// new domains are created, the node leaves its old ones (network domains stay, perhaps empty; an
// NVLink domain left without nodes is removed), indexes are rebuilt (Finalize) and the result
// validated. InvalidArgument naming the node and the domain
// for a domain list that is not one name per level, a known domain at another level or under
// another parent ("the tiers are not a tree"), a new NVLink domain without a bandwidth > 0.
// `c` is left half moved on error: callers move a copy.
Status PlaceInNetwork(const std::map<int, NodeNetworkReport>& places, topo::Cluster& c);

// Whether a node at `place` is where `report` says: every part the report gives (its domains,
// its NVLink domain) is the place's.
bool AtPlace(const NodeNetworkReport& report, const NodeNetworkReport& place);

// The NVLink domain of that name in `c`, -1 when none.
int FindNvlinkDomain(const topo::Cluster& c, const std::string& name);

// "spine0 > leaf3" / "spine0 > leaf3, NVLink domain nvl-a" for notes (no NVLink domain: not
// named).
std::string PlaceWords(const NodeNetworkReport& place);

}  // namespace toposched::sched
