// `toposched place-node`: the best GPU set on one node for a request, in rank order, with the
// NIC, NUMA node and CPUs of every rank, the launcher environment and slow-path warnings.
#pragma once

#include <CLI/CLI.hpp>

namespace toposched::cli {

// Adds `place-node --topo FILE --gpus K [--tp T] [--free SPEC] [--dp-bytes B] [--tp-bytes B]
// [--format F] [--json]`. Exit code in `rc`: 0 placed, 1 bad input or no fit (reason printed).
void AddPlaceNodeCommand(CLI::App& app, int& rc);

}  // namespace toposched::cli
