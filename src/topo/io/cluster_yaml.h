// Cluster spec in YAML: hardware profiles (each pointing at a node-topology file or an inline
// synthetic description), host-name ranges, a network tree of any depth with per-level uplink
// bandwidth and oversubscription, NIC rails, and multi-node NVLink domains. Validation errors
// name file, line and field: `cluster.yaml:41: nodes[2].profile: unknown hardware profile "x"`.
#pragma once

#include <string>

#include "core/status.h"
#include "topo/cluster.h"

namespace toposched::topo::io {

// Topology files named in profiles are resolved relative to the spec's directory.
StatusOr<Cluster> ReadClusterYamlFile(const std::string& path);
StatusOr<Cluster> ParseClusterYaml(const std::string& text, const std::string& source,
                                   const std::string& base_dir);

// The spec of a cluster, as ParseClusterYaml reads it back: profiles by their topology file
// (written as given: relative paths are read relative to the spec's directory), nodes as host
// lists of consecutive nodes sharing profile and health, every level and domain (domains by
// parent), rails and NVLink domains. `header` is written first as '#' comment lines. Profile
// overrides (gpu_model, ...) are already applied to the topology and are not written back.
// InvalidArgument when a profile has no topology file (a synthetic profile) or the cluster does
// not validate.
StatusOr<std::string> FormatClusterYaml(const Cluster& cluster, const std::string& header = "");

}  // namespace toposched::topo::io
