// A trace job as the job spec the simulator submits: its layout and model size, from the trace's
// own fields or the step model's catalog (data/models/catalog.json).
#pragma once

#include <string>

#include "core/status.h"
#include "job/job_spec.h"
#include "sim/trace.h"

namespace toposched::sim {

// The job spec the simulator submits for a trace job. Layout when the trace gives none
// (docs/simulator.md): GPUs ≤ max_tp is one TP group of all the GPUs (one node); more GPUs get
// TP = the largest power of two ≤ max_tp dividing the count and DP = the rest (32 → TP 8 × DP 4,
// 12 → TP 4 × DP 3). max_tp = min(8, most GPUs on one node of the cluster). One replica per TP
// group. A one_node job (openb pods) gets the constraint `job: required node`: it is placed on
// one node or not at all. Model size when the trace gives none: 1e9 parameters (the bytes only
// scale the communication time; the simulator uses the ratio of predicted to best-possible time).
// InvalidArgument (file:line) when the spec does not normalize.
StatusOr<job::JobSpec> MakeJobSpec(const TraceJob& j, const std::string& source, int max_tp);

}  // namespace toposched::sim
