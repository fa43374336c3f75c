// One model function per collective × algorithm (NCCL's tuning is written the same way), over
// the prepared islands of a GPU set (cost/prepared.h), and the builder of links and hops they
// share; CostModel::Run, which checks the request, asks Candidates and keeps the fastest.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cost/algorithms.h"
#include "cost/prepared.h"

namespace toposched::cost {

CostModel::Collectives::Collectives(const CostModel& model, const Prepared& p,
                                    std::span<const GpuRef> gpus, Collective collective,
                                    double bytes, bool detail)
    : m_(model),
      p_(p),
      gpus_(gpus),
      collective_(collective),
      bytes_(bytes),
      detail_(detail),
      n_(p.n),
      ni_(static_cast<int>(p.islands.size())),
      base_ms_(model.tables().base_latency_us * 1e-3),
      multi_(p.multi_node),
      rails_(model.cluster().RailsPriced()) {
  for (const Island& isl : p_.islands) {
    if (detail_) ring_order_.insert(ring_order_.end(), isl.members.begin(), isl.members.end());
  }
}

// --- the shared builder: names, links, hops ---

// Without detail no hop is named: its strings stay empty and hop lists are not kept.
std::string CostModel::Collectives::Name(int m) const {
  return detail_ ? m_.GpuName(gpus_[m], multi_) : std::string();
}

// Network GB/s island a sends to island b with: its NICs' rate over the oversubscription on the
// way. On a rail-optimised network each NIC pays its own factor: same rail as one of b's NICs
// (stays on the rail switch), another rail (climbs above the rail switches), or no rail.
double CostModel::Collectives::Link(int a, int b) const {
  const Island& from = p_.islands[a];
  const Island& to = p_.islands[b];
  if (!rails_) return from.net_gbps / m_.cluster().Oversubscription(from.nodes[0], to.nodes[0]);
  const topo::Cluster::RailFactors f =
      m_.cluster().RailOversubscription(from.nodes[0], to.nodes[0]);
  if (from.raw_net_gbps <= 0) return from.net_gbps / f.tree;
  double eff = 0;
  for (const auto& [rail, gbps] : from.rail_gbps) {
    eff += gbps / (rail < 0 ? f.tree : to.HasRail(rail) ? f.same_rail : f.cross_rail);
  }
  return from.net_gbps * eff / from.raw_net_gbps;
}

// The factor one GPU's traffic to a GPU of another island pays: same rail when their nearest
// NICs share one, else another rail, else (no NIC on a rail) the tree's.
double CostModel::Collectives::GpuFactor(const GpuRef& x, const GpuRef& y) const {
  if (!rails_) return m_.cluster().Oversubscription(x.node, y.node);
  const topo::Cluster::RailFactors f = m_.cluster().RailOversubscription(x.node, y.node);
  return m_.SameRail(x, y) ? f.same_rail : m_.OnRail(x) ? f.cross_rail : f.tree;
}

// The hop between members a and b of one island (an NVLink or PCIe edge of a node, or the
// multi-node NVLink fabric).
Hop CostModel::Collectives::IntraHop(int a, int b) const {
  const GpuRef& ga = gpus_[a];
  const GpuRef& gb = gpus_[b];
  Hop h;
  h.from = Name(a);
  h.to = Name(b);
  if (ga.node == gb.node) {
    const NodeCostModel& m = m_.node_model(ga.node);
    if (detail_) h.path = m.EdgePath(ga.gpu, gb.gpu);
    h.transport = m.EdgeTransport(ga.gpu, gb.gpu);
    h.bandwidth_gbps = m.switched() && m.PortGbps(ga.gpu) > 0 && m.PortGbps(gb.gpu) > 0
                           ? std::min(m.PortGbps(ga.gpu), m.PortGbps(gb.gpu))
                           : m.EdgeGbps(ga.gpu, gb.gpu);
  } else {
    if (detail_) h.path = "MNNVL";
    h.transport = Transport::kNVLink;
    h.bandwidth_gbps = 0;
    for (const Island& isl : p_.islands) {
      if (std::find(isl.members.begin(), isl.members.end(), a) != isl.members.end()) {
        h.bandwidth_gbps = isl.min_port_eff;
      }
    }
  }
  return h;
}

// The network hop from member a of island `from_island` to member b at `gbps`.
Hop CostModel::Collectives::NetHop(int from_island, int a, int b, double gbps) const {
  const Island& isl = p_.islands[from_island];
  if (!detail_) return Hop{"", "", "", isl.net_transport, gbps, ""};
  return Hop{Name(a), Name(b), "NET", isl.net_transport, gbps, isl.nics};
}

// Each member of an island to the island's NVSwitch, at its NVLS rate (NVLS and NVLS-tree).
void CostModel::Collectives::NvswitchHops(const Island& isl, Candidate& c) const {
  if (!detail_) return;
  for (int m : isl.members) {
    Hop h = IntraHop(m, m == isl.members.front() ? isl.members.back() : isl.members.front());
    h.to = "NVSwitch";
    h.bandwidth_gbps = isl.nvls_busbw;
    c.hops.push_back(h);
  }
}

// The double binary tree across islands, shared by tree and NVLS-tree: per island, the network
// rate it gets over its traffic (TreeNetTraffic), and the hop that names it.
CostModel::Collectives::Across CostModel::Collectives::TreeAcross() const {
  Across a;
  const DoubleBinaryTree dbt = MakeDoubleBinaryTree(ni_);
  const std::vector<int>* parent = dbt.parents;
  const std::vector<double> traffic = TreeNetTraffic(dbt);
  std::vector<double> net_bw(ni_);
  for (int i = 0; i < ni_; ++i) net_bw[i] = p_.islands[i].net_gbps;
  for (int t = 0; t < 2; ++t) {
    for (int i = 0; i < ni_; ++i) {
      int up = parent[t][i];
      if (up < 0) continue;
      const double bw = Link(i, up);
      net_bw[i] = std::min(net_bw[i], bw);
      net_bw[up] = std::min(net_bw[up], Link(up, i));
      if (detail_) {
        a.hops.push_back(
            NetHop(i, p_.islands[i].members.front(), p_.islands[up].members.front(), bw));
      }
    }
  }
  for (int i = 0; i < ni_; ++i) {
    const double bw = TreeNetAlgBwGbps(net_bw[i], traffic[i]);
    a.algbw.push_back(bw);
    int up = parent[0][i] >= 0 ? parent[0][i] : parent[1][i];
    // The root of both trees (possible for an odd island count): name the hop by one of its
    // children instead.
    for (int t = 0; t < 2 && up < 0; ++t) {
      for (int k = 0; k < ni_ && up < 0; ++k) {
        if (parent[t][k] == i) up = k;
      }
    }
    if (up < 0) up = i;
    a.bottleneck.push_back(
        NetHop(i, p_.islands[i].members.front(), p_.islands[up].members.front(), bw));
  }
  a.alpha_us = dbt.depth * m_.tables().LatencyUs(p_.islands[0].net_transport);
  return a;
}

// --- one model per collective × algorithm ---

// The ring (AllReduce, AllGather, ReduceScatter) moving `traffic` × bytes per rank.
Candidate CostModel::Collectives::Ring(double traffic) const {
  Candidate c;
  c.algorithm = Algorithm::kRing;
  double busbw = kInf;
  double alpha_sum = 0;
  for (const Island& isl : p_.islands) {
    if (isl.members.size() >= 2 && isl.ring_gbps < busbw) {
      busbw = isl.ring_gbps;
      c.bottleneck = isl.ring_hop;
    }
    if (ni_ == 1) {
      alpha_sum += isl.sum_latency_us;
    } else if (!isl.members.empty()) {
      alpha_sum += isl.alpha_intra_us * (isl.members.size() - 1);
    }
  }
  for (int i = 0; i < ni_ && ni_ >= 2; ++i) {
    const int next = (i + 1) % ni_, prev = (i + ni_ - 1) % ni_;
    const double bw = std::min(Link(i, next), Link(i, prev));
    alpha_sum += m_.tables().LatencyUs(p_.islands[i].net_transport);
    if (bw < busbw) {
      busbw = bw;
      c.bottleneck = NetHop(i, p_.islands[i].members.back(), p_.islands[next].members.front(), bw);
    }
  }
  c.bottleneck.bandwidth_gbps = busbw;
  c.time_ms = base_ms_ + traffic * alpha_sum * 1e-3 + traffic * Ms(bytes_, busbw);
  if (!detail_) return c;
  c.order = ring_order_;
  for (int i = 0; i < ni_; ++i) {
    const Island& isl = p_.islands[i];
    const int k = static_cast<int>(isl.members.size());
    for (int j = 0; j + 1 < k; ++j) c.hops.push_back(IntraHop(isl.members[j], isl.members[j + 1]));
    if (ni_ == 1 && k >= 2) c.hops.push_back(IntraHop(isl.members[k - 1], isl.members[0]));
    if (ni_ >= 2) {
      const int next = (i + 1) % ni_;
      const double bw = std::min(Link(i, next), Link(i, (i + ni_ - 1) % ni_));
      c.hops.push_back(NetHop(i, isl.members.back(), p_.islands[next].members.front(), bw));
    }
  }
  return c;
}

// AllReduce, ring: 2(n−1)/n of the bytes over the slowest ring edge.
Candidate CostModel::Collectives::RingAllReduce() const { return Ring(2.0 * (n_ - 1) / n_); }

// AllGather, ring: (n−1)/n of the output over the slowest ring edge.
Candidate CostModel::Collectives::RingAllGather() const {
  return Ring(static_cast<double>(n_ - 1) / n_);
}

// ReduceScatter, ring: (n−1)/n of the input over the slowest ring edge.
Candidate CostModel::Collectives::RingReduceScatter() const {
  return Ring(static_cast<double>(n_ - 1) / n_);
}

// AllReduce, tree: NCCL's double binary tree over islands, a chain inside each island.
Candidate CostModel::Collectives::TreeAllReduce() const {
  Candidate c;
  c.algorithm = Algorithm::kTree;
  double algbw = kInf;
  double chain_alpha = 0;
  for (const Island& isl : p_.islands) {
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
  if (ni_ >= 2) {
    Across a = TreeAcross();
    c.hops = std::move(a.hops);
    for (int i = 0; i < ni_; ++i) {
      if (a.algbw[i] < algbw) {
        algbw = a.algbw[i];
        c.bottleneck = a.bottleneck[i];
      }
    }
    net_alpha = a.alpha_us;
  }
  c.bottleneck.bandwidth_gbps = algbw;
  c.time_ms = base_ms_ + 2 * (net_alpha + chain_alpha) * 1e-3 + Ms(bytes_, algbw);
  if (!detail_) return c;
  c.order = ring_order_;
  for (const Island& isl : p_.islands) {
    for (size_t j = 0; j + 1 < isl.members.size(); ++j) {
      c.hops.push_back(IntraHop(isl.members[j], isl.members[j + 1]));
    }
  }
  return c;
}

// AllReduce, NVLS-tree: NVLS inside every island (each a switched fabric with NVLink SHARP and
// 2+ GPUs), the double binary tree across 2+ islands. nullopt where it does not apply.
std::optional<Candidate> CostModel::Collectives::NvlsTreeAllReduce() const {
  if (ni_ < 2) return std::nullopt;
  for (const Island& isl : p_.islands) {
    if (isl.members.size() < 2 || isl.nvls_busbw <= 0) return std::nullopt;
  }
  Candidate c;
  c.algorithm = Algorithm::kNvlsTree;
  Across a = TreeAcross();
  c.hops = std::move(a.hops);
  double algbw = kInf;
  for (int i = 0; i < ni_; ++i) {
    const Island& isl = p_.islands[i];
    const double bw =
        NvlsTreeAllReduceAlgBwGbps(isl.nvls_busbw, static_cast<int>(isl.members.size()),
                                   m_.tables().nvls_tree_efficiency, a.algbw[i], 1.0);
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
  c.time_ms = base_ms_ + 2 * (m_.tables().nvls_latency_us + a.alpha_us) * 1e-3 + Ms(bytes_, algbw);
  c.order = ring_order_;
  for (const Island& isl : p_.islands) NvswitchHops(isl, c);
  return c;
}

// AllReduce, hierarchical: reduce-scatter inside each island, AllReduce of each GPU's shard
// across islands over its NIC, all-gather inside. Needs the same GPU count per island.
std::optional<Candidate> CostModel::Collectives::HierarchicalAllReduce() const {
  if (ni_ < 2) return std::nullopt;
  const int g = static_cast<int>(p_.islands[0].members.size());
  for (const Island& isl : p_.islands) {
    if (static_cast<int>(isl.members.size()) != g) return std::nullopt;
  }
  if (g < 2) return std::nullopt;
  Candidate c;
  c.algorithm = Algorithm::kHierarchical;
  const double part = static_cast<double>(g - 1) / g;
  double rs_ms = 0;
  Hop rs_hop;
  for (const Island& isl : p_.islands) {
    double t = part * (Ms(bytes_, isl.ring_gbps) + isl.sum_latency_us * 1e-3);
    if (t > rs_ms) {
      rs_ms = t;
      rs_hop = isl.ring_hop;
    }
  }
  double shard_bw = kInf;
  Hop net;
  auto shard_factor = [&](int i, int j) {  // member j of island i to its peers
    const int next = (i + 1) % ni_, prev = (i + ni_ - 1) % ni_;
    const GpuRef& x = gpus_[p_.islands[i].members[j]];
    return std::max(GpuFactor(x, gpus_[p_.islands[next].members[j]]),
                    GpuFactor(gpus_[p_.islands[prev].members[j]], x));
  };
  for (int i = 0; i < ni_; ++i) {
    const int next = (i + 1) % ni_;
    const Island& isl = p_.islands[i];
    for (int j = 0; j < g; ++j) {
      double bw = isl.share_gbps[j] / shard_factor(i, j);
      if (bw < shard_bw) {
        shard_bw = bw;
        net = NetHop(i, isl.members[j], p_.islands[next].members[j], bw);
      }
    }
  }
  const double inter_traffic = 2.0 * (ni_ - 1) / ni_;
  const double inter_ms =
      inter_traffic * Ms(bytes_ / g, shard_bw) +
      2.0 * (ni_ - 1) * m_.tables().LatencyUs(p_.islands[0].net_transport) * 1e-3;
  c.time_ms = base_ms_ + 2 * rs_ms + inter_ms;
  c.bottleneck = inter_ms >= rs_ms ? net : rs_hop;
  if (!detail_) return c;
  c.order = ring_order_;
  for (int i = 0; i < ni_; ++i) {
    const Island& isl = p_.islands[i];
    for (int j = 0; j + 1 < g; ++j) c.hops.push_back(IntraHop(isl.members[j], isl.members[j + 1]));
    c.hops.push_back(IntraHop(isl.members[g - 1], isl.members[0]));
    const int next = (i + 1) % ni_;
    for (int j = 0; j < g; ++j) {
      c.hops.push_back(NetHop(i, isl.members[j], p_.islands[next].members[j], isl.share_gbps[j]));
    }
  }
  return c;
}

// AllReduce, NVLS: every GPU in one switched fabric with NVLink SHARP.
std::optional<Candidate> CostModel::Collectives::NvlsAllReduce() const {
  if (ni_ != 1 || p_.islands[0].nvls_busbw <= 0) return std::nullopt;
  const Island& isl = p_.islands[0];
  Candidate c;
  c.algorithm = Algorithm::kNvls;
  const double traffic = 2.0 * (n_ - 1) / n_;
  c.time_ms = base_ms_ + m_.tables().nvls_latency_us * 1e-3 + traffic * Ms(bytes_, isl.nvls_busbw);
  c.bottleneck = isl.ring_hop;
  c.bottleneck.to = "NVSwitch";
  c.bottleneck.bandwidth_gbps = isl.nvls_busbw;
  c.order = ring_order_;
  NvswitchHops(isl, c);
  return c;
}

// AllToAll, direct: every rank sends bytes/n to every other rank at once.
Candidate CostModel::Collectives::DirectAllToAll() const {
  Candidate c;
  c.algorithm = Algorithm::kDirect;
  double worst_ms = 0;
  double alpha = 0;
  for (int i = 0; i < ni_; ++i) {
    const Island& isl = p_.islands[i];
    const int k = static_cast<int>(isl.members.size());
    if (k >= 2) {
      if (isl.fabric) {
        double bw = isl.min_port_eff;
        double t = Ms(bytes_ * (k - 1) / n_, bw);
        if (t > worst_ms) {
          worst_ms = t;
          c.bottleneck = isl.ring_hop;
          c.bottleneck.to = "NVSwitch";
          c.bottleneck.bandwidth_gbps = bw * n_ / (n_ - 1.0);
        }
      } else {
        for (int a : isl.members) {
          for (int b : isl.members) {
            if (a == b) continue;
            Hop h = IntraHop(a, b);
            double t = Ms(bytes_ / n_, h.bandwidth_gbps);
            if (t > worst_ms) {
              worst_ms = t;
              c.bottleneck = h;
              c.bottleneck.bandwidth_gbps = h.bandwidth_gbps * n_ / (n_ - 1.0);
            }
          }
        }
      }
      alpha = std::max(alpha, isl.alpha_intra_us);
    }
    if (ni_ >= 2) {
      double bw = isl.net_gbps;
      for (int j = 0; j < ni_; ++j) {
        if (j != i) bw = std::min(bw, Link(i, j));
      }
      double t = Ms(bytes_ * k * (n_ - k) / n_, bw);
      alpha = std::max(alpha, m_.tables().LatencyUs(isl.net_transport));
      const int next = (i + 1) % ni_;
      Hop h = NetHop(i, isl.members.front(), p_.islands[next].members.front(), bw);
      if (t > worst_ms) {
        worst_ms = t;
        c.bottleneck = h;
        // Bus bandwidth this bound allows: bytes_·(n_-1)/n_ over the time.
        c.bottleneck.bandwidth_gbps = bw * (n_ - 1.0) / (k * (n_ - k));
      }
      if (detail_) c.hops.push_back(std::move(h));
    }
  }
  c.time_ms = base_ms_ + (n_ - 1) * alpha * 1e-3 + worst_ms;
  if (!detail_) return c;
  c.order.assign(gpus_.size(), 0);
  for (int i = 0; i < n_; ++i) c.order[i] = i;
  return c;
}

// Send/Recv, direct: rank r sends `bytes` to rank r+1 (mod n) in the given order, all at once.
Candidate CostModel::Collectives::DirectSendRecv() const {
  Candidate c;
  c.algorithm = Algorithm::kDirect;
  std::vector<int> island_of(n_, 0);
  for (int i = 0; i < ni_; ++i) {
    for (int m : p_.islands[i].members) island_of[m] = i;
  }
  const int pairs = n_ == 2 ? 1 : n_;
  std::vector<int> cross;  // senders whose receiver is in another island
  for (int r = 0; r < n_; ++r) {
    if (island_of[r] != island_of[(r + 1) % n_] && (r < pairs || n_ == 2)) cross.push_back(r);
  }
  NetShare net = ComputeNet(m_, gpus_, cross, multi_, detail_);
  double bw_min = kInf, alpha = 0;
  for (int r = 0; r < pairs; ++r) {
    int a = r, b = (r + 1) % n_;
    Hop h;
    if (island_of[a] == island_of[b]) {
      h = IntraHop(a, b);
    } else {
      const GpuRef& ga = gpus_[a];
      const NodeCostModel& m = m_.node_model(ga.node);
      int idx = static_cast<int>(std::find(cross.begin(), cross.end(), a) - cross.begin());
      double bw = net.share[idx] / GpuFactor(ga, gpus_[b]);
      const std::vector<int>& nics = m.NicsOf(ga.gpu);
      h.transport = m.NetTransport(ga.gpu);
      h.bandwidth_gbps = bw;
      if (detail_) {
        h.from = Name(a);
        h.to = Name(b);
        h.path = "NET";
        h.via = m.NicName(nics.empty() ? -1 : nics[0]);
      }
    }
    alpha = std::max(alpha, m_.tables().LatencyUs(h.transport));
    if (detail_) c.hops.push_back(h);
    if (h.bandwidth_gbps < bw_min) {
      bw_min = h.bandwidth_gbps;
      c.bottleneck = h;
    }
  }
  c.time_ms = base_ms_ + alpha * 1e-3 + Ms(bytes_, bw_min);
  if (!detail_) return c;
  c.order.assign(n_, 0);
  for (int i = 0; i < n_; ++i) c.order[i] = i;
  return c;
}

// --- which models a request asks, and the fastest of them ---

namespace {

// Adds a model's candidate where the model applies; where it does not, an algorithm the request
// named is an error saying what it `needs`, and one kAuto would try is skipped.
Status AddIfApplies(std::optional<Candidate> c, bool asked, const char* needs,
                    std::vector<Candidate>& out) {
  if (c) {
    out.push_back(std::move(*c));
    return OkStatus();
  }
  return asked ? InvalidArgumentError(needs) : OkStatus();
}

}  // namespace

StatusOr<std::vector<Candidate>> CostModel::Collectives::Candidates(Algorithm algorithm) const {
  const CostModelOptions& o = m_.options_;
  const bool any = algorithm == Algorithm::kAuto;
  std::vector<Candidate> candidates;
  switch (collective_) {
    case Collective::kAllReduce:
      if (any || algorithm == Algorithm::kRing) candidates.push_back(RingAllReduce());
      if ((any && o.allow_tree) || algorithm == Algorithm::kTree) {
        candidates.push_back(TreeAllReduce());
      }
      if ((any && o.allow_hierarchical) || algorithm == Algorithm::kHierarchical) {
        RETURN_IF_ERROR(AddIfApplies(
            HierarchicalAllReduce(), algorithm == Algorithm::kHierarchical,
            "cost: hierarchical needs GPUs on 2+ nodes (NVLink domains) with the same count, "
            "at least 2, on each",
            candidates));
      }
      if ((any && o.allow_nvls && o.allow_nvls_tree) || algorithm == Algorithm::kNvlsTree) {
        RETURN_IF_ERROR(AddIfApplies(
            NvlsTreeAllReduce(), algorithm == Algorithm::kNvlsTree,
            "cost: nvls-tree needs 2+ nodes (NVLink domains), each with 2+ GPUs on one NVSwitch "
            "fabric with NVLink SHARP (NVLink 4+)",
            candidates));
      }
      if ((any && o.allow_nvls) || algorithm == Algorithm::kNvls) {
        RETURN_IF_ERROR(AddIfApplies(
            NvlsAllReduce(), algorithm == Algorithm::kNvls,
            "cost: nvls needs every GPU on one NVSwitch fabric with NVLink SHARP (NVLink 4+)",
            candidates));
      }
      break;
    case Collective::kAllGather:
      candidates.push_back(RingAllGather());
      break;
    case Collective::kReduceScatter:
      candidates.push_back(RingReduceScatter());
      break;
    case Collective::kAllToAll:
      candidates.push_back(DirectAllToAll());
      break;
    case Collective::kSendRecv:
      candidates.push_back(DirectSendRecv());
      break;
  }
  return candidates;
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
  Estimate est;
  est.ranks = n;
  est.nodes = p.nodes;
  if (n < 2) {
    est.algorithm = p2p ? Algorithm::kDirect : Algorithm::kRing;
    if (detail) est.order.assign(gpus.begin(), gpus.end());
    return est;
  }
  const Collectives models(*this, p, gpus, collective, bytes, detail);
  ASSIGN_OR_RETURN(const std::vector<Candidate> candidates, models.Candidates(algorithm));
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
