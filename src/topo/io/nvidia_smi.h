// Reader for `nvidia-smi topo -m` text (every variant seen in the wild: with or without legend,
// affinity columns present/absent/blank, NIC rows and NIC legend, ANSI remnants, tabs or
// spaces, wrapped headers, SOC as old SYS), plus the side outputs `nvidia-smi topo -p2p` and
// `nvidia-smi nvlink -s`. Errors carry "<source>:<line>:<column>: ...". Never crashes.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "topo/node_topology.h"

namespace toposched::topo::io {

// Parses a `topo -m` matrix. `source` names the input in errors and in NodeTopology::source.
// InvalidArgument with line:column for broken input.
StatusOr<NodeTopology> ParseNvidiaSmiTopo(std::string_view text, const std::string& source);

// True when the text looks like `topo -m` output (a header row of GPU0.. and a GPU0 row).
bool LooksLikeNvidiaSmiTopo(std::string_view text);

// `nvidia-smi topo -p2p r|w|rw|n|a`: status per GPU pair ("OK", "CNS", "NS", "TNS", ...).
struct P2pMatrix {
  std::string mode;                              // "read", "write", ... when the legend says
  std::vector<int> gpus;                         // GPU indices in row order
  std::vector<std::vector<std::string>> status;  // status[i][j], "X" on the diagonal
};
StatusOr<P2pMatrix> ParseNvidiaSmiP2p(std::string_view text, const std::string& source);
bool LooksLikeNvidiaSmiP2p(std::string_view text);

// `nvidia-smi nvlink -s` (or --status): per GPU the link rates; inactive links counted apart.
struct NvlinkStatus {
  struct GpuLinks {
    int index = 0;
    std::string name;               // "NVIDIA H100 80GB HBM3" when printed
    std::vector<double> link_gbps;  // GB/s of each active link, in link order
    int inactive = 0;
  };
  std::vector<GpuLinks> gpus;
};
StatusOr<NvlinkStatus> ParseNvidiaSmiNvlinkStatus(std::string_view text, const std::string& source);
bool LooksLikeNvidiaSmiNvlinkStatus(std::string_view text);

}  // namespace toposched::topo::io
