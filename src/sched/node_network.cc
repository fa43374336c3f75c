#include "sched/node_network.h"

#include <algorithm>
#include <utility>

#include "core/strings.h"

namespace toposched::sched {

namespace {

void InsertSorted(std::vector<int>& v, int x) {
  v.insert(std::lower_bound(v.begin(), v.end(), x), x);
}

void Erase(std::vector<int>& v, int x) { v.erase(std::remove(v.begin(), v.end(), x), v.end()); }

Status MoveInTree(topo::Cluster& c, int n, const std::vector<std::string>& names) {
  const std::string who = "node " + Quote(c.nodes[n].name);
  if (names.size() != c.levels.size()) {
    return InvalidArgumentError(who + ": " + std::to_string(names.size()) +
                                " network domains given, the model has " +
                                std::to_string(c.levels.size()) + " levels (one name per level)");
  }
  int parent = -1;
  for (size_t l = 0; l < names.size(); ++l) {
    const std::string& name = names[l];
    if (name.empty())
      return InvalidArgumentError(who + ": empty domain name at level " + Quote(c.levels[l].name));
    int d = c.FindDomain(name);
    if (d < 0) {
      topo::NetworkDomain nd;
      nd.name = name;
      nd.level = static_cast<int>(l);
      nd.parent = parent;
      d = static_cast<int>(c.domains.size());
      if (parent >= 0) c.domains[parent].children.push_back(d);
      c.domains.push_back(std::move(nd));
    } else if (c.domains[d].level != static_cast<int>(l)) {
      return InvalidArgumentError(who + ": domain " + Quote(name) + " is at level " +
                                  Quote(c.levels[c.domains[d].level].name) +
                                  " in the model, given at level " + Quote(c.levels[l].name));
    } else if (c.domains[d].parent != parent) {
      const int was = c.domains[d].parent;
      return InvalidArgumentError(
          who + ": domain " + Quote(name) + " is under " +
          (was < 0 ? std::string("no parent") : Quote(c.domains[was].name)) +
          " in the model, given under " +
          (parent < 0 ? std::string("no parent") : Quote(c.domains[parent].name)) +
          " (the tiers are not a tree; a domain moves to another parent with the cluster file)");
    }
    parent = d;
  }
  const int old = c.nodes[n].domain;
  if (old == parent) return OkStatus();
  if (old >= 0) Erase(c.domains[old].nodes, n);
  InsertSorted(c.domains[parent].nodes, n);
  c.nodes[n].domain = parent;
  return OkStatus();
}

Status MoveNvlink(topo::Cluster& c, int n, const std::string& name) {
  int d = -1;
  if (!name.empty()) {
    d = FindNvlinkDomain(c, name);
    if (d < 0) {
      return InvalidArgumentError("node " + Quote(c.nodes[n].name) + ": NVLink domain " +
                                  Quote(name) +
                                  " is not in the model and no per-GPU NVLink bandwidth was "
                                  "given for it (nvlink_gbps)");
    }
  }
  const int old = c.nodes[n].nvlink_domain;
  if (old == d) return OkStatus();
  if (old >= 0) Erase(c.nvlink_domains[old].nodes, n);
  if (d >= 0) InsertSorted(c.nvlink_domains[d].nodes, n);
  c.nodes[n].nvlink_domain = d;
  return OkStatus();
}

}  // namespace

bool AtPlace(const NodeNetworkReport& report, const NodeNetworkReport& place) {
  return (report.domains.empty() || report.domains == place.domains) &&
         (!report.nvlink_domain || report.nvlink_domain == place.nvlink_domain);
}

int FindNvlinkDomain(const topo::Cluster& c, const std::string& name) {
  for (size_t i = 0; i < c.nvlink_domains.size(); ++i) {
    if (c.nvlink_domains[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

NodeNetworkReport NetworkPlaceOf(const topo::Cluster& c, int node) {
  NodeNetworkReport r;
  r.node = node;
  for (int d = c.nodes[node].domain; d != -1; d = c.domains[d].parent) {
    r.domains.insert(r.domains.begin(), c.domains[d].name);
  }
  const int nvd = c.nodes[node].nvlink_domain;
  r.nvlink_domain = nvd >= 0 ? c.nvlink_domains[nvd].name : std::string();
  return r;
}

Status PlaceInNetwork(const std::map<int, NodeNetworkReport>& places, topo::Cluster& c) {
  // New NVLink domains first, each with the bandwidth some report gives it, so that the order of
  // the nodes does not matter.
  std::map<std::string, double> fresh;
  for (const auto& [n, place] : places) {
    if (!place.nvlink_domain || place.nvlink_domain->empty()) continue;
    const std::string& name = *place.nvlink_domain;
    if (FindNvlinkDomain(c, name) < 0) fresh[name] = std::max(fresh[name], place.nvlink_gbps);
  }
  for (const auto& [name, gbps] : fresh) {
    if (gbps > 0) c.nvlink_domains.push_back({name, {}, gbps});
  }
  for (const auto& [n, place] : places) {
    if (n < 0 || n >= static_cast<int>(c.nodes.size())) {
      return InvalidArgumentError("node id " + std::to_string(n) + " out of range");
    }
    if (!place.domains.empty()) RETURN_IF_ERROR(MoveInTree(c, n, place.domains));
    if (place.nvlink_domain) {
      RETURN_IF_ERROR(MoveNvlink(c, n, *place.nvlink_domain));
    }
  }
  // NVLink domains left without nodes go (a cluster has none empty); ids after them shift down.
  std::vector<int> new_id(c.nvlink_domains.size(), -1);
  std::vector<topo::NvlinkDomain> kept;
  for (size_t d = 0; d < c.nvlink_domains.size(); ++d) {
    if (c.nvlink_domains[d].nodes.empty()) continue;
    new_id[d] = static_cast<int>(kept.size());
    kept.push_back(std::move(c.nvlink_domains[d]));
  }
  c.nvlink_domains = std::move(kept);
  for (topo::ClusterNode& node : c.nodes) {
    if (node.nvlink_domain >= 0) node.nvlink_domain = new_id[node.nvlink_domain];
  }
  c.Finalize();
  return c.Validate();
}

std::string PlaceWords(const NodeNetworkReport& place) {
  std::string s;
  for (const std::string& d : place.domains) s += (s.empty() ? "" : " > ") + d;
  if (place.nvlink_domain && !place.nvlink_domain->empty()) {
    s += (s.empty() ? "" : ", ") + ("NVLink domain " + *place.nvlink_domain);
  }
  return s;
}

}  // namespace toposched::sched
