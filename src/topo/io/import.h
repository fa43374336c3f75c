// One entry point for every node-topology input format, with format auto-detection.
#pragma once

#include <string>

#include "core/status.h"
#include "topo/node_topology.h"

namespace toposched::topo::io {

enum class TopoFormat { kAuto, kNvidiaSmi, kHwloc, kNcclXml, kJson };
StatusOr<TopoFormat> ParseTopoFormat(std::string_view name);  // nvidia-smi|hwloc|nccl-xml|json|auto

// Reads a file and parses it. Files over 64 MiB are refused. Errors are prefixed with the path.
StatusOr<NodeTopology> ImportTopologyFile(const std::string& path, TopoFormat format);
StatusOr<NodeTopology> ImportTopologyText(const std::string& text, const std::string& source,
                                          TopoFormat format);
// Whole-file read with a size cap; NotFound / InvalidArgument naming the path.
StatusOr<std::string> ReadFileToString(const std::string& path, size_t max_bytes = 64u << 20);

}  // namespace toposched::topo::io
