// The `scores` choice point as plugin objects: each term of a placement's weighted score, in
// milliseconds of communication per step ("comm-time", "fragmentation", "contention"; the terms
// are documented at ScoreWeight). The search sums weight × Ms over the policy's terms, in
// ScoreTerm order, and compares candidates on the sum (lower is better).
#pragma once

#include <string>
#include <vector>

#include "placement/placement.h"
#include "plugins/slots.h"
#include "state/link_model.h"

namespace toposched::sched {

// What a score term sees of one candidate.
struct ScoreInput {
  double predicted_ms = 0;  // its predicted communication time per step
  int frag = 0;             // GPUs it leaves free on partly used nodes
  // The candidate itself; null where the search prices a node before building the placement
  // (the job whole on one node: no network link is shared).
  const Placement* placement = nullptr;
  // The running jobs' link loads (GangPlacer::Place's); null when none were given.
  const LinkModel* links = nullptr;
  double dp_hide_factor = 0;  // GangPlacer::Place's; 0 = all DP time exposed
};

class ScorePlugin {
 public:
  virtual ~ScorePlugin() = default;
  virtual ScoreTerm term() const = 0;
  // The registry name ("comm-time").
  virtual const std::string& name() const = 0;
  // >= 0, and never smaller at a larger predicted_ms (the same frag, no placement): the search
  // bounds a node's score from below by its terms at predicted_ms 0 (gang_domains.cc,
  // RoomierNodeByScore).
  virtual double Ms(const ScoreInput& in) const = 0;
};

// What placement `p` adds through the network links it would share with the running jobs in
// `links`: its own slowdown and theirs (LinkModel::ContentionMs of its DP and pipeline time);
// zero without link loads or on one node. The "contention" term is its total.
LinkModel::Contention PlacementContention(const LinkModel* links, const Placement& p,
                                          double dp_hide_factor);

// The registered score plugins, in registry order (the order of ScoreTerm).
const std::vector<const ScorePlugin*>& ScorePlugins();

}  // namespace toposched::sched
