#include "placer/job_views.h"

#include <algorithm>
#include <cstdint>

namespace toposched::sched {

std::string PlacementShapeKey(const job::JobSpec& j) {
  const job::Layout& l = j.layout;
  const job::Constraints& c = j.constraints;
  return std::to_string(l.tp) + "/" + std::to_string(l.pp) + "/" + std::to_string(l.dp) + "/" +
         std::to_string(l.tp_bytes) + "/" + std::to_string(l.pp_bytes) + "/" +
         std::to_string(l.dp_bytes) + "/" + job::ConstraintModeName(c.job.mode) + ":" +
         c.job.level + "/" + job::ConstraintModeName(c.tp.mode) + ":" + c.tp.level + "/" +
         c.gpu_model + "/" + (c.rdma_required ? "rdma" : "") +
         (j.Fractional() ? "/milli" + std::to_string(j.gpu_milli) : "");
}

const std::string& NodeGpuModel(const topo::NodeTopology& t) {
  static const std::string kEmpty;
  if (!t.gpu_model.empty()) return t.gpu_model;
  return t.gpus.empty() ? kEmpty : t.gpus[0].model;
}

bool HasRdma(const topo::NodeTopology& t) {
  for (const topo::Nic& n : t.nics) {
    if (n.health == topo::Health::kUnhealthy) continue;
    if (n.link_layer == topo::LinkLayer::kInfiniBand || n.link_layer == topo::LinkLayer::kRoCE) {
      return true;
    }
  }
  return false;
}

NodeRequest NodeRequestFor(const job::Layout& l, int gpus, int tp) {
  NodeRequest req;
  req.gpus = gpus;
  req.tp = tp;
  req.dp_bytes = static_cast<double>(std::max<int64_t>(l.dp_bytes, 0));
  req.tp_bytes = static_cast<double>(std::max<int64_t>(l.tp_bytes, 0));
  return req;
}

}  // namespace toposched::sched
