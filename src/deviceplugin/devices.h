// The GPUs a node's device plugin offers the kubelet: one device per GPU of the node's
// topology, its id (the GPU's UUID where the driver names it, else its index), NUMA node, device
// minor and health; and the driver facts that name them (/proc/driver/nvidia). Knows nothing of
// gRPC, of selection or of what a container gets.
#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "topo/node_topology.h"

namespace toposched::deviceplugin {

// What the NVIDIA driver says of one GPU.
struct DriverGpu {
  std::string uuid;  // "GPU-5d6e..." ("" = unknown)
  int minor = -1;    // /dev/nvidia<minor> (-1 = unknown)
};

// "0000:18:00.0" from any of nvidia-smi's ("00000000:18:00.0"), hwloc's or sysfs's spellings:
// lowercase, a 4-digit domain. Empty when `bus_id` is not <domain:>bus:device.function.
std::string NormalizeBusId(std::string_view bus_id);

// Reads <proc_root>/driver/nvidia/gpus/<bus id>/information for every GPU of `t` whose PCI bus
// id is known: the "GPU UUID:" and "Device Minor:" lines, keyed by NormalizeBusId. A GPU whose
// file is missing is left out (not an error: the topology may come from a file, or the driver
// may not be loaded). InvalidArgument naming file and line for a present file with a malformed
// UUID or minor; files are read up to 64 KiB (the driver writes about 500 bytes).
StatusOr<std::map<std::string, DriverGpu>> ReadDriverGpus(const std::string& proc_root,
                                                          const topo::NodeTopology& t);

struct GpuDevice {
  std::string id;  // the device id the kubelet sees: the UUID, else the GPU index as text
  int pos = 0;     // position in NodeTopology::gpus
  int index = 0;   // Gpu::index
  std::string uuid;
  int minor = -1;
  std::optional<int> numa;
  bool healthy = true;
};

// One device per GPU, in topology order. Immutable but for health (not synchronised: the
// plugin guards it).
class DeviceTable {
 public:
  // InvalidArgument when two GPUs would get the same id (a UUID given twice), or the topology
  // has no GPU. A GPU the topology marks unhealthy starts Unhealthy.
  static StatusOr<DeviceTable> Create(const topo::NodeTopology& t,
                                      const std::map<std::string, DriverGpu>& driver);

  const std::vector<GpuDevice>& devices() const { return devices_; }
  // Position of a device id; NotFound "unknown device id \"x\" (this node's devices: ...)".
  StatusOr<int> Position(std::string_view id) const;
  // Positions of `ids` (in the given order). NotFound for an unknown id, InvalidArgument for an
  // id given twice; `field` names the request field in the message.
  StatusOr<std::vector<int>> Positions(std::span<const std::string> ids,
                                       const std::string& field) const;
  const GpuDevice& at(int pos) const { return devices_[pos]; }
  // Sets the health of the device at `pos`; returns whether it changed.
  bool SetHealthy(int pos, bool healthy);

 private:
  std::vector<GpuDevice> devices_;
};

}  // namespace toposched::deviceplugin
