// Discovery of the running machine through hwloc and sysfs. On a machine without GPUs it
// reports the CPUs, NUMA nodes and NICs it finds and zero GPUs, without error.
#pragma once

#include <string>

#include "core/status.h"
#include "topo/node_topology.h"

namespace toposched::topo::io {

struct DiscoverOptions {
  std::string sysfs_root = "/sys";  // tests point this at a fake tree
  Status Validate() const;
};

StatusOr<NodeTopology> DiscoverLocal(const DiscoverOptions& options = {});

}  // namespace toposched::topo::io
