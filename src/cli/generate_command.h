// `toposched cluster generate`: writes a synthetic cluster spec (and, optionally, a cluster state
// with a realistic mix of running jobs placed by the gang scheduler itself) for tests,
// benchmarks and demos at any size. Deterministic: the same arguments give the same bytes.
// Only this CLI layer reads flags; the generators below take plain options.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "core/status.h"
#include "topo/cluster.h"

namespace toposched::cli {

struct GenerateOptions {
  int nodes = 0;                 // ≥ 1
  int gpus_per_node = 8;         // 1..64; builds the profile's synthetic description (the CLI
                                 // defaults to 4 for gb200-nvl72, whose node has exactly 4)
  int nodes_per_leaf = 0;        // ≥ 1: nodes under one leaf switch
  int leaves_per_spine = 0;      // ≥ 1: leaves under one spine switch
  std::string profile = "h100";  // h100 | h200 | b200 | a100 | pcie | gb200-nvl72 (racks of 18
                                 // trays x 4 GPUs, each rack one NVLink domain: nodes and
                                 // nodes_per_leaf multiples of 18)
  double occupancy = -1;         // < 0: no state; else in [0, 1)
  uint64_t seed = 1;
  // InvalidArgument naming the first bad field.
  Status Validate() const;
};

// The cluster spec (YAML, docs/cluster-spec.md). InvalidArgument for invalid options.
StatusOr<std::string> GenerateClusterYaml(const GenerateOptions& o);

// Running jobs filling `o.occupancy` of the GPUs of `cluster` (Finalize()d, built from
// GenerateClusterYaml), as WriteClusterStateJson writes them. Job sizes (GPUs) are drawn with
// these weights (percent): 1: 30, 2: 20, 4: 15, 8: 20, 16: 7, 32: 5, 64: 3. A job of at most one
// node's GPUs is one replica with TP = its size; a larger one takes whole nodes (rounded up),
// TP = GPUs per node, DP = nodes. A draw that would overshoot the target floor(F · GPUs) is
// redrawn among the sizes that still fit; a size that no longer fits the free capacity is dropped
// from the mix; generation stops when no size is left, so the result is the target unless
// fragmentation stops it earlier. Each job goes through GangPlacer::Place (best fit: small jobs
// pack into partly used nodes, so whole free nodes stay for large jobs) and
// ClusterState::Allocate with ids 1, 2, ... Randomness: std::mt19937_64 seeded with `o.seed`
// and a portable integer sampler. Cost: one Place per job.
StatusOr<std::string> GenerateStateJson(const topo::Cluster& cluster, const GenerateOptions& o);

// Adds `generate` under the `cluster` subcommand. Exit code in `rc`: 0 written, 1 bad input
// (out-of-range values, unknown profile, unwritable directory), 2 usage (missing or
// non-numeric option).
void AddClusterGenerateCommand(CLI::App& cluster, int& rc);

}  // namespace toposched::cli
