// `toposched place`: one pass of gang placement over a jobs file, in file order, on a cluster
// (optionally starting from a saved ClusterState); each placed job is allocated before the next
// is considered. Prints per job its state, nodes, ranks, predicted and best possible times.
#pragma once

#include <CLI/CLI.hpp>

namespace toposched::cli {

// Adds `place --cluster FILE --jobs FILE [--state FILE] [--policy NAME] [--json] [--ranks]`
// (policies: placer/policy.h; the job file holds one spec or a `jobs:` list; text output lists
// ranks one line per node, every rank with --ranks). Exit code in `rc`: 0 when the
// pass ran (some jobs may stay PENDING), 1 bad input, 2 usage.
// JSON: {"jobs": [{"name", "state", "nodes": [...], "ranks": [{"rank", "node", "gpu", "nic"}],
//        "predicted_ms", "best_possible_ms", "explanation", "decision_us"}]}
// ("gpu" is the GPU index as nvidia-smi numbers it; "nic" the NIC name or null; the times are
// null for a PENDING job).
void AddPlaceCommand(CLI::App& app, int& rc);

}  // namespace toposched::cli
