// Preparing a GPU set for the collective models (cost/prepared.h): the set checked, grouped
// into islands (a node, or the nodes of one multi-node NVLink domain), each island's members in
// ring order with its rates inside and its share of the network.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cost/prepared.h"

namespace toposched::cost {

namespace {

std::string JoinNames(const std::vector<std::string>& names) {
  if (names.size() > 4) return std::to_string(names.size()) + " NICs";
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ",") + n;
  return out;
}

// The NICs whose traffic GPU g of `nm` carries: its own, or the host's (-1) when it has none.
std::span<const int> NicsCarrying(const NodeCostModel& nm, int g) {
  static constexpr int kHostNic[1] = {-1};
  const std::vector<int>& own = nm.NicsOf(g);
  return own.empty() ? std::span<const int>(kHostNic) : std::span<const int>(own);
}

}  // namespace

// The network share of `members` (cost/prepared.h).
NetShare ComputeNet(const CostModel& model, std::span<const GpuRef> gpus,
                    const std::vector<int>& members, bool prefix_node, bool names) {
  const CostTables& tables = model.tables();
  NetShare out;
  // Sorted flat tables (a set touches few nodes and NICs): per distinct (node, NIC) the best
  // rate a member gets through it and how many members use it; per node its members, then its
  // network rate. Sums run in (node, NIC) order.
  struct NicUse {
    std::pair<int, int> key;  // node, NIC position
    double gbps;
    int users;
  };
  std::vector<NicUse> nic_use;
  std::vector<std::pair<int, int>> node_users;
  auto nic_at = [&](const std::pair<int, int>& key) {
    return std::lower_bound(
        nic_use.begin(), nic_use.end(), key,
        [](const NicUse& u, const std::pair<int, int>& k) { return u.key < k; });
  };
  auto node_at = [](auto& table, int node) {
    return std::lower_bound(table.begin(), table.end(), node,
                            [](const auto& e, int n) { return e.first < n; });
  };
  for (int m : members) {
    const GpuRef& g = gpus[m];
    const NodeCostModel& nm = model.node_model(g.node);
    auto nu = node_at(node_users, g.node);
    if (nu == node_users.end() || nu->first != g.node) nu = node_users.insert(nu, {g.node, 0});
    ++nu->second;
    for (int c : NicsCarrying(nm, g.gpu)) {
      const std::pair<int, int> key{g.node, c};
      const double gbps = nm.NicGbps(g.gpu, c);
      auto it = nic_at(key);
      if (it != nic_use.end() && it->key == key) {
        it->gbps = std::max(it->gbps, gbps);
        ++it->users;
        continue;
      }
      nic_use.insert(it, NicUse{key, gbps, 1});
      if (names) {
        out.names.push_back((prefix_node ? model.cluster().nodes[g.node].name + "/" : "") +
                            nm.NicName(c));
      }
    }
    out.socket = out.socket || nm.NetTransport(g.gpu) == Transport::kNetSocket;
  }
  std::vector<std::pair<int, double>> node_net;
  for (const NicUse& u : nic_use) {
    if (node_net.empty() || node_net.back().first != u.key.first) {
      node_net.emplace_back(u.key.first, 0.0);
    }
    node_net.back().second += u.gbps;
    out.nic_gbps.emplace_back(u.key.second, u.gbps);
  }
  for (auto& [node, gbps] : node_net) {
    if (out.socket) gbps = std::min(gbps, tables.socket_max_gbps_per_node);
    out.total += gbps;
  }
  out.share.reserve(members.size());
  for (int m : members) {
    const GpuRef& g = gpus[m];
    const NodeCostModel& nm = model.node_model(g.node);
    double share = 0;
    for (int c : NicsCarrying(nm, g.gpu))
      share += nm.NicGbps(g.gpu, c) / nic_at({g.node, c})->users;
    if (out.socket)
      share =
          std::min(share, node_at(node_net, g.node)->second / node_at(node_users, g.node)->second);
    out.share.push_back(share);
  }
  return out;
}

StatusOr<CostModel::Prepared> CostModel::Prepare(std::span<const GpuRef> gpus, bool detail) const {
  Prepared p;
  p.n = static_cast<int>(gpus.size());
  if (gpus.empty()) return InvalidArgumentError("cost: empty GPU set");
  RETURN_IF_ERROR(CheckSet(gpus, p));
  p.islands.reserve(p.nodes);  // an island holds one node or more
  GroupIslands(gpus, p);
  for (Island& isl : p.islands) {
    std::stable_sort(isl.members.begin(), isl.members.end(), [&](int a, int b) {
      auto pos = [&](int m) {
        return std::find(isl.nodes.begin(), isl.nodes.end(), gpus[m].node) - isl.nodes.begin();
      };
      return pos(a) < pos(b);
    });
    if (isl.nvlink_domain < 0) {
      PrepareNodeIsland(gpus, detail, p.multi_node, isl);
    } else {
      PrepareDomainIsland(gpus, detail, isl);
    }
    AddIslandNetwork(gpus, detail, p.multi_node, isl);
  }
  return p;
}

// Every GPU known and listed once (else the first bad one in input order, named); the set's
// node count.
Status CostModel::CheckSet(std::span<const GpuRef> gpus, Prepared& p) const {
  auto node_known = [&](const GpuRef& g) {
    return g.node >= 0 && g.node < static_cast<int>(cluster_->nodes.size());
  };
  auto gpu_known = [&](const GpuRef& g) {
    return g.gpu >= 0 && g.gpu < node_model(g.node).num_gpus();
  };
  // The first bad GPU in input order, named (run only when the set is known to be bad).
  auto first_error = [&]() -> Status {
    std::set<std::pair<int, int>> seen;
    for (const GpuRef& g : gpus) {
      if (!node_known(g)) {
        return InvalidArgumentError("cost: node id " + std::to_string(g.node) + " out of range");
      }
      if (!gpu_known(g)) {
        return InvalidArgumentError("cost: node \"" + cluster_->nodes[g.node].name +
                                    "\" has no GPU position " + std::to_string(g.gpu));
      }
      if (!seen.insert({g.node, g.gpu}).second) {
        return InvalidArgumentError("cost: GPU " + GpuName(g, true) + " listed twice");
      }
    }
    return InternalError("cost: a bad GPU set with no bad GPU");
  };
  std::vector<std::pair<int, int>> sorted;
  sorted.reserve(gpus.size());
  for (const GpuRef& g : gpus) {
    if (!node_known(g) || !gpu_known(g)) return first_error();
    sorted.emplace_back(g.node, g.gpu);
  }
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) return first_error();
  p.nodes = 0;
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (i == 0 || sorted[i].first != sorted[i - 1].first) ++p.nodes;
  }
  p.multi_node = p.nodes > 1;
  return OkStatus();
}

// The islands of the set, in first-seen order, each member under its node.
void CostModel::GroupIslands(std::span<const GpuRef> gpus, Prepared& p) const {
  std::map<int, int> island_of_key;
  for (int i = 0; i < p.n; ++i) {
    const int node = gpus[i].node;
    int dom = cluster_->nodes[node].nvlink_domain;
    if (dom >= static_cast<int>(cluster_->nvlink_domains.size())) dom = -1;
    if (dom >= 0 && cluster_->nvlink_domains[dom].gpu_bandwidth_gbps <= 0 &&
        !node_model(node).switched()) {
      dom = -1;  // a domain without a known per-GPU rate over non-switched nodes: per node
    }
    const int key = dom >= 0 ? dom : -1 - node;
    auto [it, inserted] = island_of_key.emplace(key, static_cast<int>(p.islands.size()));
    if (inserted) {
      p.islands.emplace_back();
      p.islands.back().nvlink_domain = dom;
    }
    Island& isl = p.islands[it->second];
    if (std::find(isl.nodes.begin(), isl.nodes.end(), node) == isl.nodes.end()) {
      isl.nodes.push_back(node);
    }
    isl.members.push_back(i);
  }
}

// An island of one node: its best ring through the members (their new order), its NVLS rate.
void CostModel::PrepareNodeIsland(std::span<const GpuRef> gpus, bool detail, bool multi_node,
                                  Island& isl) const {
  const int k = static_cast<int>(isl.members.size());
  const int node = isl.nodes[0];
  const NodeCostModel& m = node_model(node);
  std::vector<int> pos(k), order(k);
  for (int i = 0; i < k; ++i) pos[i] = gpus[isl.members[i]].gpu;
  bool fabric = m.switched();
  double min_port = kInf;
  for (int g : pos) {
    fabric = fabric && m.PortGbps(g) > 0;
    min_port = std::min(min_port, m.PortGbps(g));
  }
  isl.fabric = fabric;
  isl.min_port_eff = fabric ? min_port : 0;
  if (k >= 2) {
    NodeCostModel::Ring ring = m.BestRing(pos, order.data());
    std::vector<int> by_pos(m.num_gpus(), -1);
    for (int i = 0; i < k; ++i) by_pos[pos[i]] = isl.members[i];
    for (int i = 0; i < k; ++i) isl.members[i] = by_pos[order[i]];
    isl.ring_gbps = ring.gbps;
    isl.sum_latency_us = ring.sum_latency_us;
    isl.alpha_intra_us = ring.sum_latency_us / k;
    if (detail) {
      isl.ring_hop = Hop{GpuName({node, ring.from}, multi_node),
                         GpuName({node, ring.to}, multi_node),
                         m.EdgePath(ring.from, ring.to),
                         m.EdgeTransport(ring.from, ring.to),
                         ring.gbps,
                         ""};
    }
    isl.nvls_busbw = m.NvlsBusBwGbps(pos);
  }
}

// An island of a multi-node NVLink domain: one switched fabric at the domain's per-GPU rate.
void CostModel::PrepareDomainIsland(std::span<const GpuRef> gpus, bool detail, Island& isl) const {
  const int k = static_cast<int>(isl.members.size());
  const double eff_nv = tables_.Efficiency(Transport::kNVLink);
  const topo::NvlinkDomain& dom = cluster_->nvlink_domains[isl.nvlink_domain];
  double min_raw = kInf;
  int worst = 0;
  int gen = 0;
  for (int i = 0; i < k; ++i) {
    const GpuRef& g = gpus[isl.members[i]];
    const NodeCostModel& m = node_model(g.node);
    gen = std::max(gen, m.nvlink_gen());
    double raw = dom.gpu_bandwidth_gbps > 0 ? dom.gpu_bandwidth_gbps : m.PortRawGbps(g.gpu);
    if (raw < min_raw) {
      min_raw = raw;
      worst = i;
    }
  }
  isl.fabric = true;
  isl.min_port_eff = min_raw * eff_nv;
  if (k >= 2) {
    isl.ring_gbps = min_raw * eff_nv;
    isl.alpha_intra_us = tables_.LatencyUs(Transport::kNVLink);
    isl.sum_latency_us = k * isl.alpha_intra_us;
    if (detail) {
      const GpuRef& a = gpus[isl.members[worst]];
      const GpuRef& b = gpus[isl.members[(worst + 1) % k]];
      std::string path = a.node == b.node ? node_model(a.node).EdgePath(a.gpu, b.gpu) : "MNNVL";
      isl.ring_hop =
          Hop{GpuName(a, true), GpuName(b, true), path, Transport::kNVLink, isl.ring_gbps, ""};
    }
    isl.nvls_busbw = min_raw * tables_.NvlsFactor(gen);
  }
}

// The island's share of the network: its NICs' rate, transport, names and rails.
void CostModel::AddIslandNetwork(std::span<const GpuRef> gpus, bool detail, bool multi_node,
                                 Island& isl) const {
  NetShare net = ComputeNet(*this, gpus, isl.members, multi_node && isl.nodes.size() > 1, detail);
  isl.net_gbps = net.total;
  isl.net_transport = net.socket ? Transport::kNetSocket : Transport::kNetIB;
  if (detail) isl.nics = JoinNames(net.names);
  isl.share_gbps = std::move(net.share);
  if (cluster_->rails.count > 0) {
    for (const auto& [nic, gbps] : net.nic_gbps) {
      const int rail = nic >= 0 && nic < cluster_->rails.count ? nic : -1;
      isl.rail_gbps.emplace_back(rail, gbps);
      isl.raw_net_gbps += gbps;
      if (rail >= 0) isl.rails.push_back(rail);
    }
    std::sort(isl.rails.begin(), isl.rails.end());
    isl.rails.erase(std::unique(isl.rails.begin(), isl.rails.end()), isl.rails.end());
  }
}

}  // namespace toposched::cost
