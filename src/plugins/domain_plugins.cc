// The domain plugins: the lowest network level that holds the job ("lowest-level"), and the
// whole cluster with the network tree ignored ("cluster").
#include "plugins/domain_plugins.h"

#include <algorithm>

namespace toposched::sched {

namespace {

using job::ConstraintMode;

// The domains of network level `li` (an index into Cluster::levels).
DomainGroup LevelGroup(const topo::Cluster& c, const DomainNodes& nodes, int li) {
  DomainGroup g{c.levels[li].name, {}, {}};
  for (size_t d = 0; d < c.domains.size(); ++d) {
    if (c.domains[d].level != li) continue;
    g.cands.push_back(DomainCandidate{&c.domains[d].name, &nodes.network[d], 0});
    g.domain_ids.push_back(static_cast<int>(d));
  }
  return g;
}

// The whole cluster as one candidate.
DomainGroup ClusterGroup(const topo::Cluster& c, const DomainNodes& nodes) {
  static const std::string kCluster = "cluster";
  DomainGroup g{"cluster", {}, {}};
  g.cands.push_back(DomainCandidate{c.name.empty() ? &kCluster : &c.name, &nodes.all, 0});
  g.domain_ids.push_back(-1);
  return g;
}

// "lowest-level": every level from the lowest up to the top (or to the job's required level),
// then the whole cluster where the tree has no single root.
class LowestLevelDomains : public Named<DomainPlugin, DomainRule> {
 public:
  LowestLevelDomains() : Named(DomainRule::kLowestLevel, "lowest-level") {}

 protected:
  std::vector<DomainGroup> TreeGroups(const topo::Cluster& c, const DomainNodes& nodes,
                                      const job::LevelConstraint& jc) const override {
    std::vector<DomainGroup> out;
    const bool required = jc.mode == ConstraintMode::kRequired;
    const int num_levels = static_cast<int>(c.levels.size());
    const int top = required ? c.FindLevel(jc.level) : 0;
    for (int li = num_levels - 1; li >= std::max(top, 0); --li) {
      out.push_back(LevelGroup(c, nodes, li));
    }
    int roots = 0;
    for (const topo::NetworkDomain& d : c.domains) roots += d.parent < 0 ? 1 : 0;
    if (!required && (roots != 1 || num_levels == 0)) out.push_back(ClusterGroup(c, nodes));
    return out;
  }
};

// "cluster": the network tree is ignored, except that a job required in a network level's
// domain is tried in that level's domains alone.
class ClusterDomain : public Named<DomainPlugin, DomainRule> {
 public:
  ClusterDomain() : Named(DomainRule::kCluster, "cluster") {}

 protected:
  std::vector<DomainGroup> TreeGroups(const topo::Cluster& c, const DomainNodes& nodes,
                                      const job::LevelConstraint& jc) const override {
    std::vector<DomainGroup> out;
    if (jc.mode != ConstraintMode::kRequired) {
      out.push_back(ClusterGroup(c, nodes));
    } else if (const int top = c.FindLevel(jc.level); top >= 0) {
      out.push_back(LevelGroup(c, nodes, top));
    }
    return out;
  }
};

}  // namespace

std::vector<DomainGroup> DomainPlugin::Groups(const topo::Cluster& c, const DomainNodes& nodes,
                                              const job::LevelConstraint& jc) const {
  const bool required = jc.mode == ConstraintMode::kRequired;
  if (required && jc.level == job::kLevelNode) return {};  // only the single-node path holds it
  if (!required || jc.level != job::kLevelNvlinkDomain) return TreeGroups(c, nodes, jc);
  DomainGroup g{job::kLevelNvlinkDomain, {}, {}};
  for (size_t d = 0; d < c.nvlink_domains.size(); ++d) {
    g.cands.push_back(DomainCandidate{&c.nvlink_domains[d].name, &nodes.nvlink[d], 0});
    g.domain_ids.push_back(-1);
  }
  std::vector<DomainGroup> out;
  out.push_back(std::move(g));
  return out;
}

const std::vector<const DomainPlugin*>& DomainPlugins() {
  static const LowestLevelDomains lowest_level;
  static const ClusterDomain cluster;
  static const std::vector<const DomainPlugin*> all = {&lowest_level, &cluster};
  return all;
}

}  // namespace toposched::sched
