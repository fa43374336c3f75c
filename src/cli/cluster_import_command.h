// `toposched cluster import --slurm-topology topology.conf ...` or `--kube-nodes nodes.json`: a
// cluster spec (YAML) from an existing Slurm topology.conf, or from a Kubernetes node list
// (`kubectl get nodes -o json`), and node topology files, without a running Slurm or API server.
// Flags are read here only; the work is topo::io::ReadSlurmTopologyCluster /
// ReadKubeNodesCluster and FormatClusterYaml.
#pragma once

#include <CLI/CLI.hpp>

namespace toposched::cli {

// Adds `import` under the `cluster` subcommand. Exit code in `rc`: 0 written, 1 bad input (the
// message names file:line:column for topology.conf errors; --out is then left untouched),
// 2 usage.
void AddClusterImportCommand(CLI::App& cluster, int& rc);

}  // namespace toposched::cli
