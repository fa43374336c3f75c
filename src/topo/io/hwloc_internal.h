// Private to topo/io: the one hwloc -> NodeTopology conversion, shared by the hwloc XML reader
// and local discovery. Defined in hwloc_xml.cc.
#pragma once

#include <hwloc.h>

#include <functional>
#include <memory>
#include <string>

#include "core/status.h"
#include "topo/node_topology.h"

namespace toposched::topo::io::hwloc_internal {

// `before_paths` may add facts (e.g. NIC rates from sysfs) before the pair matrix is derived.
StatusOr<NodeTopology> ToNodeTopology(hwloc_topology_t topo, const std::string& source,
                                      const std::function<void(NodeTopology*)>& before_paths);

// An hwloc topology owned by a unique_ptr: destroyed on every path out of a reader.
struct TopologyDeleter {
  void operator()(hwloc_topology* t) const { hwloc_topology_destroy(t); }
};
using TopologyPtr = std::unique_ptr<hwloc_topology, TopologyDeleter>;

}  // namespace toposched::topo::io::hwloc_internal
