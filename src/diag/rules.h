// Diagnosis: the rules that turn evidence into ranked causes of the fixed vocabulary, each with
// a confidence, the lines it rests on, what it means on the node's topology and the fix. Pure
// functions of the evidence (and the node, when known); no I/O, knows no log format.
#pragma once

#include <vector>

#include "diag/cause.h"
#include "diag/evidence.h"
#include "diag/topology.h"

namespace toposched::diag {

// Causes strongest first (ties: the vocabulary's order). Empty when nothing is known: the
// caller reports "no known cause". `node` may be null. Cost: O(kinds) plus, for a network
// cause with a node, one cost-model evaluation (AdviseNetwork).
std::vector<Cause> RankCauses(const EvidenceSet& evidence, const NodeContext* node);

}  // namespace toposched::diag
