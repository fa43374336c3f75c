// Random placement-quality cases for the ILP oracle: small clusters (≤ 16 nodes, built from real
// node samples under a two-level tree, tests/sched/testdata/ilp), random occupancies and random
// jobs. Deterministic for a seed. Shared by the quality test and the quality benchmark.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/status.h"
#include "job/job_spec.h"
#include "placer/gang.h"
#include "sched/ilp_oracle.h"
#include "state/cluster_state.h"
#include "topo/cluster.h"

namespace toposched::sched::ilp {

// Shapes of up to 16 nodes; the "-4" ones are small enough for brute force.
const std::vector<std::string>& QualityShapes();     // h100-16, v100-8, mixed-12
const std::vector<std::string>& BruteForceShapes();  // h100-4, mixed-4

// tests/sched/testdata/ilp/<shape>.yaml, loaded and finalized once per process.
StatusOr<const topo::Cluster*> LoadShape(const std::string& shape);

// A shape's cluster with its oracle and a default gang placer, built once per process.
struct Shape {
  const topo::Cluster* cluster = nullptr;
  std::unique_ptr<IlpOracle> oracle;
  std::unique_ptr<GangPlacer> placer;
};
StatusOr<Shape*> LoadShapeTools(const std::string& shape);

// Takes a random subset of each node's free GPUs as one allocation per node: per node the busy
// fraction is drawn from {0, 1/4, 1/2, 3/4, 1} weighted towards partly used nodes.
Status RandomOccupancy(ClusterState& state, std::mt19937_64& rng);

// TP in {1, 2, 4, 8}, PP in {1, 2, 4}, DP so that the world is 1..max_gpus; model size drawn
// from {1.3B, 7B, 13B, 70B} parameters; bytes from JobSpec::Normalize. Normalized.
job::JobSpec RandomJob(std::mt19937_64& rng, int max_gpus = 64);

// "≤8", "9-16", "17-32", "33-64"
std::string SizeClass(int gpus);

// One line: tp/pp/dp, GPUs, bytes; and the state's free GPUs per node.
std::string DescribeJob(const job::JobSpec& job);
std::string DescribeFree(const ClusterState& state);

}  // namespace toposched::sched::ilp
