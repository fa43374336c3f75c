#include "cost/cost_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "core/strings.h"
#include "cost/algorithms.h"

namespace toposched::cost {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Milliseconds to move `bytes` at `gbps` GB/s.
double Ms(double bytes, double gbps) { return gbps > 0 ? bytes / (gbps * 1e9) * 1e3 : kInf; }

std::string Normalize(std::string_view s) {
  std::string out;
  for (char c : ToLower(Trim(s))) {
    if (c != '_' && c != '-' && c != ' ') out += c;
  }
  return out;
}

}  // namespace

const char* CollectiveName(Collective c) {
  switch (c) {
    case Collective::kAllReduce:
      return "allreduce";
    case Collective::kAllGather:
      return "allgather";
    case Collective::kReduceScatter:
      return "reducescatter";
    case Collective::kAllToAll:
      return "alltoall";
    case Collective::kSendRecv:
      return "sendrecv";
  }
  return "?";
}

StatusOr<Collective> ParseCollective(std::string_view s) {
  std::string n = Normalize(s);
  if (n == "allreduce") return Collective::kAllReduce;
  if (n == "allgather") return Collective::kAllGather;
  if (n == "reducescatter") return Collective::kReduceScatter;
  if (n == "alltoall") return Collective::kAllToAll;
  if (n == "sendrecv" || n == "p2p") return Collective::kSendRecv;
  return InvalidArgumentError("unknown collective \"" + std::string(s) +
                              "\" (allreduce, allgather, reducescatter, alltoall, sendrecv)");
}

const char* AlgorithmName(Algorithm a) {
  switch (a) {
    case Algorithm::kAuto:
      return "auto";
    case Algorithm::kRing:
      return "ring";
    case Algorithm::kTree:
      return "tree";
    case Algorithm::kHierarchical:
      return "hierarchical";
    case Algorithm::kNvls:
      return "nvls";
    case Algorithm::kNvlsTree:
      return "nvls-tree";
    case Algorithm::kDirect:
      return "direct";
  }
  return "?";
}

StatusOr<Algorithm> ParseAlgorithm(std::string_view s) {
  std::string n = Normalize(s);
  if (n == "auto") return Algorithm::kAuto;
  if (n == "ring") return Algorithm::kRing;
  if (n == "tree") return Algorithm::kTree;
  if (n == "hierarchical" || n == "hier") return Algorithm::kHierarchical;
  if (n == "nvls") return Algorithm::kNvls;
  if (n == "nvlstree") return Algorithm::kNvlsTree;
  if (n == "direct") return Algorithm::kDirect;
  return InvalidArgumentError("unknown algorithm \"" + std::string(s) +
                              "\" (auto, ring, tree, hierarchical, nvls, nvls-tree, direct)");
}

const char* TransportName(Transport t) {
  switch (t) {
    case Transport::kNVLink:
      return "NVLink";
    case Transport::kPcieP2P:
      return "PCIe P2P";
    case Transport::kShm:
      return "SHM";
    case Transport::kNetIB:
      return "NET/IB";
    case Transport::kNetSocket:
      return "NET/Socket";
  }
  return "?";
}

double BusFactor(Collective c, int n) {
  if (n < 2) return 0;
  switch (c) {
    case Collective::kAllReduce:
      return 2.0 * (n - 1) / n;
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kAllToAll:
      return static_cast<double>(n - 1) / n;
    case Collective::kSendRecv:
      return 1.0;
  }
  return 0;
}

// GPUs of the set that share one NVLink fabric: a node, or the nodes of one multi-node NVLink
// domain. Collectives cross between islands over the network.
struct CostModel::Island {
  int nvlink_domain = -1;    // -1: a single node
  std::vector<int> members;  // indices into the input, in ring order once prepared
  std::vector<int> nodes;    // distinct nodes, first-seen order
  // Inside the island.
  double ring_gbps = kInf;    // ring capacity (kInf for one GPU)
  double sum_latency_us = 0;  // Σ alpha over the ring's hops
  Hop ring_hop;               // the ring's bottleneck hop
  double nvls_busbw = 0;      // 0: no NVLS
  double min_port_eff = 0;    // switched fabric: smallest port × efficiency (0: not switched)
  bool fabric = false;        // every member on one switched fabric
  double alpha_intra_us = 0;  // mean per-hop alpha inside
  // Network side.
  double net_gbps = 0;  // Σ distinct NICs the members use (× efficiency, GDR, socket cap)
  Transport net_transport = Transport::kNetIB;
  std::string nics;                // NIC names for hops
  std::vector<double> share_gbps;  // per member (same order): its NIC's GB/s / GPUs sharing it
  // Rails (Cluster::rails): per distinct NIC the members use, its rail (-1: not on a rail) and
  // GB/s before the socket cap; their sum; the rails used, sorted.
  std::vector<std::pair<int, double>> rail_gbps;
  double raw_net_gbps = 0;
  std::vector<int> rails;
  bool HasRail(int r) const { return std::binary_search(rails.begin(), rails.end(), r); }
};

struct CostModel::Prepared {
  std::vector<Island> islands;
  int n = 0;
  int nodes = 0;
  bool multi_node = false;
};

CostModel::CostModel(const topo::Cluster& cluster, Options options, const CostTables& tables,
                     const topo::HardwareTable& hw)
    : cluster_(&cluster), options_(options), tables_(tables) {
  profile_models_.reserve(cluster.profiles.size());
  for (const topo::HardwareProfile& p : cluster.profiles) {
    profile_models_.emplace_back(p.topology, tables, hw);
  }
}

std::unique_ptr<CostModel> CostModel::ForNode(const topo::NodeTopology& topology, Options options,
                                              const CostTables& tables,
                                              const topo::HardwareTable& hw) {
  auto cluster = std::make_unique<topo::Cluster>();
  cluster->name = "node";
  topo::HardwareProfile profile;
  profile.name = "node";
  profile.topology = topology;
  cluster->profiles.push_back(std::move(profile));
  topo::ClusterNode node;
  node.name = "node0";
  cluster->nodes.push_back(node);
  auto model = std::unique_ptr<CostModel>(new CostModel(*cluster, options, tables, hw));
  model->owned_ = std::move(cluster);
  return model;
}

const NodeCostModel& CostModel::node_model(int node) const {
  return profile_models_[cluster_->nodes[node].profile];
}

bool CostModel::OnRail(const GpuRef& a) const {
  const int rails = cluster_->rails.count;
  const std::vector<int>& na = node_model(a.node).NicsOf(a.gpu);
  return std::any_of(na.begin(), na.end(), [&](int c) { return c >= 0 && c < rails; });
}

bool CostModel::SameRail(const GpuRef& a, const GpuRef& b) const {
  if (a.gpu == b.gpu && cluster_->nodes[a.node].profile == cluster_->nodes[b.node].profile) {
    return OnRail(a);  // the same GPU of the same hardware: the same nearest NICs
  }
  const int rails = cluster_->rails.count;
  const std::vector<int>& nb = node_model(b.node).NicsOf(b.gpu);
  for (int c : node_model(a.node).NicsOf(a.gpu)) {
    if (c >= 0 && c < rails && std::find(nb.begin(), nb.end(), c) != nb.end()) return true;
  }
  return false;
}

std::string CostModel::GpuName(const GpuRef& g, bool multi_node) const {
  const std::string& gpu = node_model(g.node).gpu_name(g.gpu);
  return multi_node ? cluster_->nodes[g.node].name + "/" + gpu : gpu;
}

namespace {

std::string JoinNames(const std::vector<std::string>& names) {
  if (names.size() > 4) return std::to_string(names.size()) + " NICs";
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ",") + n;
  return out;
}

// The network bandwidth a group of GPUs (`members`, indices into `gpus`) has together. Each
// distinct NIC counts once, at the best rate any member gets through it: NCCL sends a channel's
// network traffic through the GPU closest to the NIC. `share`: what each member gets through
// its own NICs when every member sends at once (NICs split evenly among the members that have
// them). NET/Socket is capped per node.
struct NetShare {
  double total = 0;
  bool socket = false;
  std::vector<double> share;
  std::vector<std::string> names;
  std::vector<std::pair<int, double>> nic_gbps;  // per distinct NIC: its position, GB/s
};

// The NICs whose traffic GPU g of `nm` carries: its own, or the host's (-1) when it has none.
std::span<const int> NicsCarrying(const NodeCostModel& nm, int g) {
  static constexpr int kHostNic[1] = {-1};
  const std::vector<int>& own = nm.NicsOf(g);
  return own.empty() ? std::span<const int>(kHostNic) : std::span<const int>(own);
}

// names: fill NetShare::names (NIC names, node-prefixed with prefix_node); without it they stay
// empty and nothing else changes.
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

}  // namespace

StatusOr<CostModel::Prepared> CostModel::Prepare(std::span<const GpuRef> gpus, bool detail) const {
  Prepared p;
  p.n = static_cast<int>(gpus.size());
  if (gpus.empty()) return InvalidArgumentError("cost: empty GPU set");
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
  p.islands.reserve(p.nodes);  // an island holds one node or more

  // Group into islands, first-seen order; members grouped by node inside an island.
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
  const double eff_nv = tables_.Efficiency(Transport::kNVLink);
  for (Island& isl : p.islands) {
    std::stable_sort(isl.members.begin(), isl.members.end(), [&](int a, int b) {
      auto pos = [&](int m) {
        return std::find(isl.nodes.begin(), isl.nodes.end(), gpus[m].node) - isl.nodes.begin();
      };
      return pos(a) < pos(b);
    });
    const int k = static_cast<int>(isl.members.size());
    if (isl.nvlink_domain < 0) {
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
          isl.ring_hop = Hop{GpuName({node, ring.from}, p.multi_node),
                             GpuName({node, ring.to}, p.multi_node),
                             m.EdgePath(ring.from, ring.to),
                             m.EdgeTransport(ring.from, ring.to),
                             ring.gbps,
                             ""};
        }
        isl.nvls_busbw = m.NvlsBusBwGbps(pos);
      }
    } else {
      // Multi-node NVLink domain: one switched fabric at the domain's per-GPU rate.
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
    NetShare net =
        ComputeNet(*this, gpus, isl.members, p.multi_node && isl.nodes.size() > 1, detail);
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
  return p;
}

namespace {

struct Candidate {
  Algorithm algorithm = Algorithm::kRing;
  double time_ms = kInf;
  Hop bottleneck;
  std::vector<Hop> hops;
  std::vector<int> order;  // input indices
};

}  // namespace

StatusOr<Estimate> CostModel::Evaluate(Collective collective, std::span<const GpuRef> gpus,
                                       double bytes, Algorithm algorithm) const {
  return Run(collective, gpus, bytes, algorithm, /*detail=*/true);
}

StatusOr<double> CostModel::TimeMs(Collective collective, std::span<const GpuRef> gpus,
                                   double bytes, Algorithm algorithm) const {
  ASSIGN_OR_RETURN(Estimate e, Run(collective, gpus, bytes, algorithm, /*detail=*/false));
  return e.time_ms;
}

StatusOr<Estimate> CostModel::Run(Collective collective, std::span<const GpuRef> gpus, double bytes,
                                  Algorithm algorithm, bool detail) const {
  if (!(bytes >= 0) || !std::isfinite(bytes)) {
    return InvalidArgumentError("cost: bytes must be a finite number >= 0");
  }
  ASSIGN_OR_RETURN(Prepared p, Prepare(gpus, detail));
  const bool p2p = collective == Collective::kAllToAll || collective == Collective::kSendRecv;
  if (p2p && algorithm != Algorithm::kAuto && algorithm != Algorithm::kDirect) {
    return InvalidArgumentError(std::string("cost: ") + CollectiveName(collective) +
                                " has only the direct algorithm");
  }
  if (!p2p && algorithm == Algorithm::kDirect) {
    return InvalidArgumentError(std::string("cost: ") + CollectiveName(collective) +
                                " has no direct algorithm");
  }
  if (collective != Collective::kAllReduce &&
      (algorithm == Algorithm::kTree || algorithm == Algorithm::kHierarchical ||
       algorithm == Algorithm::kNvls || algorithm == Algorithm::kNvlsTree)) {
    return InvalidArgumentError(std::string("cost: ") + AlgorithmName(algorithm) +
                                " applies to allreduce only");
  }
  const int n = p.n;
  const int ni = static_cast<int>(p.islands.size());
  Estimate est;
  est.ranks = n;
  est.nodes = p.nodes;
  if (n < 2) {
    est.algorithm = p2p ? Algorithm::kDirect : Algorithm::kRing;
    if (detail) est.order.assign(gpus.begin(), gpus.end());
    return est;
  }
  const double base_ms = tables_.base_latency_us * 1e-3;
  const bool multi = p.multi_node;
  // Without detail no hop is named: its strings stay empty and hop lists are not kept.
  auto name = [&](int m) { return detail ? GpuName(gpus[m], multi) : std::string(); };
  const bool rails = cluster_->RailsPriced();
  // Network GB/s island a sends to island b with: its NICs' rate over the oversubscription on
  // the way. On a rail-optimised network each NIC pays its own factor: same rail as one of b's
  // NICs (stays on the rail switch), another rail (climbs above the rail switches), or no rail.
  auto link = [&](int a, int b) {
    const Island& from = p.islands[a];
    const Island& to = p.islands[b];
    if (!rails) return from.net_gbps / cluster_->Oversubscription(from.nodes[0], to.nodes[0]);
    const topo::Cluster::RailFactors f = cluster_->RailOversubscription(from.nodes[0], to.nodes[0]);
    if (from.raw_net_gbps <= 0) return from.net_gbps / f.tree;
    double eff = 0;
    for (const auto& [rail, gbps] : from.rail_gbps) {
      eff += gbps / (rail < 0 ? f.tree : to.HasRail(rail) ? f.same_rail : f.cross_rail);
    }
    return from.net_gbps * eff / from.raw_net_gbps;
  };
  // The factor one GPU's traffic to a GPU of another island pays: same rail when their nearest
  // NICs share one, else another rail, else (no NIC on a rail) the tree's.
  auto gpu_factor = [&](const GpuRef& x, const GpuRef& y) {
    if (!rails) return cluster_->Oversubscription(x.node, y.node);
    const topo::Cluster::RailFactors f = cluster_->RailOversubscription(x.node, y.node);
    return SameRail(x, y) ? f.same_rail : OnRail(x) ? f.cross_rail : f.tree;
  };
  auto intra_hop = [&](int a, int b) {
    const GpuRef& ga = gpus[a];
    const GpuRef& gb = gpus[b];
    Hop h;
    h.from = name(a);
    h.to = name(b);
    if (ga.node == gb.node) {
      const NodeCostModel& m = node_model(ga.node);
      if (detail) h.path = m.EdgePath(ga.gpu, gb.gpu);
      h.transport = m.EdgeTransport(ga.gpu, gb.gpu);
      h.bandwidth_gbps = m.switched() && m.PortGbps(ga.gpu) > 0 && m.PortGbps(gb.gpu) > 0
                             ? std::min(m.PortGbps(ga.gpu), m.PortGbps(gb.gpu))
                             : m.EdgeGbps(ga.gpu, gb.gpu);
    } else {
      if (detail) h.path = "MNNVL";
      h.transport = Transport::kNVLink;
      h.bandwidth_gbps = 0;
      for (const Island& isl : p.islands) {
        if (std::find(isl.members.begin(), isl.members.end(), a) != isl.members.end()) {
          h.bandwidth_gbps = isl.min_port_eff;
        }
      }
    }
    return h;
  };
  auto net_hop = [&](int from_island, int a, int b, double gbps) {
    const Island& isl = p.islands[from_island];
    if (!detail) return Hop{"", "", "", isl.net_transport, gbps, ""};
    return Hop{name(a), name(b), "NET", isl.net_transport, gbps, isl.nics};
  };
  std::vector<int> ring_order;
  for (const Island& isl : p.islands) {
    if (detail) ring_order.insert(ring_order.end(), isl.members.begin(), isl.members.end());
  }

  std::vector<Candidate> candidates;

  // Ring (AllReduce, AllGather, ReduceScatter).
  auto ring = [&]() {
    Candidate c;
    c.algorithm = Algorithm::kRing;
    const bool ar = collective == Collective::kAllReduce;
    const double traffic = ar ? 2.0 * (n - 1) / n : static_cast<double>(n - 1) / n;
    double busbw = kInf;
    double alpha_sum = 0;
    for (const Island& isl : p.islands) {
      if (isl.members.size() >= 2 && isl.ring_gbps < busbw) {
        busbw = isl.ring_gbps;
        c.bottleneck = isl.ring_hop;
      }
      if (ni == 1) {
        alpha_sum += isl.sum_latency_us;
      } else if (!isl.members.empty()) {
        alpha_sum += isl.alpha_intra_us * (isl.members.size() - 1);
      }
    }
    for (int i = 0; i < ni && ni >= 2; ++i) {
      const int next = (i + 1) % ni, prev = (i + ni - 1) % ni;
      const double bw = std::min(link(i, next), link(i, prev));
      alpha_sum += tables_.LatencyUs(p.islands[i].net_transport);
      if (bw < busbw) {
        busbw = bw;
        c.bottleneck = net_hop(i, p.islands[i].members.back(), p.islands[next].members.front(), bw);
      }
    }
    c.bottleneck.bandwidth_gbps = busbw;
    c.time_ms = base_ms + traffic * alpha_sum * 1e-3 + traffic * Ms(bytes, busbw);
    if (!detail) return c;
    c.order = ring_order;
    for (int i = 0; i < ni; ++i) {
      const Island& isl = p.islands[i];
      const int k = static_cast<int>(isl.members.size());
      for (int j = 0; j + 1 < k; ++j)
        c.hops.push_back(intra_hop(isl.members[j], isl.members[j + 1]));
      if (ni == 1 && k >= 2) c.hops.push_back(intra_hop(isl.members[k - 1], isl.members[0]));
      if (ni >= 2) {
        const int next = (i + 1) % ni;
        const double bw = std::min(link(i, next), link(i, (i + ni - 1) % ni));
        c.hops.push_back(net_hop(i, isl.members.back(), p.islands[next].members.front(), bw));
      }
    }
    return c;
  };

  // The double binary tree across islands, shared by tree and NVLS-tree: per island, the
  // network rate it gets over its traffic (TreeNetTraffic), and the hop that names it.
  struct Across {
    std::vector<double> algbw;  // per island, GB/s
    std::vector<Hop> bottleneck;
    std::vector<Hop> hops;
    double alpha_us = 0;
  };
  auto tree_across = [&]() {
    Across a;
    const DoubleBinaryTree dbt = MakeDoubleBinaryTree(ni);
    const std::vector<int>* parent = dbt.parents;
    const std::vector<double> traffic = TreeNetTraffic(dbt);
    std::vector<double> net_bw(ni);
    for (int i = 0; i < ni; ++i) net_bw[i] = p.islands[i].net_gbps;
    for (int t = 0; t < 2; ++t) {
      for (int i = 0; i < ni; ++i) {
        int up = parent[t][i];
        if (up < 0) continue;
        const double bw = link(i, up);
        net_bw[i] = std::min(net_bw[i], bw);
        net_bw[up] = std::min(net_bw[up], link(up, i));
        if (detail) {
          a.hops.push_back(
              net_hop(i, p.islands[i].members.front(), p.islands[up].members.front(), bw));
        }
      }
    }
    for (int i = 0; i < ni; ++i) {
      const double bw = TreeNetAlgBwGbps(net_bw[i], traffic[i]);
      a.algbw.push_back(bw);
      int up = parent[0][i] >= 0 ? parent[0][i] : parent[1][i];
      // The root of both trees (possible for an odd island count): name the hop by one of its
      // children instead.
      for (int t = 0; t < 2 && up < 0; ++t) {
        for (int k = 0; k < ni && up < 0; ++k) {
          if (parent[t][k] == i) up = k;
        }
      }
      if (up < 0) up = i;
      a.bottleneck.push_back(
          net_hop(i, p.islands[i].members.front(), p.islands[up].members.front(), bw));
    }
    a.alpha_us = dbt.depth * tables_.LatencyUs(p.islands[0].net_transport);
    return a;
  };

  // Tree (AllReduce): NCCL's double binary tree over islands, a chain inside each island.
  auto tree = [&]() {
    Candidate c;
    c.algorithm = Algorithm::kTree;
    double algbw = kInf;
    double chain_alpha = 0;
    for (const Island& isl : p.islands) {
      const int k = static_cast<int>(isl.members.size());
      if (k >= 2) {
        double chain = TreeChainAlgBwGbps(k, isl.ring_gbps);
        if (chain < algbw) {
          algbw = chain;
          c.bottleneck = isl.ring_hop;
        }
      }
      chain_alpha = std::max(chain_alpha, isl.alpha_intra_us * std::max(0, k - 1));
    }
    double net_alpha = 0;
    if (ni >= 2) {
      Across a = tree_across();
      c.hops = std::move(a.hops);
      for (int i = 0; i < ni; ++i) {
        if (a.algbw[i] < algbw) {
          algbw = a.algbw[i];
          c.bottleneck = a.bottleneck[i];
        }
      }
      net_alpha = a.alpha_us;
    }
    c.bottleneck.bandwidth_gbps = algbw;
    c.time_ms = base_ms + 2 * (net_alpha + chain_alpha) * 1e-3 + Ms(bytes, algbw);
    if (!detail) return c;
    c.order = ring_order;
    for (const Island& isl : p.islands) {
      for (size_t j = 0; j + 1 < isl.members.size(); ++j) {
        c.hops.push_back(intra_hop(isl.members[j], isl.members[j + 1]));
      }
    }
    return c;
  };

  // NVLS-tree (AllReduce): NVLS inside every island (each a switched fabric with NVLink SHARP
  // and 2+ GPUs), the double binary tree across 2+ islands.
  // Each member of an island to the island's NVSwitch, at its NVLS rate (NVLS and NVLS-tree).
  auto nvswitch_hops = [&](const Island& isl, Candidate& c) {
    if (!detail) return;
    for (int m : isl.members) {
      Hop h = intra_hop(m, m == isl.members.front() ? isl.members.back() : isl.members.front());
      h.to = "NVSwitch";
      h.bandwidth_gbps = isl.nvls_busbw;
      c.hops.push_back(h);
    }
  };
  auto nvls_tree = [&]() -> std::optional<Candidate> {
    if (ni < 2) return std::nullopt;
    for (const Island& isl : p.islands) {
      if (isl.members.size() < 2 || isl.nvls_busbw <= 0) return std::nullopt;
    }
    Candidate c;
    c.algorithm = Algorithm::kNvlsTree;
    Across a = tree_across();
    c.hops = std::move(a.hops);
    double algbw = kInf;
    for (int i = 0; i < ni; ++i) {
      const Island& isl = p.islands[i];
      const double bw =
          NvlsTreeAllReduceAlgBwGbps(isl.nvls_busbw, static_cast<int>(isl.members.size()),
                                     tables_.nvls_tree_efficiency, a.algbw[i], 1.0);
      if (bw < algbw) {
        algbw = bw;
        if (bw < a.algbw[i]) {
          c.bottleneck = isl.ring_hop;
          c.bottleneck.to = "NVSwitch";
        } else {
          c.bottleneck = a.bottleneck[i];
        }
      }
    }
    c.bottleneck.bandwidth_gbps = algbw;
    c.time_ms = base_ms + 2 * (tables_.nvls_latency_us + a.alpha_us) * 1e-3 + Ms(bytes, algbw);
    c.order = ring_order;
    for (const Island& isl : p.islands) nvswitch_hops(isl, c);
    return c;
  };

  // Hierarchical (AllReduce): reduce-scatter inside each island, AllReduce of each GPU's shard
  // across islands over its NIC, all-gather inside. Needs the same GPU count per island.
  auto hierarchical = [&]() -> std::optional<Candidate> {
    if (ni < 2) return std::nullopt;
    const int g = static_cast<int>(p.islands[0].members.size());
    for (const Island& isl : p.islands) {
      if (static_cast<int>(isl.members.size()) != g) return std::nullopt;
    }
    if (g < 2) return std::nullopt;
    Candidate c;
    c.algorithm = Algorithm::kHierarchical;
    const double part = static_cast<double>(g - 1) / g;
    double rs_ms = 0;
    Hop rs_hop;
    for (const Island& isl : p.islands) {
      double t = part * (Ms(bytes, isl.ring_gbps) + isl.sum_latency_us * 1e-3);
      if (t > rs_ms) {
        rs_ms = t;
        rs_hop = isl.ring_hop;
      }
    }
    double shard_bw = kInf;
    Hop net;
    auto shard_factor = [&](int i, int j) {  // member j of island i to its peers
      const int next = (i + 1) % ni, prev = (i + ni - 1) % ni;
      const GpuRef& x = gpus[p.islands[i].members[j]];
      return std::max(gpu_factor(x, gpus[p.islands[next].members[j]]),
                      gpu_factor(gpus[p.islands[prev].members[j]], x));
    };
    for (int i = 0; i < ni; ++i) {
      const int next = (i + 1) % ni;
      const Island& isl = p.islands[i];
      for (int j = 0; j < g; ++j) {
        double bw = isl.share_gbps[j] / shard_factor(i, j);
        if (bw < shard_bw) {
          shard_bw = bw;
          net = net_hop(i, isl.members[j], p.islands[next].members[j], bw);
        }
      }
    }
    const double inter_traffic = 2.0 * (ni - 1) / ni;
    const double inter_ms = inter_traffic * Ms(bytes / g, shard_bw) +
                            2.0 * (ni - 1) * tables_.LatencyUs(p.islands[0].net_transport) * 1e-3;
    c.time_ms = base_ms + 2 * rs_ms + inter_ms;
    c.bottleneck = inter_ms >= rs_ms ? net : rs_hop;
    if (!detail) return c;
    c.order = ring_order;
    for (int i = 0; i < ni; ++i) {
      const Island& isl = p.islands[i];
      for (int j = 0; j + 1 < g; ++j)
        c.hops.push_back(intra_hop(isl.members[j], isl.members[j + 1]));
      c.hops.push_back(intra_hop(isl.members[g - 1], isl.members[0]));
      const int next = (i + 1) % ni;
      for (int j = 0; j < g; ++j) {
        c.hops.push_back(net_hop(i, isl.members[j], p.islands[next].members[j], isl.share_gbps[j]));
      }
    }
    return c;
  };

  // NVLS (AllReduce): every GPU in one switched fabric with NVLink SHARP.
  auto nvls = [&]() -> std::optional<Candidate> {
    if (ni != 1 || p.islands[0].nvls_busbw <= 0) return std::nullopt;
    const Island& isl = p.islands[0];
    Candidate c;
    c.algorithm = Algorithm::kNvls;
    const double traffic = 2.0 * (n - 1) / n;
    c.time_ms = base_ms + tables_.nvls_latency_us * 1e-3 + traffic * Ms(bytes, isl.nvls_busbw);
    c.bottleneck = isl.ring_hop;
    c.bottleneck.to = "NVSwitch";
    c.bottleneck.bandwidth_gbps = isl.nvls_busbw;
    c.order = ring_order;
    nvswitch_hops(isl, c);
    return c;
  };

  // AllToAll: every rank sends bytes/n to every other rank at once.
  auto alltoall = [&]() {
    Candidate c;
    c.algorithm = Algorithm::kDirect;
    double worst_ms = 0;
    double alpha = 0;
    for (int i = 0; i < ni; ++i) {
      const Island& isl = p.islands[i];
      const int k = static_cast<int>(isl.members.size());
      if (k >= 2) {
        if (isl.fabric) {
          double bw = isl.min_port_eff;
          double t = Ms(bytes * (k - 1) / n, bw);
          if (t > worst_ms) {
            worst_ms = t;
            c.bottleneck = isl.ring_hop;
            c.bottleneck.to = "NVSwitch";
            c.bottleneck.bandwidth_gbps = bw * n / (n - 1.0);
          }
        } else {
          for (int a : isl.members) {
            for (int b : isl.members) {
              if (a == b) continue;
              Hop h = intra_hop(a, b);
              double t = Ms(bytes / n, h.bandwidth_gbps);
              if (t > worst_ms) {
                worst_ms = t;
                c.bottleneck = h;
                c.bottleneck.bandwidth_gbps = h.bandwidth_gbps * n / (n - 1.0);
              }
            }
          }
        }
        alpha = std::max(alpha, isl.alpha_intra_us);
      }
      if (ni >= 2) {
        double bw = isl.net_gbps;
        for (int j = 0; j < ni; ++j) {
          if (j != i) bw = std::min(bw, link(i, j));
        }
        double t = Ms(bytes * k * (n - k) / n, bw);
        alpha = std::max(alpha, tables_.LatencyUs(isl.net_transport));
        const int next = (i + 1) % ni;
        Hop h = net_hop(i, isl.members.front(), p.islands[next].members.front(), bw);
        if (t > worst_ms) {
          worst_ms = t;
          c.bottleneck = h;
          // Bus bandwidth this bound allows: bytes·(n-1)/n over the time.
          c.bottleneck.bandwidth_gbps = bw * (n - 1.0) / (k * (n - k));
        }
        if (detail) c.hops.push_back(std::move(h));
      }
    }
    c.time_ms = base_ms + (n - 1) * alpha * 1e-3 + worst_ms;
    if (!detail) return c;
    c.order.assign(gpus.size(), 0);
    for (int i = 0; i < n; ++i) c.order[i] = i;
    return c;
  };

  // Send/Recv: rank r sends `bytes` to rank r+1 (mod n) in the given order, all at once.
  auto sendrecv = [&]() {
    Candidate c;
    c.algorithm = Algorithm::kDirect;
    std::vector<int> island_of(n, 0);
    for (int i = 0; i < ni; ++i) {
      for (int m : p.islands[i].members) island_of[m] = i;
    }
    const int pairs = n == 2 ? 1 : n;
    std::vector<int> cross;  // senders whose receiver is in another island
    for (int r = 0; r < n; ++r) {
      if (island_of[r] != island_of[(r + 1) % n] && (r < pairs || n == 2)) cross.push_back(r);
    }
    NetShare net = ComputeNet(*this, gpus, cross, multi, detail);
    double bw_min = kInf, alpha = 0;
    for (int r = 0; r < pairs; ++r) {
      int a = r, b = (r + 1) % n;
      Hop h;
      if (island_of[a] == island_of[b]) {
        h = intra_hop(a, b);
      } else {
        const GpuRef& ga = gpus[a];
        const NodeCostModel& m = node_model(ga.node);
        int idx = static_cast<int>(std::find(cross.begin(), cross.end(), a) - cross.begin());
        double bw = net.share[idx] / gpu_factor(ga, gpus[b]);
        const std::vector<int>& nics = m.NicsOf(ga.gpu);
        h.transport = m.NetTransport(ga.gpu);
        h.bandwidth_gbps = bw;
        if (detail) {
          h.from = name(a);
          h.to = name(b);
          h.path = "NET";
          h.via = m.NicName(nics.empty() ? -1 : nics[0]);
        }
      }
      alpha = std::max(alpha, tables_.LatencyUs(h.transport));
      if (detail) c.hops.push_back(h);
      if (h.bandwidth_gbps < bw_min) {
        bw_min = h.bandwidth_gbps;
        c.bottleneck = h;
      }
    }
    c.time_ms = base_ms + alpha * 1e-3 + Ms(bytes, bw_min);
    if (!detail) return c;
    c.order.assign(n, 0);
    for (int i = 0; i < n; ++i) c.order[i] = i;
    return c;
  };

  switch (collective) {
    case Collective::kAllReduce:
      if (algorithm == Algorithm::kAuto || algorithm == Algorithm::kRing) {
        candidates.push_back(ring());
      }
      if ((algorithm == Algorithm::kAuto && options_.allow_tree) || algorithm == Algorithm::kTree) {
        candidates.push_back(tree());
      }
      if ((algorithm == Algorithm::kAuto && options_.allow_hierarchical) ||
          algorithm == Algorithm::kHierarchical) {
        if (auto h = hierarchical()) {
          candidates.push_back(std::move(*h));
        } else if (algorithm == Algorithm::kHierarchical) {
          return InvalidArgumentError(
              "cost: hierarchical needs GPUs on 2+ nodes (NVLink domains) with the same count, "
              "at least 2, on each");
        }
      }
      if ((algorithm == Algorithm::kAuto && options_.allow_nvls && options_.allow_nvls_tree) ||
          algorithm == Algorithm::kNvlsTree) {
        if (auto v = nvls_tree()) {
          candidates.push_back(std::move(*v));
        } else if (algorithm == Algorithm::kNvlsTree) {
          return InvalidArgumentError(
              "cost: nvls-tree needs 2+ nodes (NVLink domains), each with 2+ GPUs on one NVSwitch "
              "fabric with NVLink SHARP (NVLink 4+)");
        }
      }
      if ((algorithm == Algorithm::kAuto && options_.allow_nvls) || algorithm == Algorithm::kNvls) {
        if (auto v = nvls()) {
          candidates.push_back(std::move(*v));
        } else if (algorithm == Algorithm::kNvls) {
          return InvalidArgumentError(
              "cost: nvls needs every GPU on one NVSwitch fabric with NVLink SHARP (NVLink 4+)");
        }
      }
      break;
    case Collective::kAllGather:
    case Collective::kReduceScatter:
      candidates.push_back(ring());
      break;
    case Collective::kAllToAll:
      candidates.push_back(alltoall());
      break;
    case Collective::kSendRecv:
      candidates.push_back(sendrecv());
      break;
  }
  const Candidate* best = nullptr;
  for (const Candidate& c : candidates) {
    if (!best || c.time_ms < best->time_ms) best = &c;
  }
  if (!best || !std::isfinite(best->time_ms)) {
    return InternalError("cost: no algorithm gives a finite time for this set");
  }
  est.time_ms = best->time_ms;
  est.algorithm = best->algorithm;
  if (detail) {
    est.bottleneck = best->bottleneck;
    est.hops = best->hops;
    for (int i : best->order) est.order.push_back(gpus[i]);
  }
  est.algbw_gbps = est.time_ms > 0 ? bytes / (est.time_ms * 1e-3) / 1e9 : 0;
  est.busbw_gbps = est.algbw_gbps * BusFactor(collective, n);
  return est;
}

}  // namespace toposched::cost
