// Checks of the simulator's step-time model against published measurements, each a table of
// measured beside predicted (docs/evaluation.md, "Checks of the model"):
//   - Pollux throughput profiles (Qiao et al., OSDI'21; measured on 4-GPU T4 nodes): how a data-
//     parallel job's step time changes with the shape of its placement, step(shape)/step(packed);
//   - Crux (Cao et al., SIGCOMM'24 §2.2): a 64-GPU GPT job slowed when a 16-GPU BERT job shares
//     its ToR–aggregation links.
// Uses the cost model, the step model and the link model exactly as the replay does. Knows
// nothing of traces, queues or the clock.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "cost/cost_model.h"
#include "sim/step_model.h"
#include "topo/cluster.h"

namespace toposched::sim {

// One row of a Pollux `placements.csv`: `placement` is a digit string of GPUs per node ("22" =
// two nodes with two GPUs each), step and sync times in seconds.
struct ProfileRow {
  std::string placement;
  int local_bsz = 0;
  double step_s = 0;
  double sync_s = 0;
};

// Parses `placement,local_bsz,step_time,sync_time` (that header first). InvalidArgument
// `source:line:column: <field>: expected ...` on a malformed line; at most 100,000 rows.
StatusOr<std::vector<ProfileRow>> ParsePlacementsCsv(const std::string& text,
                                                     const std::string& source);

// One shape of one app at one local batch size.
struct ShapeCheck {
  std::string placement;  // the shape checked, e.g. "1111"
  std::string packed;     // the packed shape of the same replica count, e.g. "4"
  int local_bsz = 0;
  double measured_ratio = 0;   // measured step(shape) / step(packed)
  double predicted_ratio = 0;  // the model's step(shape) / step(packed)
};

// The model's ratios for every multi-node shape of `rows` whose packed shape (fewest nodes for
// the same replica count, then the most GPUs on the first nodes) and one-GPU row ("1") are
// measured at the same local batch size. Compute per step is the one-GPU measurement less its
// sync time (what the placement cannot change); the model adds the gradient all-reduce of
// `grad_bytes` on the shape's GPUs (nodes 0.., GPUs 0.. of each) from `cost`, less what hides
// behind the backward pass (2/3 of compute) up to `overlap`. InvalidArgument when a shape needs
// more nodes or GPUs per node than the cost model's cluster has; errors of the cost model.
StatusOr<std::vector<ShapeCheck>> CheckPlacementProfile(const std::vector<ProfileRow>& rows,
                                                        const cost::CostModel& cost,
                                                        double grad_bytes, double overlap);

// The median of `v` (the mean of the two middle values for an even count; 0 for none).
double Median(std::vector<double> v);
// |predicted − measured| / measured, median over the checks (0 for none).
double MedianRelativeError(const std::vector<ShapeCheck>& checks);

// The Crux scenario on a two-tier fabric: `hosts_per_tor` hosts under each of two ToRs, one
// aggregation switch above them, ToR uplinks tapered by `oversubscription`; a GPT job on
// `gpt_hosts_per_tor` hosts of each ToR, a BERT job on `bert_hosts_per_tor` of each. The link
// model's factor for GPT's network parts alone and beside BERT, and what that makes of GPT's
// iteration time for a given exposed network share of it.
struct CruxResult {
  double gpt_alone_factor = 1;   // LinkModel::AloneFactor of the GPT job
  double gpt_shared_factor = 1;  // LinkModel::Factor with BERT on the same links
  // Iteration time beside BERT over alone, when `network_share` of GPT's alone iteration is
  // exposed network communication: 1 + share · (shared / alone − 1).
  double IterationRatio(double network_share) const;
};
StatusOr<CruxResult> CheckCruxScenario(const topo::Cluster& cluster, int gpt_hosts_per_tor,
                                       int bert_hosts_per_tor);

}  // namespace toposched::sim
