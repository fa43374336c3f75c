// Hardware link rates per generation (NVLink, PCIe, host/socket interconnect, GPU models),
// loaded from the data file data/hardware/links.json, which is compiled into the binary.
// Gives the bottleneck bandwidth of a device pair of a NodeTopology. Knows nothing of
// collectives or time (that is cost/).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "topo/node_topology.h"

namespace toposched::topo {

struct GpuModelInfo {
  std::string match;     // case-insensitive substring of the model name ("H100")
  int nvlink_gen = 0;    // 0 = no NVLink
  int nvlink_ports = 0;  // NVLinks per GPU
  int pcie_gen = 4;
};

struct HardwareTable {
  std::map<int, double> nvlink_link_gbps;  // generation -> GB/s per link per direction
  std::map<int, double> pcie_x16_gbps;     // generation -> GB/s per direction, x16
  double host_bridge_factor = 1.0;         // PHB: share of the PCIe rate that crosses the CPU
  double node_gbps = 0;                    // between host bridges inside one socket
  double sys_gbps = 0;                     // across sockets (UPI/xGMI/Infinity Fabric)
  int default_pcie_gen = 4;
  std::vector<GpuModelInfo> gpu_models;
  std::map<int, int> nvlink_gen_by_ports;  // inference: most NV links on one GPU -> generation
  std::string source_notes;

  // The built-in table (from data/hardware/links.json). Never fails: the file is compiled in
  // and checked by a test.
  static const HardwareTable& Default();
  static StatusOr<HardwareTable> FromJson(const std::string& text);

  std::optional<GpuModelInfo> Lookup(const std::string& model) const;
  // NVLink generation of the node's GPUs: from the model name when known, else inferred from
  // the largest NV count (or port count) seen. 0 when there is no NVLink.
  int NvlinkGeneration(const NodeTopology& t) const;
  int PcieGeneration(const NodeTopology& t) const;
};

// Bottleneck bandwidth in GB/s (one direction) between two devices of a node:
//  NV#  : links × per-link rate; on NVSwitch systems the GPU's full port bandwidth (shared with
//         all its peers when they talk at once — modelled by the cost model, not here);
//  PIX/PXB: the PCIe rate; PHB: PCIe × host_bridge_factor; NODE: min(PCIe, node_gbps);
//  SYS: min(PCIe, sys_gbps).
double PairBandwidthGbps(const NodeTopology& t, int dev_a, int dev_b,
                         const HardwareTable& table = HardwareTable::Default());

}  // namespace toposched::topo
