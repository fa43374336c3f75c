// `toposched cluster import --slurm-topology topology.conf ...`: a cluster spec (YAML) from an
// existing Slurm topology.conf and node topology files, without a running Slurm. Flags are read
// here only; the work is topo::io::ReadSlurmTopologyCluster and FormatClusterYaml.
#pragma once

#include <CLI/CLI.hpp>

namespace toposched::cli {

// Adds `import` under the `cluster` subcommand. Exit code in `rc`: 0 written, 1 bad input (the
// message names file:line:column for topology.conf errors; --out is then left untouched),
// 2 usage.
void AddClusterImportCommand(CLI::App& cluster, int& rc);

}  // namespace toposched::cli
