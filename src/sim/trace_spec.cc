#include "sim/trace_spec.h"

#include <algorithm>

#include "sim/step_model.h"

namespace toposched::sim {

StatusOr<job::JobSpec> MakeJobSpec(const TraceJob& j, const std::string& source, int max_tp) {
  const StepCatalog& catalog = StepCatalog::Default();
  job::JobSpec s;
  s.name = j.name;
  s.user = j.user.empty() ? "trace" : j.user;
  s.priority = j.priority;
  s.constraints.gpu_model = j.gpu_model;
  RETURN_IF_ERROR(CheckModelKnown(j, catalog, source));
  if (!IsTransformer(j, catalog)) {
    // Data-parallel: one replica per GPU, every step an all-reduce of the gradients.
    const ModelEntry* m = catalog.FindModel(j.model.empty() ? catalog.default_model : j.model);
    s.model_params = j.model_params > 0 ? j.model_params : m->params;
    s.layout.tp = 1;
    s.layout.pp = 1;
    s.layout.dp = j.dp > 0 ? j.dp : j.gpus;
    s.total_gpus = j.gpus;
    s.layout.dp_bytes = static_cast<int64_t>(s.model_params * catalog.grad_bytes_per_param);
  } else if (j.tp > 0 || j.pp > 0 || j.dp > 0) {
    s.model_params = j.model_params > 0 ? j.model_params : catalog.transformer_min_params;
    s.layout.tp = std::max(j.tp, 1);
    s.layout.pp = std::max(j.pp, 1);
    s.layout.dp = j.dp;  // 0: derived from total_gpus by Normalize
    s.total_gpus = j.gpus;
  } else {
    s.model_params = j.model_params;
    int tp = 1;
    if (j.gpus <= std::max(max_tp, 1)) {
      tp = j.gpus;
    } else {
      while (tp * 2 <= max_tp && j.gpus % (tp * 2) == 0) tp *= 2;
    }
    s.layout.tp = tp;
    s.layout.dp = j.gpus / tp;
  }
  // A fractional request (openb gpu_milli < 1000, always 1 GPU) shares a GPU in the core.
  s.gpu_milli = j.gpu_milli;
  // An openb pod never spans nodes. Without this, a multi-GPU pod that finds no node with
  // enough free GPUs would be split over several nodes (the layout's TP group is only
  // preferred on one node), which no Kubernetes pod can be.
  if (j.one_node) {
    s.constraints.job.mode = job::ConstraintMode::kRequired;
    s.constraints.job.level = job::kLevelNode;
  }
  if (auto err = job::NormalizeSpec(s)) {
    return InvalidArgumentError(source + ":" + std::to_string(j.line) + ": job \"" + j.name +
                                "\": " + err->field + ": " + err->message);
  }
  return s;
}

}  // namespace toposched::sim
