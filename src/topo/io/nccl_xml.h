// Reader for NCCL topology XML (NCCL_TOPO_FILE / NCCL_TOPO_DUMP_FILE format: <system><cpu>
// <pci> <gpu> <nic><net> <nvlink>), including cloud VM variants. Errors carry line numbers.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"
#include "topo/node_topology.h"

namespace toposched::topo::io {

StatusOr<NodeTopology> ParseNcclXml(std::string_view text, const std::string& source);
bool LooksLikeNcclXml(std::string_view text);

}  // namespace toposched::topo::io
