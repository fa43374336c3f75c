#include "placer/transports.h"

#include <algorithm>
#include <map>
#include <set>

namespace toposched::sched {

namespace {

std::string GpuLabel(const cost::CostModel& cost, const RankSlot& r) {
  return cost.cluster().nodes[r.node].name + "/" + cost.node_model(r.node).gpu_name(r.gpu);
}

std::string NicLabel(const cost::CostModel& cost, const RankSlot& r) {
  return r.nic >= 0 ? cost.node_model(r.node).NicName(r.nic) : std::string("host Ethernet");
}

// The hop a -> b: its transport name and, across nodes, the NICs.
std::pair<std::string, std::string> Hop(const cost::CostModel& cost, const RankSlot& a,
                                        const RankSlot& b) {
  if (a.node == b.node) {
    return {cost::TransportName(cost.node_model(a.node).EdgeTransport(a.gpu, b.gpu)), ""};
  }
  const cost::NodeCostModel& m = cost.node_model(a.node);
  const cost::Transport t = m.NetTransport(a.gpu);
  std::string name = cost::TransportName(t);
  if (t == cost::Transport::kNetIB && !m.Gdr(a.gpu)) name += " without GPUDirect RDMA";
  return {name, NicLabel(cost, a) + " -> " + NicLabel(cost, b)};
}

// Lower is faster, for the order of a dimension's lines.
int Rank(const std::string& transport) {
  static const char* const kOrder[] = {
      "NVLink", "PCIe P2P", "SHM", "NET/IB", "NET/IB without GPUDirect RDMA", "NET/Socket"};
  for (int i = 0; i < 6; ++i) {
    if (transport == kOrder[i]) return i;
  }
  return 6;
}

}  // namespace

TransportPlan PredictTransports(const cost::CostModel& cost, const Placement& p,
                                const job::Layout& layout) {
  TransportPlan plan;
  const int tp = std::max(1, layout.tp), dp = std::max(1, layout.dp), pp = std::max(1, layout.pp);
  const int n = static_cast<int>(p.ranks.size());
  // Members of rank 0's groups (rank = t + TP·(d + DP·s)).
  const std::vector<std::pair<std::string, std::vector<int>>> groups = [&] {
    std::vector<int> t, s, d;
    for (int i = 0; i < tp; ++i) t.push_back(i);
    for (int i = 0; i < pp; ++i) s.push_back(tp * dp * i);
    for (int i = 0; i < dp; ++i) d.push_back(tp * i);
    return std::vector<std::pair<std::string, std::vector<int>>>{{"TP", t}, {"PP", s}, {"DP", d}};
  }();
  std::set<std::string> hcas;
  for (const auto& [dim, members] : groups) {
    if (members.size() < 2 || members.back() >= n) continue;
    std::map<std::string, HopTransport> kinds;
    for (size_t i = 0; i < members.size(); ++i) {
      // PP sends stage to stage; the others run a ring, the last member back to the first.
      if (dim == "PP" && i + 1 == members.size()) break;
      const RankSlot& a = p.ranks[members[i]];
      const RankSlot& b = p.ranks[members[(i + 1) % members.size()]];
      auto [transport, via] = Hop(cost, a, b);
      HopTransport& h = kinds[transport];
      if (h.hops++ == 0) {
        h.dimension = dim;
        h.transport = transport;
        h.example = GpuLabel(cost, a) + " -> " + GpuLabel(cost, b);
        h.via = via;
      }
    }
    std::vector<HopTransport> sorted;
    for (auto& [name, h] : kinds) sorted.push_back(std::move(h));
    std::sort(sorted.begin(), sorted.end(), [](const HopTransport& x, const HopTransport& y) {
      return Rank(x.transport) < Rank(y.transport);
    });
    for (HopTransport& h : sorted) {
      if (h.transport.rfind("NET/Socket", 0) == 0) {
        plan.warnings.push_back(dim + " crosses nodes over TCP (NET/Socket): " + h.example +
                                " has no IB/RoCE NIC to use");
      } else if (h.transport.find("without GPUDirect RDMA") != std::string::npos) {
        plan.warnings.push_back(dim + " crosses nodes without GPUDirect RDMA: " + h.example + " (" +
                                h.via + ") do not share a PCIe switch");
      }
      plan.hops.push_back(std::move(h));
    }
  }
  // Every NIC a rank is paired with (a network hop uses the ranks' own NICs).
  bool network = false;
  for (const HopTransport& h : plan.hops) network |= h.transport.rfind("NET/IB", 0) == 0;
  if (network) {
    for (const RankSlot& r : p.ranks) {
      if (r.nic >= 0) hcas.insert(cost.node_model(r.node).NicName(r.nic));
    }
    for (const std::string& h : hcas) plan.nccl_ib_hca += (plan.nccl_ib_hca.empty() ? "" : ",") + h;
  }
  return plan;
}

}  // namespace toposched::sched
