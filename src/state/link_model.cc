#include "state/link_model.h"

#include <algorithm>
#include <map>

#include "cost/cost_tables.h"

namespace toposched::sched {

LinkModel::LinkModel(const topo::Cluster& cluster)
    : cluster_(&cluster),
      node_gbps_(cluster.nodes.size(), 0.0),
      node_nics_(cluster.nodes.size(), 0),
      capacity_gbps_(cluster.domains.size(), 0.0),
      load_gbps_(cluster.domains.size(), 0.0),
      network_ms_(cluster.domains.size(), 0.0),
      hiding_(cluster.domains.size()) {
  for (size_t n = 0; n < cluster.nodes.size(); ++n) {
    for (const topo::Nic& nic : cluster.topology(static_cast<int>(n)).nics) {
      // A NIC whose rate the topology does not give runs at the rate the cost model assumes for
      // it (data/hardware/cost.json, default_nic_gbps by link layer), so that its traffic loads
      // the links the cost model prices it on (as 0 Gb/s it loaded nothing and no uplink had
      // capacity: no contention at all on such a cluster).
      node_gbps_[n] += cost::CostTables::Default().NicRateGBps(nic) * 8.0;
      ++node_nics_[n];
    }
  }
  // Downlink bandwidth per domain, bottom-up: a domain's children are one level below it, so
  // visiting deeper levels first sees every child before its parent.
  std::vector<double> down(cluster.domains.size(), 0.0);
  std::vector<int> order(cluster.domains.size());
  for (size_t d = 0; d < order.size(); ++d) order[d] = static_cast<int>(d);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return cluster.domains[a].level > cluster.domains[b].level;
  });
  for (int d : order) {
    const topo::NetworkDomain& dom = cluster.domains[d];
    for (int n : dom.nodes) down[d] += node_gbps_[n];
    for (int c : dom.children) down[d] += capacity_gbps_[c];
    const double ratio = std::max(1e-9, cluster.levels[dom.level].oversubscription);
    capacity_gbps_[d] = dom.parent < 0 ? 0.0 : down[d] / ratio;
  }
}

LinkModel::Usage LinkModel::UsageOf(const std::vector<std::pair<int, int>>& gpus_on_node) const {
  Usage u;
  if (gpus_on_node.size() < 2) return u;
  const int nvl = cluster_->nodes[gpus_on_node.front().first].nvlink_domain;
  if (nvl >= 0 && std::all_of(gpus_on_node.begin(), gpus_on_node.end(), [&](const auto& e) {
        return cluster_->nodes[e.first].nvlink_domain == nvl;
      })) {
    return u;
  }
  std::map<int, std::pair<int, double>> under;  // domain → (job nodes under it, their Gb/s)
  for (const auto& [n, gpus] : gpus_on_node) {
    const int nics = node_nics_[n];
    const double gbps =
        nics > 0 ? node_gbps_[n] * std::min(gpus, nics) / static_cast<double>(nics) : 0.0;
    for (int d = cluster_->nodes[n].domain; d >= 0; d = cluster_->domains[d].parent) {
      auto& [count, load] = under[d];
      ++count;
      load += gbps;
    }
  }
  const int total = static_cast<int>(gpus_on_node.size());
  for (const auto& [d, cg] : under) {
    if (cg.first < total && cluster_->domains[d].parent >= 0) u.links.emplace_back(d, cg.second);
  }
  return u;
}

LinkModel::Usage LinkModel::UsageOf(const std::vector<NodeGpus>& parts) const {
  std::vector<std::pair<int, int>> nodes;
  nodes.reserve(parts.size());
  for (const NodeGpus& part : parts) nodes.emplace_back(part.node, part.gpus.count());
  return UsageOf(nodes);
}

void LinkModel::Add(const Usage& u, double network_ms) {
  for (const auto& [d, gbps] : u.links) {
    load_gbps_[d] += gbps;
    network_ms_[d] += network_ms;
  }
}

void LinkModel::Remove(const Usage& u, double network_ms) {
  for (const auto& [d, gbps] : u.links) {
    load_gbps_[d] = std::max(0.0, load_gbps_[d] - gbps);
    network_ms_[d] = std::max(0.0, network_ms_[d] - network_ms);
  }
}

double LinkModel::Traffic::ExposedAt(double c) const {
  return other_ms * c + dp_ms * std::max(0.0, c - hide_factor);
}

void LinkModel::Add(const Usage& u, const Traffic& t) {
  if (!(t.hide_factor > 0)) return Add(u, t.dp_ms + t.other_ms);
  Add(u, 0.0);
  for (const auto& [d, gbps] : u.links) hiding_[d].push_back(t);
}

double LinkModel::Factor(const Usage& u) const {
  double f = 1.0;
  for (const auto& [d, gbps] : u.links) {
    if (capacity_gbps_[d] > 0) f = std::max(f, load_gbps_[d] / capacity_gbps_[d]);
  }
  return f;
}

}  // namespace toposched::sched

namespace toposched::sched {

double LinkModel::FactorWith(const Usage& u) const {
  double f = 1.0;
  for (const auto& [d, gbps] : u.links) {
    if (capacity_gbps_[d] > 0) f = std::max(f, (load_gbps_[d] + gbps) / capacity_gbps_[d]);
  }
  return f;
}

double LinkModel::AloneFactor(const Usage& u) const {
  double f = 1.0;
  for (const auto& [d, gbps] : u.links) {
    if (capacity_gbps_[d] > 0) f = std::max(f, gbps / capacity_gbps_[d]);
  }
  return f;
}

LinkModel::Contention LinkModel::ContentionMs(const Usage& u, double own_ms) const {
  return ContentionMs(u, Traffic{0.0, own_ms, 0.0});
}

LinkModel::Contention LinkModel::ContentionMs(const Usage& u, const Traffic& own) const {
  Contention c;
  if (u.links.empty()) return c;
  const double alone = AloneFactor(u);
  if (own.hide_factor > 0) {
    // The traffic's time at the unloaded network's rate, then exposed at each factor.
    const Traffic unloaded{own.dp_ms / alone, own.other_ms / alone, own.hide_factor};
    c.own_ms = unloaded.ExposedAt(FactorWith(u)) - unloaded.ExposedAt(alone);
  } else {
    c.own_ms = (own.dp_ms + own.other_ms) / alone * (FactorWith(u) - alone);
  }
  for (const auto& [d, gbps] : u.links) {
    if (capacity_gbps_[d] <= 0) continue;
    if (network_ms_[d] <= 0 && hiding_[d].empty()) continue;
    const double before = std::max(1.0, load_gbps_[d] / capacity_gbps_[d]);
    const double after = std::max(1.0, (load_gbps_[d] + gbps) / capacity_gbps_[d]);
    if (after <= before) continue;
    c.others_ms += network_ms_[d] * (after - before);
    for (const Traffic& t : hiding_[d]) c.others_ms += t.ExposedAt(after) - t.ExposedAt(before);
  }
  return c;
}

}  // namespace toposched::sched
