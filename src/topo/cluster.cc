#include "topo/cluster.h"

#include <algorithm>
#include <unordered_set>

#include "core/strings.h"

namespace toposched::topo {

namespace {

template <typename T>
void BuildIndex(const std::vector<T>& items, std::unordered_map<std::string, int>& index) {
  index.clear();
  index.reserve(items.size());
  for (int i = 0; i < static_cast<int>(items.size()); ++i) index.emplace(items[i].name, i);
}

// A hit is trusted only when the item still carries the name (the vectors are public and may
// have been edited since Finalize()); a miss scans, so lookups never lie. Misses are rare
// (error paths), so their O(n) cost is accepted.
template <typename T>
int Lookup(const std::vector<T>& items, const std::unordered_map<std::string, int>& index,
           const std::string& name) {
  if (auto it = index.find(name); it != index.end()) {
    int i = it->second;
    if (i < static_cast<int>(items.size()) && items[i].name == name) return i;
  }
  for (int i = 0; i < static_cast<int>(items.size()); ++i) {
    if (items[i].name == name) return i;
  }
  return -1;
}

// Validate's steps, in the order it runs them.

// Every item named, no name twice.
template <typename T>
Status CheckNames(const std::vector<T>& items, const char* what) {
  std::unordered_set<std::string> seen;
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].name.empty()) {
      return InvalidArgumentError(std::string(what) + " #" + std::to_string(i) +
                                  " has an empty name");
    }
    if (!seen.insert(items[i].name).second) {
      return InvalidArgumentError(std::string("duplicate ") + what + " name " +
                                  Quote(items[i].name));
    }
  }
  return OkStatus();
}

// Each hardware profile's topology valid; each network level's bandwidth and oversubscription
// in range.
Status CheckProfilesAndLevels(const Cluster& c) {
  for (const HardwareProfile& p : c.profiles) {
    Status s = p.topology.Validate();
    if (!s.ok()) return s.WithPrefix("hardware profile " + Quote(p.name));
  }
  for (const NetworkLevel& l : c.levels) {
    if (!(l.uplink_gbps >= 0)) {
      return InvalidArgumentError("network level " + Quote(l.name) +
                                  ": uplink_gbps must be >= 0, got " +
                                  std::to_string(l.uplink_gbps));
    }
    if (!(l.oversubscription > 0)) {
      return InvalidArgumentError("network level " + Quote(l.name) +
                                  ": oversubscription must be > 0, got " +
                                  std::to_string(l.oversubscription));
    }
  }
  return OkStatus();
}

// Domains: level in range, parent exactly one level up, children mirror parents. How often
// each domain is listed among its parent's children is counted once, in one sweep: counting
// it per domain was quadratic in a parent's children (fuzzing: 0.9 s for a 1.3 KB spec).
Status CheckDomains(const Cluster& c) {
  const std::vector<NetworkDomain>& domains = c.domains;
  const int n_levels = static_cast<int>(c.levels.size());
  const int n_domains = static_cast<int>(domains.size());
  std::vector<int> listed_by_parent(static_cast<size_t>(n_domains), 0);
  for (int p = 0; p < n_domains; ++p) {
    for (int ch : domains[p].children) {
      if (ch >= 0 && ch < n_domains && domains[ch].parent == p) ++listed_by_parent[ch];
    }
  }
  for (int d = 0; d < n_domains; ++d) {
    const NetworkDomain& dom = domains[d];
    const std::string who = "network domain " + Quote(dom.name);
    if (dom.level < 0 || dom.level >= n_levels) {
      return InvalidArgumentError(who + ": level " + std::to_string(dom.level) + " out of range (" +
                                  std::to_string(n_levels) + " levels)");
    }
    if (dom.parent != -1) {
      if (dom.parent < 0 || dom.parent >= n_domains) {
        return InvalidArgumentError(who + ": parent id " + std::to_string(dom.parent) +
                                    " out of range");
      }
      const NetworkDomain& par = domains[dom.parent];
      if (par.level != dom.level - 1) {
        return InvalidArgumentError(
            who + " at level " + Quote(c.levels[dom.level].name) + ": parent " + Quote(par.name) +
            " must be one level up, " + "but is at level " +
            (par.level >= 0 && par.level < n_levels ? Quote(c.levels[par.level].name)
                                                    : std::to_string(par.level)));
      }
      if (listed_by_parent[d] != 1) {
        return InvalidArgumentError(who + ": parent " + Quote(par.name) +
                                    " does not list it exactly once among its children");
      }
    }
    std::unordered_set<int> kids;
    for (int ch : dom.children) {
      if (ch < 0 || ch >= n_domains) {
        return InvalidArgumentError(who + ": child id " + std::to_string(ch) + " out of range");
      }
      if (domains[ch].parent != d) {
        return InvalidArgumentError(who + ": child " + Quote(domains[ch].name) +
                                    " names a different parent");
      }
      if (!kids.insert(ch).second) {
        return InvalidArgumentError(who + ": child " + Quote(domains[ch].name) + " listed twice");
      }
    }
  }
  return OkStatus();
}

// The network domain listing each node (-1: none); an error for a node id out of range or a
// node listed by two domains.
StatusOr<std::vector<int>> DomainListing(const Cluster& c) {
  const int n_nodes = static_cast<int>(c.nodes.size());
  std::vector<int> listed_in(n_nodes, -1);
  for (int d = 0; d < static_cast<int>(c.domains.size()); ++d) {
    for (int n : c.domains[d].nodes) {
      if (n < 0 || n >= n_nodes) {
        return InvalidArgumentError("network domain " + Quote(c.domains[d].name) + ": node id " +
                                    std::to_string(n) + " out of range");
      }
      if (listed_in[n] != -1) {
        return InvalidArgumentError("node " + Quote(c.nodes[n].name) + " is in network domain " +
                                    Quote(c.domains[listed_in[n]].name) + " and in " +
                                    Quote(c.domains[d].name));
      }
      listed_in[n] = d;
    }
  }
  return listed_in;
}

// Nodes: profile, domain membership (exactly the domain that lists the node), NVLink domain id
// in range, enough NICs for the rails.
Status CheckNodes(const Cluster& c) {
  StatusOr<std::vector<int>> listing = DomainListing(c);
  if (!listing.ok()) return listing.status();
  const std::vector<int>& listed_in = *listing;
  const int n_profiles = static_cast<int>(c.profiles.size());
  const int n_domains = static_cast<int>(c.domains.size());
  const int n_nvl = static_cast<int>(c.nvlink_domains.size());
  const int max_nics_needed = c.rails.count;
  for (int n = 0; n < static_cast<int>(c.nodes.size()); ++n) {
    const ClusterNode& node = c.nodes[n];
    const std::string who = "node " + Quote(node.name);
    if (node.profile < 0 || node.profile >= n_profiles) {
      return InvalidArgumentError(who + ": hardware profile id " + std::to_string(node.profile) +
                                  " out of range");
    }
    if (node.domain != listed_in[n]) {
      if (node.domain == -1) {
        return InvalidArgumentError(who + " is listed by network domain " +
                                    Quote(c.domains[listed_in[n]].name) +
                                    " but its domain is unset");
      }
      if (node.domain < 0 || node.domain >= n_domains) {
        return InvalidArgumentError(who + ": domain id " + std::to_string(node.domain) +
                                    " out of range");
      }
      return InvalidArgumentError(who + ": its domain " + Quote(c.domains[node.domain].name) +
                                  " does not list it");
    }
    if (node.nvlink_domain < -1 || node.nvlink_domain >= n_nvl) {
      return InvalidArgumentError(who + ": NVLink domain id " + std::to_string(node.nvlink_domain) +
                                  " out of range");
    }
    const HardwareProfile& profile = c.profiles[node.profile];
    const int nics = static_cast<int>(profile.topology.nics.size());
    if (max_nics_needed > nics) {
      return InvalidArgumentError(who + ": rails.count " + std::to_string(c.rails.count) +
                                  " exceeds the " + std::to_string(nics) +
                                  " NICs of hardware profile " + Quote(profile.name));
    }
  }
  return OkStatus();
}

// NVLink domains: disjoint, mirrored by ClusterNode::nvlink_domain.
Status CheckNvlinkDomains(const Cluster& c) {
  const int n_nodes = static_cast<int>(c.nodes.size());
  std::vector<int> nvl_of(n_nodes, -1);
  for (int v = 0; v < static_cast<int>(c.nvlink_domains.size()); ++v) {
    const NvlinkDomain& nv = c.nvlink_domains[v];
    const std::string who = "NVLink domain " + Quote(nv.name);
    if (nv.nodes.empty()) return InvalidArgumentError(who + " has no nodes");
    if (!(nv.gpu_bandwidth_gbps >= 0)) {
      return InvalidArgumentError(who + ": gpu_bandwidth_gbps must be >= 0");
    }
    for (int n : nv.nodes) {
      if (n < 0 || n >= n_nodes) {
        return InvalidArgumentError(who + ": node id " + std::to_string(n) + " out of range");
      }
      if (nvl_of[n] != -1) {
        return InvalidArgumentError("node " + Quote(c.nodes[n].name) + " is in NVLink domain " +
                                    Quote(c.nvlink_domains[nvl_of[n]].name) + " and in " +
                                    Quote(nv.name));
      }
      nvl_of[n] = v;
    }
  }
  for (int n = 0; n < n_nodes; ++n) {
    if (c.nodes[n].nvlink_domain != nvl_of[n]) {
      return InvalidArgumentError("node " + Quote(c.nodes[n].name) +
                                  ": nvlink_domain does not match the NVLink domain lists");
    }
  }
  return OkStatus();
}

}  // namespace

void Cluster::Finalize() {
  BuildIndex(nodes, node_index_);
  BuildIndex(domains, domain_index_);
  BuildIndex(levels, level_index_);
  BuildIndex(profiles, profile_index_);
  rail_scope_level_ = rails.scope_level.empty() ? -1 : FindLevel(rails.scope_level);
}

int Cluster::FindNode(const std::string& n) const { return Lookup(nodes, node_index_, n); }
int Cluster::FindDomain(const std::string& n) const { return Lookup(domains, domain_index_, n); }
int Cluster::FindLevel(const std::string& n) const { return Lookup(levels, level_index_, n); }
int Cluster::FindProfile(const std::string& n) const { return Lookup(profiles, profile_index_, n); }

std::vector<int> Cluster::Ancestors(int node) const {
  std::vector<int> out;
  if (node < 0 || node >= static_cast<int>(nodes.size())) return out;
  int d = nodes[node].domain;
  const int n_domains = static_cast<int>(domains.size());
  // Bounded walk: a broken parent chain (cycle) must not hang callers that skipped Validate.
  while (d >= 0 && d < n_domains && static_cast<int>(out.size()) <= n_domains) {
    out.push_back(d);
    d = domains[d].parent;
  }
  return out;
}

int Cluster::LowestCommonDomain(const std::vector<int>& node_ids) const {
  if (node_ids.empty()) return -1;
  for (int d : Ancestors(node_ids[0])) {  // lowest first
    bool all = true;
    for (int n : node_ids) {
      const std::vector<int> a = Ancestors(n);
      all = all && std::find(a.begin(), a.end(), d) != a.end();
    }
    if (all) return d;
  }
  return -1;
}

int Cluster::MeetLevel(int node_a, int node_b) const {
  if (node_a == node_b) return static_cast<int>(levels.size());
  const int n_nodes = static_cast<int>(nodes.size());
  if (node_a < 0 || node_b < 0 || node_a >= n_nodes || node_b >= n_nodes) return -1;
  // Climb from the deeper side until both meet (no allocation: this runs per pair of nodes in
  // every cost-model evaluation). Bounded: a broken parent chain must not hang.
  const int n_domains = static_cast<int>(domains.size());
  int a = nodes[node_a].domain, b = nodes[node_b].domain;
  for (int guard = 0; guard <= 2 * n_domains; ++guard) {
    if (a < 0 || b < 0 || a >= n_domains || b >= n_domains) return -1;
    if (a == b) return domains[a].level;
    if (domains[a].level >= domains[b].level) {
      a = domains[a].parent;
    } else {
      b = domains[b].parent;
    }
  }
  return -1;
}

double Cluster::Oversubscription(int node_a, int node_b) const {
  if (node_a == node_b || levels.empty()) return 1.0;
  return ClimbFactor(node_a, node_b, MeetLevel(node_a, node_b));
}

double Cluster::ClimbFactor(int node_a, int node_b, int meet) const {
  const int n_domains = static_cast<int>(domains.size());
  auto climb = [&](int node) {
    double f = 1.0;
    int d = nodes[node].domain;
    for (int guard = 0; d >= 0 && d < n_domains && guard <= n_domains; ++guard) {
      const int level = domains[d].level;
      if (level <= meet || level < 0 || level >= static_cast<int>(levels.size())) break;
      f *= std::max(1.0, levels[level].oversubscription);
      d = domains[d].parent;
    }
    return f;
  };
  return std::max(climb(node_a), climb(node_b));
}

Cluster::RailFactors Cluster::RailOversubscription(int node_a, int node_b) const {
  if (node_a == node_b || levels.empty()) return {1.0, 1.0, 1.0};
  const int meet = MeetLevel(node_a, node_b);
  const double tree = ClimbFactor(node_a, node_b, meet);
  if (rails.count <= 0 || meet < 0) return {tree, tree, tree};
  int scope = 0;
  if (!rails.scope_level.empty()) {
    scope = RailScopeLevel();
    if (scope < 0) return {tree, tree, tree};
  }
  const int lowest = static_cast<int>(levels.size()) - 1;
  RailFactors f;
  f.tree = tree;
  // Below the level above the lowest the climb is the tree's own.
  f.cross_rail = meet < lowest
                     ? tree
                     : std::max(tree, ClimbFactor(node_a, node_b, std::min(meet, lowest - 1)));
  f.same_rail = meet >= scope ? 1.0 : tree;
  return f;
}

bool Cluster::RailsPriced() const {
  if (rails.count <= 0) return false;
  int scope = 0;
  if (!rails.scope_level.empty()) {
    scope = RailScopeLevel();
    if (scope < 0) return false;
  }
  // Levels whose uplinks one of the factors may climb and another not: those below the scope
  // (same rail inside it skips them) and the lowest (another rail always climbs it).
  const int lowest = static_cast<int>(levels.size()) - 1;
  for (int i = std::max(0, std::min(scope, lowest - 1) + 1); i <= lowest; ++i) {
    if (levels[i].oversubscription > 1) return true;
  }
  return false;
}

int Cluster::RailScopeLevel() const {
  if (rails.scope_level.empty()) return -1;
  const int n = static_cast<int>(levels.size());
  if (rail_scope_level_ >= 0 && rail_scope_level_ < n &&
      levels[rail_scope_level_].name == rails.scope_level) {
    return rail_scope_level_;
  }
  return FindLevel(rails.scope_level);
}

std::vector<int> Cluster::NodesUnder(int domain) const {
  std::vector<int> out;
  const int n_domains = static_cast<int>(domains.size());
  if (domain < 0 || domain >= n_domains) return out;
  std::vector<int> stack = {domain};
  std::vector<bool> seen(n_domains, false);
  while (!stack.empty()) {
    int d = stack.back();
    stack.pop_back();
    if (d < 0 || d >= n_domains || seen[d]) continue;
    seen[d] = true;
    out.insert(out.end(), domains[d].nodes.begin(), domains[d].nodes.end());
    stack.insert(stack.end(), domains[d].children.begin(), domains[d].children.end());
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

int Cluster::TotalGpus() const {
  int total = 0;
  for (const ClusterNode& n : nodes) {
    if (n.profile >= 0 && n.profile < static_cast<int>(profiles.size())) {
      total += static_cast<int>(profiles[n.profile].topology.gpus.size());
    }
  }
  return total;
}

Status Cluster::Validate() const {
  RETURN_IF_ERROR(CheckNames(profiles, "hardware profile"));
  RETURN_IF_ERROR(CheckNames(levels, "network level"));
  RETURN_IF_ERROR(CheckNames(domains, "network domain"));
  RETURN_IF_ERROR(CheckNames(nodes, "node"));
  RETURN_IF_ERROR(CheckNames(nvlink_domains, "NVLink domain"));
  RETURN_IF_ERROR(CheckProfilesAndLevels(*this));
  RETURN_IF_ERROR(CheckDomains(*this));
  RETURN_IF_ERROR(CheckNodes(*this));
  RETURN_IF_ERROR(CheckNvlinkDomains(*this));
  if (rails.count < 0) {
    return InvalidArgumentError("rails.count must be >= 0, got " + std::to_string(rails.count));
  }
  if (!rails.scope_level.empty() && FindLevel(rails.scope_level) < 0) {
    return InvalidArgumentError("rails.scope: unknown network level " + Quote(rails.scope_level));
  }
  return OkStatus();
}

}  // namespace toposched::topo
