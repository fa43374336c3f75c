#include "select/rank_order.h"

#include <algorithm>
#include <numeric>
#include <set>

#include "core/strings.h"

namespace toposched::sched {

namespace {

bool RdmaCapable(const topo::Nic& n) {
  // nvidia-smi does not print the link layer; an unknown one is taken as RDMA (mlx5_*, efa).
  return n.link_layer != topo::LinkLayer::kEthernet;
}

// Readers name a NIC "NIC<index>" when the input gives no device name; NCCL cannot use that.
bool PlaceholderName(const topo::Nic& n) {
  if (n.name.size() <= 3 || n.name.compare(0, 3, "NIC") != 0) return false;
  return std::all_of(n.name.begin() + 3, n.name.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

std::vector<int> AssignNics(const topo::NodeTopology& t, std::span<const int> order) {
  const int k = static_cast<int>(order.size());
  std::vector<int> out(k, -1);
  std::vector<std::vector<int>> nearest(k);
  for (int r = 0; r < k; ++r) {
    int best = 1 << 30;
    for (int c = 0; c < static_cast<int>(t.nics.size()); ++c) {
      if (t.nics[c].health == topo::Health::kUnhealthy) continue;
      int rank = topo::PathRank(t.gpu_nic(order[r], c));
      if (rank < best) {
        best = rank;
        nearest[r].clear();
      }
      if (rank == best) nearest[r].push_back(c);
    }
  }
  std::vector<int> by_choice(k);
  std::iota(by_choice.begin(), by_choice.end(), 0);
  std::stable_sort(by_choice.begin(), by_choice.end(),
                   [&](int a, int b) { return nearest[a].size() < nearest[b].size(); });
  std::vector<int> load(t.nics.size(), 0);
  for (int r : by_choice) {
    int pick = -1;
    for (int c : nearest[r]) {
      if (pick < 0 || load[c] < load[pick]) pick = c;
    }
    out[r] = pick;
    if (pick >= 0) ++load[pick];
  }
  return out;
}

RankLayout LayOutRanks(const topo::NodeTopology& t, std::span<const int> order, int tp) {
  RankLayout out;
  const int k = static_cast<int>(order.size());
  if (tp < 1) tp = 1;
  std::vector<int> nics = AssignNics(t, order);
  for (int r = 0; r < k; ++r) {
    const topo::Gpu& g = t.gpus[order[r]];
    RankPlacement p;
    p.rank = r;
    p.gpu = order[r];
    p.gpu_index = g.index;
    p.tp_group = tp > 1 ? r / tp : 0;
    p.nic = nics[r];
    if (p.nic >= 0) {
      p.nic_path = t.gpu_nic(order[r], p.nic);
      p.gpudirect =
          p.nic_path->cls == topo::PathClass::kPIX || p.nic_path->cls == topo::PathClass::kPXB;
    }
    p.numa = g.numa;
    if (g.cpus && !g.cpus->empty()) {
      p.cpus = *g.cpus;
    } else if (g.numa) {
      for (const topo::NumaNode& n : t.numa_nodes) {
        if (n.id == *g.numa) p.cpus = n.cpus;
      }
    }
    out.ranks.push_back(std::move(p));
  }

  // Environment.
  std::vector<int> indices;
  for (const RankPlacement& p : out.ranks) indices.push_back(p.gpu_index);
  out.env.emplace_back("CUDA_DEVICE_ORDER", "PCI_BUS_ID");
  std::string visible;
  for (int i = 0; i < k; ++i) visible += (i ? "," : "") + std::to_string(indices[i]);
  out.env.emplace_back("CUDA_VISIBLE_DEVICES", visible);
  bool any_rdma = false;
  for (const topo::Nic& n : t.nics) {
    if (n.health != topo::Health::kUnhealthy && RdmaCapable(n)) any_rdma = true;
  }
  if (any_rdma) {
    std::string hca;
    std::set<int> seen;
    for (const RankPlacement& p : out.ranks) {
      if (p.nic < 0 || !RdmaCapable(t.nics[p.nic]) || PlaceholderName(t.nics[p.nic]) ||
          !seen.insert(p.nic).second) {
        continue;
      }
      hca += (hca.empty() ? "=" : ",") + t.nics[p.nic].name;
    }
    if (!hca.empty()) out.env.emplace_back("NCCL_IB_HCA", hca);
  }
  bool any_numa = false, any_cpus = false;
  std::string numa, cpus;
  // GPUs of one NUMA node share a CPU list: format each distinct list once.
  std::vector<std::pair<const std::vector<int>*, std::string>> formatted;
  for (int i = 0; i < k; ++i) {
    const RankPlacement& p = out.ranks[i];
    any_numa = any_numa || p.numa.has_value();
    any_cpus = any_cpus || !p.cpus.empty();
    numa += (i ? "," : "") + std::to_string(p.numa.value_or(-1));
    const std::string* text = nullptr;
    for (const auto& [list, str] : formatted) {
      if (*list == p.cpus) text = &str;
    }
    if (!text) {
      formatted.emplace_back(&p.cpus, FormatIntList(p.cpus));
      text = &formatted.back().second;
    }
    if (i) cpus += ';';
    cpus += *text;
  }
  if (any_numa) out.env.emplace_back("TOPOSCHED_NUMA_NODES", numa);
  if (any_cpus) out.env.emplace_back("TOPOSCHED_CPU_LISTS", cpus);

  // Warnings.
  if (t.nics.empty()) {
    out.warnings.push_back(
        "no NIC on this node: traffic to other nodes falls back to TCP sockets (no InfiniBand)");
  } else if (!any_rdma) {
    out.warnings.push_back(
        "no InfiniBand/RoCE NIC (all Ethernet): traffic to other nodes falls back to TCP sockets");
  } else {
    std::string slow;
    for (const RankPlacement& p : out.ranks) {
      if (p.nic < 0 || p.gpudirect) continue;
      slow += std::string(slow.empty() ? "" : ", ") + "rank " + std::to_string(p.rank) + " GPU" +
              std::to_string(p.gpu_index) + "->" + t.nics[p.nic].name + " " +
              topo::PathName(*p.nic_path);
    }
    if (!slow.empty()) {
      out.warnings.push_back(
          "no NIC at PIX/PXB, no GPUDirect RDMA (network traffic staged "
          "through host memory): " +
          slow);
    }
  }
  if (tp > 1) {
    for (int g = 0; g * tp < k; ++g) {
      std::set<int> numas;
      bool sys = false;
      std::string members;
      for (int r = g * tp; r < std::min(k, (g + 1) * tp); ++r) {
        const RankPlacement& p = out.ranks[r];
        if (p.numa) numas.insert(*p.numa);
        members += (members.empty() ? "" : ",") + std::to_string(p.gpu_index);
        for (int q = g * tp; q < r; ++q) {
          if (t.gpu_gpu(out.ranks[q].gpu, p.gpu).cls == topo::PathClass::kSYS) sys = true;
        }
      }
      if (numas.size() > 1 || sys) {
        std::string which;
        for (int n : numas) which += (which.empty() ? "" : ",") + std::to_string(n);
        out.warnings.push_back("TP group " + std::to_string(g) + " (GPUs " + members +
                               ") crosses sockets" +
                               (numas.size() > 1 ? " (NUMA nodes " + which + ")" : "") +
                               (sys ? "; its traffic takes a SYS path" : ""));
      }
    }
  }
  return out;
}

}  // namespace toposched::sched
