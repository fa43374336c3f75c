#include "cost/node_cost.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

#include "core/numeric.h"

namespace toposched::cost {

namespace {

Transport PairTransport(const topo::Path& p) {
  switch (p.cls) {
    case topo::PathClass::kNV:
      return Transport::kNVLink;
    // NCCL's default P2P level stops at the SMP interconnect: PIX/PXB/PHB and, by our choice,
    // NODE (between host bridges of one socket) use PCIe P2P; SYS goes through host memory.
    case topo::PathClass::kPIX:
    case topo::PathClass::kPXB:
    case topo::PathClass::kPHB:
    case topo::PathClass::kNODE:
      return Transport::kPcieP2P;
    case topo::PathClass::kSYS:
      return Transport::kShm;
  }
  return Transport::kShm;
}

bool LooksLikeRdma(const std::string& name) {
  std::string n;
  for (char c : name) n += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* p :
       {"mlx", "ib", "rdma", "efa", "cxi", "bnxt_re", "irdma", "hfi", "roce", "qedr", "erdma"}) {
    if (n.rfind(p, 0) == 0) return true;
  }
  return false;
}

// Exact max-bottleneck Hamiltonian cycle from node 0: DP over (mask, last). Among cycles of
// equal bottleneck it prefers a larger sum of capacities (primary criterion stays exact), which
// steers the ring packing away from links it has already used.
double ExactBottleneckCycle(int k, const double* cap, int* order_out) {
  thread_local std::vector<double> dp, sum;
  thread_local std::vector<signed char> parent;
  const size_t states = static_cast<size_t>(1) << k;
  dp.assign(states * k, -1.0);
  sum.assign(states * k, 0.0);
  parent.assign(states * k, -1);
  auto better = [](double b, double s, double b0, double s0) {
    const double eps = 1e-9 * std::max(1.0, std::abs(b0));
    return b > b0 + eps || (b >= b0 - eps && s > s0 + 1e-9);
  };
  dp[1 * k + 0] = kInf;
  for (size_t mask = 1; mask < states; mask += 2) {  // masks holding node 0
    for (int v = 0; v < k; ++v) {
      const double cur = dp[mask * k + v];
      if (cur <= 0) continue;
      const double cur_sum = sum[mask * k + v];
      for (int w = 1; w < k; ++w) {
        if (mask & (static_cast<size_t>(1) << w)) continue;
        const double c = cap[v * k + w];
        if (c <= 0) continue;
        const double val = std::min(cur, c);
        const size_t ni = (mask | (static_cast<size_t>(1) << w)) * k + w;
        if (better(val, cur_sum + c, dp[ni], sum[ni])) {
          dp[ni] = val;
          sum[ni] = cur_sum + c;
          parent[ni] = static_cast<signed char>(v);
        }
      }
    }
  }
  const size_t full = states - 1;
  double best = 0, best_sum = 0;
  int last = -1;
  for (int v = 1; v < k; ++v) {
    const double cur = dp[full * k + v];
    const double c = cap[v * k + 0];
    if (cur <= 0 || c <= 0) continue;
    const double val = std::min(cur, c);
    if (last < 0 || better(val, sum[full * k + v] + c, best, best_sum)) {
      best = val;
      best_sum = sum[full * k + v] + c;
      last = v;
    }
  }
  if (last < 0) return 0;
  if (order_out) {
    size_t mask = full;
    int v = last;
    for (int i = k - 1; i >= 1; --i) {
      order_out[i] = v;
      int p = parent[mask * k + v];
      mask &= ~(static_cast<size_t>(1) << v);
      v = p;
    }
    order_out[0] = 0;
  }
  return best;
}

double CycleBottleneck(int k, const double* cap, const std::vector<int>& order) {
  double b = kInf;
  for (int i = 0; i < k; ++i) b = std::min(b, cap[order[i] * k + order[(i + 1) % k]]);
  return b;
}

// Greedy widest-next-hop from node 0, then 2-opt moves (segment reversal) while the bottleneck
// improves. O(k³) per pass, a few passes.
double HeuristicBottleneckCycle(int k, const double* cap, int* order_out) {
  std::vector<int> order = {0};
  std::vector<char> used(k, 0);
  used[0] = 1;
  for (int step = 1; step < k; ++step) {
    int cur = order.back(), best = -1;
    for (int w = 0; w < k; ++w) {
      if (!used[w] && (best < 0 || cap[cur * k + w] > cap[cur * k + best])) best = w;
    }
    used[best] = 1;
    order.push_back(best);
  }
  double b = CycleBottleneck(k, cap, order);
  for (int pass = 0; pass < 20; ++pass) {
    bool improved = false;
    for (int i = 1; i < k - 1 && !improved; ++i) {
      for (int j = i + 1; j < k && !improved; ++j) {
        std::reverse(order.begin() + i, order.begin() + j + 1);
        double nb = CycleBottleneck(k, cap, order);
        if (nb > b) {
          b = nb;
          improved = true;
        } else {
          std::reverse(order.begin() + i, order.begin() + j + 1);
        }
      }
    }
    if (!improved) break;
  }
  if (order_out) std::copy(order.begin(), order.end(), order_out);
  return b > 0 && b < kInf ? b : 0;
}

}  // namespace

double BottleneckCycle(int k, const double* cap, int* order_out) {
  if (k < 2) return 0;
  if (k <= NodeCostModel::kMaxExactRing) return ExactBottleneckCycle(k, cap, order_out);
  return HeuristicBottleneckCycle(k, cap, order_out);
}

NodeCostModel::NodeCostModel(const topo::NodeTopology& t, const CostTables& tables,
                             const topo::HardwareTable& hw)
    : tables_(tables) {
  n_ = static_cast<int>(t.gpus.size());
  switched_ = t.nvswitch;
  nvlink_gen_ = hw.NvlinkGeneration(t);
  nvls_factor_ = tables.NvlsFactor(nvlink_gen_);
  const double link_rate = [&] {
    auto it = hw.nvlink_link_gbps.find(nvlink_gen_);
    return it == hw.nvlink_link_gbps.end() ? 25.0 : it->second;
  }();
  const size_t nn = static_cast<size_t>(n_) * n_;
  raw_.assign(nn, 0);
  eff_.assign(nn, 0);
  latency_.assign(nn, 0);
  nv_raw_.assign(nn, 0);
  transport_.assign(nn, Transport::kShm);
  path_names_.assign(nn, "");
  port_raw_.assign(n_, 0);
  port_eff_.assign(n_, 0);
  for (int a = 0; a < n_; ++a) gpu_names_.push_back("GPU" + std::to_string(t.gpus[a].index));
  for (int a = 0; a < n_; ++a) {
    for (int b = 0; b < n_; ++b) {
      if (a == b) continue;
      const topo::Path& p = t.gpu_gpu(a, b);
      size_t i = static_cast<size_t>(a) * n_ + b;
      Transport tr = PairTransport(p);
      raw_[i] = topo::PairBandwidthGbps(t, t.gpu_dev(a), t.gpu_dev(b), hw);
      eff_[i] = raw_[i] * tables.Efficiency(tr);
      transport_[i] = tr;
      latency_[i] = tables.LatencyUs(tr);
      path_names_[i] = topo::PathName(p);
      if (p.cls == topo::PathClass::kNV && !switched_) nv_raw_[i] = p.nvlinks * link_rate;
    }
  }
  if (switched_) {
    for (int g = 0; g < n_; ++g) {
      int ports = t.gpus[g].nvlink_ports;
      if (ports <= 0) {
        for (int b = 0; b < n_; ++b) {
          if (b != g && t.gpu_gpu(g, b).cls == topo::PathClass::kNV) {
            ports = std::max(ports, t.gpu_gpu(g, b).nvlinks);
          }
        }
      }
      port_raw_[g] = ports * link_rate;
      port_eff_[g] = port_raw_[g] * tables.Efficiency(Transport::kNVLink);
    }
  }
  host_eff_ = tables.host_nic_gbps / 8.0 * tables.Efficiency(Transport::kNetSocket);
  const int nc = static_cast<int>(t.nics.size());
  for (int c = 0; c < nc; ++c) {
    const topo::Nic& nic = t.nics[c];
    nic_names_.push_back(nic.name);
    bool rdma = nic.link_layer == topo::LinkLayer::kInfiniBand ||
                nic.link_layer == topo::LinkLayer::kRoCE ||
                (nic.link_layer == topo::LinkLayer::kUnknown && LooksLikeRdma(nic.name));
    nic_rdma_.push_back(rdma);
    nic_eff_.push_back(tables.NicRateGBps(nic) *
                       tables.Efficiency(rdma ? Transport::kNetIB : Transport::kNetSocket));
  }
  nics_of_.assign(n_, {});
  net_gbps_.assign(n_, 0);
  net_transport_.assign(n_, Transport::kNetSocket);
  gdr_.assign(n_, 0);
  for (int g = 0; g < n_; ++g) {
    int best = 1 << 30;
    for (int c = 0; c < nc; ++c) {
      if (t.nics[c].health != topo::Health::kUnhealthy)
        best = std::min(best, topo::PathRank(t.gpu_nic(g, c)));
    }
    for (int c = 0; c < nc; ++c) {
      if (t.nics[c].health != topo::Health::kUnhealthy && topo::PathRank(t.gpu_nic(g, c)) == best) {
        nics_of_[g].push_back(c);
      }
    }
    if (nics_of_[g].empty()) {
      net_gbps_[g] = host_eff_;
      continue;
    }
    topo::PathClass cls = t.gpu_nic(g, nics_of_[g][0]).cls;
    // GPUDirect RDMA only where the NIC sits behind the same PCIe switch(es) as the GPU.
    gdr_[g] = cls == topo::PathClass::kPIX || cls == topo::PathClass::kPXB;
    bool rdma = false;
    for (int c : nics_of_[g]) {
      rdma = rdma || nic_rdma_[c];
      net_gbps_[g] += NicGbps(g, c);
    }
    net_transport_[g] = rdma ? Transport::kNetIB : Transport::kNetSocket;
  }
}

double NodeCostModel::NicGbps(int g, int c) const {
  if (c < 0) return host_eff_;
  if (!nic_rdma_[c]) return nic_eff_[c];
  return nic_eff_[c] * (gdr_[g] ? 1.0 : tables_.gdr_off_factor);
}

NodeCostModel::Ring NodeCostModel::BestRing(std::span<const int> gpus, int* order_out) const {
  Ring r;
  const int k = static_cast<int>(gpus.size());
  if (k < 2) return r;
  bool all_fabric = switched_;
  for (int i = 0; i < k && all_fabric; ++i) all_fabric = port_eff_[gpus[i]] > 0;
  if (all_fabric) {
    int worst = 0;
    for (int i = 1; i < k; ++i) {
      if (port_eff_[gpus[i]] < port_eff_[gpus[worst]]) worst = i;
    }
    r.gbps = port_eff_[gpus[worst]];
    r.from = gpus[worst];
    r.to = gpus[(worst + 1) % k];
    r.sum_latency_us = k * tables_.LatencyUs(Transport::kNVLink);
    if (order_out) std::copy(gpus.begin(), gpus.end(), order_out);
    return r;
  }
  // General case: capacities of the subset.
  thread_local std::vector<double> cap, residual;
  thread_local std::vector<int> order, single_order, packed_order;
  cap.assign(static_cast<size_t>(k) * k, 0);
  bool any_nv = false;
  for (int i = 0; i < k; ++i) {
    for (int j = 0; j < k; ++j) {
      if (i == j) continue;
      cap[i * k + j] = eff_[gpus[i] * n_ + gpus[j]];
      any_nv = any_nv || nv_raw_[gpus[i] * n_ + gpus[j]] > 0;
    }
  }
  order.assign(k, 0);
  single_order.assign(k, 0);
  packed_order.assign(k, 0);
  const double single = BottleneckCycle(k, cap.data(), single_order.data());
  double packed = 0;
  if (any_nv) {
    // Fractional greedy packing of NVLink-only rings on the residual raw capacities: each round
    // takes half of the best ring's bottleneck so that later rounds can balance the links.
    residual.assign(static_cast<size_t>(k) * k, 0);
    for (int i = 0; i < k; ++i) {
      for (int j = 0; j < k; ++j) {
        if (i != j) residual[i * k + j] = nv_raw_[gpus[i] * n_ + gpus[j]];
      }
    }
    double first = 0;
    for (int round = 0; round < 64; ++round) {
      double b = BottleneckCycle(k, residual.data(), order.data());
      if (b <= 1e-9 || (first > 0 && b < 1e-3 * first)) break;
      if (first == 0) {
        first = b;
        packed_order = order;
      }
      double take = b > 0.05 * first ? b / 2 : b;
      for (int i = 0; i < k; ++i) residual[order[i] * k + order[(i + 1) % k]] -= take;
      packed += take;
    }
    packed *= tables_.Efficiency(Transport::kNVLink);
  }
  r.packed = packed > single;
  r.gbps = std::max(packed, single);
  if (r.gbps <= 0) return r;
  const std::vector<int>& chosen = r.packed ? packed_order : single_order;
  int worst = 0;
  for (int i = 0; i < k; ++i) {
    int a = chosen[i], b = chosen[(i + 1) % k];
    r.sum_latency_us += latency_[gpus[a] * n_ + gpus[b]];
    int wa = chosen[worst], wb = chosen[(worst + 1) % k];
    if (cap[a * k + b] < cap[wa * k + wb]) worst = i;
  }
  r.from = gpus[chosen[worst]];
  r.to = gpus[chosen[(worst + 1) % k]];
  if (order_out) {
    for (int i = 0; i < k; ++i) order_out[i] = gpus[chosen[i]];
  }
  return r;
}

double NodeCostModel::NvlsBusBwGbps(std::span<const int> gpus) const {
  const int k = static_cast<int>(gpus.size());
  if (!switched_ || nvls_factor_ <= 0 || k < 2) return 0;
  double port = kInf;
  for (int g : gpus) port = std::min(port, port_raw_[g]);
  return port > 0 && port < kInf ? port * nvls_factor_ : 0;
}

double NodeCostModel::AllReduceTimeMs(std::span<const int> gpus, double bytes) const {
  const int k = static_cast<int>(gpus.size());
  if (k < 2) return 0;
  const double factor = 2.0 * (k - 1) / k;
  double best = kInf;
  Ring ring = BestRing(gpus);
  if (ring.gbps > 0) {
    best = (tables_.base_latency_us + factor * ring.sum_latency_us) * 1e-3 +
           factor * bytes / (ring.gbps * 1e9) * 1e3;
  }
  double nvls = NvlsBusBwGbps(gpus);
  if (nvls > 0) {
    best = std::min(best, (tables_.base_latency_us + tables_.nvls_latency_us) * 1e-3 +
                              factor * bytes / (nvls * 1e9) * 1e3);
  }
  return best;
}

double NodeCostModel::AllReduceTimeMs(uint64_t gpu_mask, double bytes) const {
  int pos[64];
  int k = 0;
  for (int i = 0; i < 64 && i < n_; ++i) {
    if (gpu_mask & (uint64_t{1} << i)) pos[k++] = i;
  }
  return AllReduceTimeMs(std::span<const int>(pos, k), bytes);
}

}  // namespace toposched::cost
