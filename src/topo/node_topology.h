// The hardware model of one node: GPUs, NVLink/NVSwitch, PCIe switches and host bridges,
// NUMA nodes with their CPUs, NICs, and for every device pair the path class exactly as
// nvidia-smi names it. Knows nothing of jobs, scheduling, costs in time, or file formats
// (readers live in topo/io).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace toposched::topo {

// Path classes, best first, as `nvidia-smi topo -m` names them.
enum class PathClass {
  kNV = 0,  // a bonded set of NVLinks ("NV#")
  kPIX,     // at most a single PCIe bridge
  kPXB,     // several PCIe bridges, no host bridge
  kPHB,     // through a PCIe host bridge (CPU)
  kNODE,    // between host bridges within one NUMA node
  kSYS,     // across the SMP interconnect between NUMA nodes (old name SOC)
};

struct Path {
  PathClass cls = PathClass::kSYS;
  int nvlinks = 0;  // > 0 only when cls == kNV
  bool operator==(const Path&) const = default;
};

// "NV12", "PIX", ... Never fails.
std::string PathName(const Path& p);
// Parses "NV#" (1..64), "PIX", "PXB", "PHB", "NODE", "SYS" and the old "SOC" (= SYS).
// InvalidArgument for anything else.
StatusOr<Path> ParsePath(std::string_view text);
// Lower is better: NV (more links better) < PIX < PXB < PHB < NODE < SYS.
int PathRank(const Path& p);

enum class Health { kHealthy, kDegraded, kUnhealthy };
const char* HealthName(Health h);
StatusOr<Health> ParseHealth(std::string_view s);

enum class LinkLayer { kUnknown, kInfiniBand, kRoCE, kEthernet };
const char* LinkLayerName(LinkLayer l);                  // "unknown", "ib", "roce", "ethernet"
StatusOr<LinkLayer> ParseLinkLayer(std::string_view s);  // accepts ib/infiniband/roce/ethernet/eth

// Where a device hangs in the PCIe tree. Switch and host-bridge ids index
// NodeTopology::pcie_switches / host_bridges; -1 = not known from the input.
struct PciePlacement {
  std::vector<int> switches;  // switch ids from the host bridge down to the device
  int host_bridge = -1;
  bool operator==(const PciePlacement&) const = default;
};

struct Gpu {
  int index = 0;           // as the input numbers it (GPU<index>)
  std::string pci_bus_id;  // "0000:18:00.0" when known
  std::string model;       // "H100-SXM5-80GB" when known
  std::optional<long long> memory_mib;
  std::optional<int> numa;               // NUMA node the GPU is closest to
  std::optional<std::vector<int>> cpus;  // CPU affinity list
  Health health = Health::kHealthy;
  int nvlink_ports = 0;  // NVLinks the GPU has in total (0 = none or unknown)
  PciePlacement pcie;
  bool operator==(const Gpu&) const = default;
};

struct Nic {
  int index = 0;     // NIC<index> in nvidia-smi order
  std::string name;  // device name (mlx5_0) when known, else "NIC<index>"
  int port = 1;
  std::optional<double> rate_gbps;  // line rate in Gb/s (bits), when known
  LinkLayer link_layer = LinkLayer::kUnknown;
  std::string pci_bus_id;
  std::optional<int> numa;
  Health health = Health::kHealthy;
  PciePlacement pcie;
  bool operator==(const Nic&) const = default;
};

struct NumaNode {
  int id = 0;
  std::vector<int> cpus;
  bool operator==(const NumaNode&) const = default;
};

struct PcieSwitch {
  int id = 0;
  int parent = -1;  // parent switch id, -1 = directly under a host bridge
  int host_bridge = -1;
  std::string pci_bus_id;
  int gen = 0;    // PCIe generation of its uplink when known (3, 4, 5, 6)
  int width = 0;  // lanes when known
  bool operator==(const PcieSwitch&) const = default;
};

struct HostBridge {
  int id = 0;
  std::optional<int> numa;
  std::string pci_bus_id;
  bool operator==(const HostBridge&) const = default;
};

// A device in the pair matrix: GPUs first, then NICs.
struct DeviceRef {
  enum class Kind { kGpu, kNic } kind = Kind::kGpu;
  int pos = 0;  // position in gpus() / nics() (not the index field)
  bool operator==(const DeviceRef&) const = default;
};

// Invariants (checked by Validate): GPU indices unique, NIC names unique, the pair matrix is
// square over gpus()+nics(), symmetric, NV only between GPUs (NVLink to a NIC is rejected).
// Value type; not synchronised: share const instances freely across threads.
class NodeTopology {
 public:
  std::string source;     // where it came from ("nvidia-smi:file.txt", "hwloc:...")
  std::string gpu_model;  // node-wide GPU model when known
  std::vector<Gpu> gpus;
  std::vector<Nic> nics;
  std::vector<NumaNode> numa_nodes;
  std::vector<PcieSwitch> pcie_switches;
  std::vector<HostBridge> host_bridges;
  int nvswitch_count = 0;  // NVSwitch chips seen in the input (0 = none or unknown)
  // True when GPUs reach each other through NVSwitches (every GPU's links go into the switch
  // fabric and are shared by all its peers), false for direct per-pair links (DGX-1 cube-mesh,
  // NVLink bridges). Set by readers or by InferNvSwitch().
  bool nvswitch = false;
  // True when the input cannot say whether GPUs have NVLinks: an NCCL topology file with two or
  // more GPUs and no <nvlink>/<xgmi> element at all (NCCL_TOPO_FILE templates leave the links
  // out; NCCL finds them at run time). The model then has no NVLink (PCIe paths), and the
  // summary says "unknown", not "none".
  bool nvlink_unknown = false;

  int num_devices() const { return static_cast<int>(gpus.size() + nics.size()); }
  // Resizes the pair matrix to num_devices()^2, every pair SYS. Call after filling gpus/nics.
  void ResetPaths();
  const Path& path(int dev_a, int dev_b) const { return paths_[dev_a * num_devices() + dev_b]; }
  // Sets both directions.
  void set_path(int dev_a, int dev_b, Path p);
  int gpu_dev(int gpu_pos) const { return gpu_pos; }
  int nic_dev(int nic_pos) const { return static_cast<int>(gpus.size()) + nic_pos; }
  const Path& gpu_gpu(int a, int b) const { return path(gpu_dev(a), gpu_dev(b)); }
  const Path& gpu_nic(int g, int n) const { return path(gpu_dev(g), nic_dev(n)); }
  std::string device_name(int dev) const;  // "GPU3" or the NIC name
  // Position of the GPU with this index, or -1.
  int gpu_pos(int index) const;
  int nic_pos(const std::string& name) const;
  // Device number (row of the pair matrix) of "GPU<index>" (the GPU with that index field) or
  // of the NIC with this name; -1 when there is no such device. A name that is not "GPU"
  // followed by a decimal number is looked up among the NIC names.
  int FindDevice(std::string_view name) const;

  // Fills gpu_gpu/gpu_nic/nic_nic paths from the PCIe placement, NUMA and NVLink counts
  // (readers of structural formats: hwloc, NCCL XML). `nvlinks[i][j]` = link count between
  // GPU positions i and j (may be empty = none).
  void DerivePathsFromStructure(const std::vector<std::vector<int>>& nvlinks);
  // Sets `nvswitch` and fills nvlink_ports when the input did not say: the fabric is switched
  // when some GPU's NV counts summed over its peers exceed the most links any GPU of its
  // generation has (ports_limit; 18 when the model is unknown).
  void InferNvSwitch();
  // NUMA nodes seen on GPUs/NICs but missing from numa_nodes are added (with empty cpus).
  void CompleteNumaNodes();
  // A NIC whose NUMA node the input did not give takes the NUMA node of the GPUs it reaches
  // without crossing the SMP interconnect (PIX/PXB/PHB/NODE), when they all agree.
  void InferNicNuma();

  // GPUs reachable from each other over NVLink (connected components), each sorted.
  std::vector<std::vector<int>> NvlinkIslands() const;
  // Best-path NIC for a GPU position (ties: fewest GPUs already nearest to it), -1 when none.
  int NearestNic(int gpu_pos) const;

  Status Validate() const;

  // Every field, the device paths and the source included.
  bool operator==(const NodeTopology&) const = default;

 private:
  std::vector<Path> paths_;
};

}  // namespace toposched::topo
