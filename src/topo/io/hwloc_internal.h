// Private to topo/io: the one hwloc -> NodeTopology conversion, shared by the hwloc XML reader
// and local discovery. Defined in hwloc_xml.cc.
#pragma once

#include <hwloc.h>

#include <functional>
#include <string>

#include "core/status.h"
#include "topo/node_topology.h"

namespace toposched::topo::io::hwloc_internal {

// `before_paths` may add facts (e.g. NIC rates from sysfs) before the pair matrix is derived.
StatusOr<NodeTopology> ToNodeTopology(hwloc_topology_t topo, const std::string& source,
                                      const std::function<void(NodeTopology*)>& before_paths);

}  // namespace toposched::topo::io::hwloc_internal
