// Reader for hwloc XML exports through libhwloc (PCI tree, NUMA, OS devices, and the
// NVLinkBandwidth distance matrix when present). Errors name the file.
#pragma once

#include <string>

#include "core/status.h"
#include "topo/node_topology.h"

namespace toposched::topo::io {

StatusOr<NodeTopology> ReadHwlocXmlFile(const std::string& path);
StatusOr<NodeTopology> ParseHwlocXml(const std::string& text, const std::string& source);
bool LooksLikeHwlocXml(std::string_view text);

}  // namespace toposched::topo::io
