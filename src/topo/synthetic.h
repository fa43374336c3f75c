// Node topologies from a short synthetic description, for tests and benchmarks:
//   "gpu:8 nvswitch:18"         8 GPUs on NVSwitch, 18 links each
//   "gpu:8 cubemesh"            DGX-1 hybrid cube-mesh (NV1/NV2)
//   "gpu:8 pcie sockets:2 switches:4 nics:4"  PCIe only, 2 sockets, 4 switches, NICs per switch
//   "gpu:4 nvlink:6"            all-to-all direct NV6
// Optional: "model:H100" "nic_gbps:400" "linklayer:ib".
#pragma once

#include <string>

#include "core/status.h"
#include "topo/node_topology.h"

namespace toposched::topo {

StatusOr<NodeTopology> MakeSyntheticTopology(std::string_view description);

}  // namespace toposched::topo
