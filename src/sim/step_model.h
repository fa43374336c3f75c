// A training job's step time on a placement: compute from its FLOPs per step and the GPUs'
// sustained throughput, plus the communication the cost model predicts for its layout (TP
// all-reduces per layer and micro-batch, PP transfers per micro-batch, the DP gradient
// all-reduce less what hides behind the backward pass). Every constant is data
// (data/models/catalog.json), each with its source. Knows nothing of queues or the clock.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "cost/cost_model.h"
#include "job/job_spec.h"
#include "placer/gang.h"
#include "sim/trace.h"

namespace toposched::sim {

struct GpuThroughput {
  std::string match;  // substring of the GPU model name; "" matches any (the fallback row)
  double peak_tflops = 0;
  double sustained_fraction = 0;  // model FLOPs utilisation reached in training, in (0, 1]
};

struct ModelEntry {
  std::string name;
  double params = 0;
  double train_flops_per_sample = 0;  // forward + backward, one sample
};

// The constants of data/models/catalog.json.
struct StepCatalog {
  std::vector<GpuThroughput> gpus;  // first match wins; the last row matches any
  std::vector<ModelEntry> models;   // data-parallel models by name
  int dp_batch_per_gpu = 0;
  double grad_bytes_per_param = 0;
  std::string default_model;
  double global_batch_tokens = 0;
  double flops_per_param_token = 0;
  int tp_allreduces_per_layer = 0;
  int pp_transfers_per_microbatch = 0;
  double transformer_min_params = 0;
  double dp_backward_overlap = 0;  // in [0, 1]

  // The embedded catalog. Aborts if the embedded file is broken (a test parses it).
  static const StepCatalog& Default();
  // InvalidArgument `source: $.models[3].params: expected a number > 0` on bad input.
  static StatusOr<StepCatalog> Parse(const std::string& json, const std::string& source);
  const ModelEntry* FindModel(const std::string& name) const;  // case-insensitive; nullptr
  // Sustained FLOP/s of one GPU of this model (peak · sustained fraction).
  double SustainedFlops(const std::string& gpu_model) const;
};

// What a job computes per step, independent of where it runs.
struct Workload {
  bool transformer = false;  // Megatron-style TP/PP/DP transformer, else data-parallel
  double flops_per_gpu = 0;  // compute FLOPs of one GPU per step, before the PP bubble
  double microbatches = 1;   // per replica per step (transformer)
  double layers = 0;         // transformer layers (params / (12 · hidden²))
  std::string model;         // catalog model name, or "" for a transformer by size
};

// OK unless the trace job names a model the catalog lacks: InvalidArgument
// `source:line: job "x": model "y" is not in the catalog`.
Status CheckModelKnown(const TraceJob& j, const StepCatalog& catalog, const std::string& source);

// Whether the trace job is a Megatron-style transformer: no catalog model named, and a model
// size of at least transformer_min_params or a TP/PP layout. Otherwise data-parallel.
bool IsTransformer(const TraceJob& j, const StepCatalog& catalog);

// Data-parallel when the trace names a catalog model, or gives neither a model size of at
// least transformer_min_params nor a TP/PP layout; the model is then the named one or the
// default. The errors of CheckModelKnown.
StatusOr<Workload> WorkloadOf(const TraceJob& j, const job::JobSpec& spec,
                              const StepCatalog& catalog, const std::string& source);

// One step's parts on a placement, in ms, at full link speed (no other job on the links).
struct StepParts {
  double compute_ms = 0;                                // including the PP bubble
  double tp_ms = 0;                                     // all TP all-reduces of a step
  double pp_ms = 0;                                     // all PP transfers of a step
  double dp_ms = 0;                                     // the gradient all-reduce (before overlap)
  bool tp_net = false, pp_net = false, dp_net = false;  // crosses nodes (shares network links)
  double backward_ms() const { return compute_ms * 2.0 / 3.0; }
};

// Parts of a step for the job's layout on `ranks` (Megatron order), from `cost` (the simulator
// passes a model of the untapered network: link sharing is applied by LinkModel) and the
// slowest GPU model among the placement's nodes. Errors of the cost model.
StatusOr<StepParts> StepPartsOn(const cost::CostModel& cost, const job::JobSpec& spec,
                                const Workload& w, const std::vector<sched::RankSlot>& ranks,
                                const StepCatalog& catalog);

// Step time in ms with the network parts slowed by `contention` (≥ 1) and DP communication
// hidden behind the backward pass up to `overlap` of it:
//   compute + tp·c_tp + pp·c_pp + max(0, dp·c_dp − overlap · backward)
double StepMs(const StepParts& p, double contention, double overlap);

}  // namespace toposched::sim
