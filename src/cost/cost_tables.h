// Cost-model constants as data: NCCL efficiency per transport, per-step latencies, NVLS factors,
// NIC rates. Loaded from data/hardware/cost.json (compiled in when the build embeds it).
// Link rates per generation are topo::HardwareTable's (links.json), not repeated here.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "cost/types.h"
#include "topo/node_topology.h"

namespace toposched::cost {

struct NvSwitchSystem {
  std::string name;
  int nvlink_gen = 0;
  int gpus = 0;
  int links_per_gpu = 0;
  bool nvls = false;
};

// Value type; Default() is built once and then shared read-only (thread-safe).
struct CostTables {
  // Index by static_cast<int>(Transport).
  double efficiency[5] = {0.8, 0.8, 0.75, 0.92, 0.5};
  double latency_us[5] = {0.7, 1.5, 3.0, 5.0, 30.0};
  double base_latency_us = 5.0;
  double nvls_latency_us = 8.0;
  std::map<int, double> nvls_busbw_factor;             // NVLink generation -> busbw / raw port rate
  double nvls_tree_efficiency = 0.86;                  // NVLS-tree's in-fabric rate / NVLS alone
  double gdr_off_factor = 0.7;                         // NET without GPUDirect RDMA
  double socket_max_gbps_per_node = 3.2;               // GB/s, NET/Socket ceiling per node
  std::map<std::string, double> nic_gbps;              // named NIC types, Gb/s
  std::map<topo::LinkLayer, double> default_nic_gbps;  // Gb/s when a NIC's rate is unknown
  double host_nic_gbps = 25;                           // Gb/s, a node without NICs
  std::vector<NvSwitchSystem> nvswitch_systems;

  double Efficiency(Transport t) const { return efficiency[static_cast<int>(t)]; }
  double LatencyUs(Transport t) const { return latency_us[static_cast<int>(t)]; }
  // 0 when the NVLink generation has no NVLS.
  double NvlsFactor(int nvlink_gen) const;
  // NIC line rate in GB/s (bytes): its rate_gbps / 8, else the link layer's default.
  double NicRateGBps(const topo::Nic& nic) const;

  // The built-in tables (data/hardware/cost.json). Aborts if the file is broken: a test checks
  // it, so that cannot ship.
  static const CostTables& Default();
  // InvalidArgument naming the missing or bad key.
  static StatusOr<CostTables> FromJson(const std::string& text);
};

// The JSON text Default() parses (embedded copy, or the source tree's file in builds that do
// not embed it yet). Empty when neither is available.
const std::string& DefaultCostJson();

}  // namespace toposched::cost
