// Per-node precomputation for the cost model: for every GPU pair the effective bandwidth NCCL
// would get (raw link rate × efficiency), its transport and per-step latency; per GPU its NVLink
// port into a switched fabric and the NIC it would use. Answers ring capacity, NVLS bandwidth
// and AllReduce time of a GPU subset fast enough to score many candidate sets (GPU selection).
// Knows nothing of clusters, jobs or scheduling.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "cost/cost_tables.h"
#include "cost/types.h"
#include "topo/hardware.h"
#include "topo/node_topology.h"

namespace toposched::cost {

// Immutable after construction; const methods are thread-safe (the exact ring search uses
// thread-local scratch). Self-contained: keeps no pointer to the topology or tables.
//
// Ring model. Switched fabric (topology.nvswitch, every GPU of the set on it): a ring uses one
// outgoing and one incoming stream per GPU port, so its capacity is the smallest port of the
// set × NVLink efficiency, whatever the order (O(k)). Direct links (DGX-1 cube-mesh, NVLink
// bridges, all-to-all NV#) and PCIe: NCCL runs several rings at once over disjoint links, so
// the capacity is a packing of directed Hamiltonian cycles over the NVLinks of the set (greedy,
// half the bottleneck per round, each round an exact bottleneck-cycle search); pairs without
// NVLink go over PCIe P2P or SHM and a ring through them is limited by its slowest edge (exact
// max-bottleneck cycle by dynamic programming over subsets for k ≤ kMaxExactRing, greedy with
// 2-opt beyond). The better of the two is taken.
class NodeCostModel {
 public:
  static constexpr int kMaxExactRing = 10;

  // What a ring through a GPU set gets.
  struct Ring {
    double gbps = 0;            // capacity: ring AllReduce bus bandwidth before latency, GB/s
    double sum_latency_us = 0;  // Σ per-step alpha over the hops of (the first) ring
    int from = -1, to = -1;     // the bottleneck hop, GPU positions
    bool packed = false;        // several rings over direct NVLinks
  };

  NodeCostModel() = default;
  NodeCostModel(const topo::NodeTopology& t, const CostTables& tables = CostTables::Default(),
                const topo::HardwareTable& hw = topo::HardwareTable::Default());

  int num_gpus() const { return n_; }
  bool switched() const { return switched_; }
  int nvlink_gen() const { return nvlink_gen_; }
  const std::string& gpu_name(int g) const { return gpu_names_[g]; }

  // Directed pair a -> b used alone (a != b): raw and effective GB/s, transport, alpha (µs),
  // path name ("NV18", "PIX", ...).
  double EdgeRawGbps(int a, int b) const { return raw_[a * n_ + b]; }
  double EdgeGbps(int a, int b) const { return eff_[a * n_ + b]; }
  Transport EdgeTransport(int a, int b) const { return transport_[a * n_ + b]; }
  double EdgeLatencyUs(int a, int b) const { return latency_[a * n_ + b]; }
  const std::string& EdgePath(int a, int b) const { return path_names_[a * n_ + b]; }

  // Switched fabric: the GPU's NVLink port rate into the switches, raw and × efficiency;
  // 0 when the GPU is not on a switched fabric.
  double PortRawGbps(int g) const { return port_raw_[g]; }
  double PortGbps(int g) const { return port_eff_[g]; }

  // Network side of a GPU. NCCL spreads a GPU's network traffic over every NIC at its best
  // PCIe distance (p5: 4 EFA NICs per GPU), so a GPU "has" the healthy NICs at its best path
  // rank (empty: no NIC, the host Ethernet is used). NicGbps: the GB/s GPU g gets through NIC c
  // alone (× efficiency, × gdr_off_factor without GPUDirect RDMA; c = -1: host Ethernet).
  // NetGbps: the sum over NicsOf(g). Gdr: the GPU-NIC path is PIX/PXB.
  const std::vector<int>& NicsOf(int g) const { return nics_of_[g]; }
  double NicGbps(int g, int c) const;
  double NetGbps(int g) const { return net_gbps_[g]; }
  Transport NetTransport(int g) const { return net_transport_[g]; }
  bool Gdr(int g) const { return gdr_[g]; }
  const std::string& NicName(int c) const { return c < 0 ? host_nic_name_ : nic_names_[c]; }

  // Best ring through `gpus` (positions, distinct, size ≥ 2; any order). `order_out`, when
  // given, receives the ring order (gpus.size() entries). See the class comment for the model.
  Ring BestRing(std::span<const int> gpus, int* order_out = nullptr) const;
  // Algbw bound of NCCL's intra-node tree (a chain): every inner GPU sends the data to its
  // parent and to its child, so a chain gets half the ring capacity (all of it for 2 GPUs).
  static double ChainGbps(const Ring& ring, int k) { return k <= 2 ? ring.gbps : ring.gbps / 2; }
  // NVLS AllReduce bus bandwidth of the set (GB/s); 0 when NVLS does not apply (not all on a
  // switched fabric, NVLink generation without NVLS, fewer than 2 GPUs).
  double NvlsBusBwGbps(std::span<const int> gpus) const;

  // Fast scoring entry points. AllReduce time (ms) of `bytes` over the GPU positions: the better
  // of ring and NVLS (on one node the tree never wins at the sizes that matter). 0 for < 2
  // GPUs. O(k) and no allocation on a switched fabric; O(2^k k²) with thread-local scratch on
  // direct links (k ≤ kMaxExactRing), O(k³) beyond.
  double AllReduceTimeMs(std::span<const int> gpus, double bytes) const;
  // Same for a bit mask of positions (bit i = position i; positions ≥ 64 cannot be named).
  double AllReduceTimeMs(uint64_t gpu_mask, double bytes) const;
  // Ring capacity of the set (= ring AllReduce busbw before latency), GB/s; 0 for < 2 GPUs.
  double RingBusBwGbps(std::span<const int> gpus) const { return BestRing(gpus).gbps; }

  const CostTables& tables() const { return tables_; }

 private:
  int n_ = 0;
  bool switched_ = false;
  int nvlink_gen_ = 0;
  double nvls_factor_ = 0;
  CostTables tables_;
  std::vector<std::string> gpu_names_;
  std::vector<double> raw_, eff_, latency_, nv_raw_;  // n × n; nv_raw_: direct NVLink capacity
  std::vector<Transport> transport_;
  std::vector<std::string> path_names_;
  std::vector<double> port_raw_, port_eff_;
  std::vector<std::vector<int>> nics_of_;
  std::vector<double> net_gbps_;
  std::vector<Transport> net_transport_;
  std::vector<char> gdr_;
  std::vector<double> nic_eff_;  // per NIC: rate × efficiency (before the GDR factor)
  std::vector<char> nic_rdma_;
  std::vector<std::string> nic_names_;
  std::string host_nic_name_ = "host-eth";
  double host_eff_ = 0;
};

// Max-bottleneck directed Hamiltonian cycle over k nodes with capacities cap[i*k+j] (0 = no
// edge). Exact (DP over subsets) for k ≤ NodeCostModel::kMaxExactRing, greedy + 2-opt beyond.
// Returns the bottleneck (0 when no cycle with positive capacity exists) and writes the cycle
// (indices 0..k-1, starting at 0) to order_out when given. k ≥ 2.
double BottleneckCycle(int k, const double* cap, int* order_out);

}  // namespace toposched::cost
