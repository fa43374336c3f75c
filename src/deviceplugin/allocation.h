// What the device plugin answers the kubelet, as plain values: the preferred device set for a
// container (the node-level choice of src/select, as `place-node` makes it), and what a
// container gets for its devices (the environment in NVLink ring order, the nearest NICs, the
// NCCL topology file, device nodes, CDI names). Knows nothing of gRPC or sockets.
#pragma once

#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "deviceplugin/devices.h"
#include "deviceplugin/options.h"
#include "select/node_select.h"

namespace toposched::deviceplugin {

// The best `size` devices among `available` that include every `must_include` device, as ids
// in rank order. Without must-include devices (or when the optimum contains them all) this is
// exactly NodeSelector::Select(available, {gpus = size}): the optimum under the cost model,
// ties to the set that leaves the best follow-up, as `place-node --gpus size --free ...`
// answers. Otherwise, for nodes of up to 16 GPUs, every completion of the must-include set is
// priced (SetTimeMs, O(1) each once the tables are warm; at most C(15, 7) = 6,435) and the
// fastest kept, ties to the first in enumeration order (no leftover tie-break); above 16 GPUs
// the set grows greedily from the must-include devices, one GPU at a time.
// InvalidArgument: size < 1, size above the available count, must-include larger than size
// or not among the available, an id given twice. NotFound: an unknown id.
// FailedPrecondition: the node cannot give `size` healthy GPUs among those available.
StatusOr<std::vector<std::string>> PreferredDevices(const sched::NodeSelector& selector,
                                                    const DeviceTable& devices,
                                                    std::span<const std::string> available,
                                                    std::span<const std::string> must_include,
                                                    int size);

struct MountSpec {
  std::string container_path;
  std::string host_path;
  bool read_only = true;
};

struct DeviceNodeSpec {
  std::string container_path;
  std::string host_path;
  std::string permissions = "rw";
};

struct ContainerAllocation {
  std::vector<int> ring;  // GPU positions in rank order (local rank i <-> ring[i])
  // In this order (a variable is left out when nothing is known for it):
  //   NVIDIA_VISIBLE_DEVICES  device ids in ring order (the NVIDIA container runtime's list)
  //   CUDA_DEVICE_ORDER       PCI_BUS_ID
  //   CUDA_VISIBLE_DEVICES    ring order: the UUIDs when every GPU has one, else the ordinals
  //                           the container sees (its GPUs numbered by PCI bus id, else index)
  //   NCCL_IB_HCA             "=mlx5_0,mlx5_3": the NICs nearest the ranks' GPUs (select's
  //                           AssignNics, as `place-node` and `toposched exec` set it)
  //   NCCL_TOPO_FILE          the container path of the mounted topology file
  //   TOPOSCHED_RING          host GPU indices in ring order
  //   TOPOSCHED_NUMA_NODES, TOPOSCHED_CPU_LISTS   per local rank (select's LayOutRanks)
  std::vector<std::pair<std::string, std::string>> envs;
  std::vector<MountSpec> mounts;
  std::vector<DeviceNodeSpec> devices;  // only nodes that exist under dev_root
  std::vector<std::string> cdi_devices;
};

// What a container with the devices `ids` gets. Ring: the best ring through them (select's
// BestRing over the node's pair bandwidths). Device nodes: /dev/nvidia<minor> of each GPU (the
// driver's minor, else its index), nvidiactl, nvidia-uvm, nvidia-uvm-tools, and for each NIC of
// NCCL_IB_HCA its uverbs device and rdma_cm, each only where it exists.
// NotFound for an unknown id, InvalidArgument for an empty list or an id given twice.
StatusOr<ContainerAllocation> PlanAllocation(const sched::NodeSelector& selector,
                                             const DeviceTable& devices,
                                             std::span<const std::string> ids,
                                             const PluginOptions& options);

}  // namespace toposched::deviceplugin
