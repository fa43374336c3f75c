#include "sched/ilp_cases.h"

#include <algorithm>
#include <map>
#include <mutex>

#include "topo/io/cluster_yaml.h"

namespace toposched::sched::ilp {

const std::vector<std::string>& QualityShapes() {
  static const std::vector<std::string> kShapes = {"h100-16", "v100-8", "mixed-12"};
  return kShapes;
}

const std::vector<std::string>& BruteForceShapes() {
  static const std::vector<std::string> kShapes = {"h100-4", "mixed-4"};
  return kShapes;
}

StatusOr<const topo::Cluster*> LoadShape(const std::string& shape) {
  static std::mutex mu;
  static auto* cache = new std::map<std::string, std::unique_ptr<topo::Cluster>>();
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache->find(shape);
  if (it != cache->end()) return it->second.get();
  ASSIGN_OR_RETURN(topo::Cluster c,
                   topo::io::ReadClusterYamlFile(std::string(TS_SOURCE_DIR) +
                                                 "/tests/sched/testdata/ilp/" + shape + ".yaml"));
  c.Finalize();
  auto owned = std::make_unique<topo::Cluster>(std::move(c));
  const topo::Cluster* p = owned.get();
  cache->emplace(shape, std::move(owned));
  return p;
}

StatusOr<Shape*> LoadShapeTools(const std::string& shape) {
  static std::mutex mu;
  static auto* cache = new std::map<std::string, Shape>();
  ASSIGN_OR_RETURN(const topo::Cluster* c, LoadShape(shape));
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache->find(shape);
  if (it != cache->end()) return &it->second;
  Shape s;
  s.cluster = c;
  ASSIGN_OR_RETURN(s.oracle, IlpOracle::Create(*c));
  GangPlacerOptions placer_options;
  placer_options.cost_model = OracleCostOptions();
  ASSIGN_OR_RETURN(s.placer, GangPlacer::Create(*c, placer_options));
  return &cache->emplace(shape, std::move(s)).first->second;
}

Status RandomOccupancy(ClusterState& state, std::mt19937_64& rng) {
  static const double kBusy[] = {0, 0.25, 0.25, 0.5, 0.5, 0.75, 0.75, 1.0};
  const topo::Cluster& c = state.cluster();
  std::vector<AllocId> ids = state.AllocationIds();
  int64_t id = ids.empty() ? 1 : ids.back().key() + 1;
  for (size_t n = 0; n < c.nodes.size(); ++n) {
    const int node = static_cast<int>(n);
    std::vector<int> free = state.FreeMask(node).Positions();
    std::shuffle(free.begin(), free.end(), rng);
    const double busy = kBusy[std::uniform_int_distribution<int>(0, 7)(rng)];
    const int take = static_cast<int>(busy * static_cast<double>(free.size()) + 0.5);
    if (take == 0) continue;
    GpuMask m;
    for (int i = 0; i < take; ++i) m.set(free[i]);
    RETURN_IF_ERROR(state.Allocate(AllocId::FromKey(id++), {NodeGpus{node, m}}));
  }
  return OkStatus();
}

job::JobSpec RandomJob(std::mt19937_64& rng, int max_gpus) {
  static const int kTp[] = {1, 2, 4, 8};
  static const int kPp[] = {1, 1, 2, 4};
  static const double kParams[] = {1.3e9, 7e9, 13e9, 70e9};
  job::JobSpec j;
  j.name = "quality";
  for (;;) {
    j.layout.tp = kTp[std::uniform_int_distribution<int>(0, 3)(rng)];
    j.layout.pp = kPp[std::uniform_int_distribution<int>(0, 3)(rng)];
    if (j.layout.tp * j.layout.pp <= max_gpus) break;
  }
  j.layout.dp = std::uniform_int_distribution<int>(1, max_gpus / (j.layout.tp * j.layout.pp))(rng);
  j.model_params = kParams[std::uniform_int_distribution<int>(0, 3)(rng)];
  Status st = j.Normalize();
  (void)st;  // every drawn shape is valid
  return j;
}

std::string SizeClass(int gpus) {
  if (gpus <= 8) return "1-8";
  if (gpus <= 16) return "9-16";
  if (gpus <= 32) return "17-32";
  return "33-64";
}

std::string DescribeJob(const job::JobSpec& job) {
  const job::Layout& l = job.layout;
  return std::to_string(l.WorldSize()) + " GPUs tp=" + std::to_string(l.tp) +
         " pp=" + std::to_string(l.pp) + " dp=" + std::to_string(l.dp) +
         " dp_bytes=" + std::to_string(l.dp_bytes) + " tp_bytes=" + std::to_string(l.tp_bytes) +
         " pp_bytes=" + std::to_string(l.pp_bytes);
}

std::string DescribeFree(const ClusterState& state) {
  std::string s;
  const topo::Cluster& c = state.cluster();
  for (size_t n = 0; n < c.nodes.size(); ++n) {
    s += (n ? " " : "") + c.nodes[n].name + ":" + state.FreeMask(static_cast<int>(n)).ToString();
  }
  return s;
}

}  // namespace toposched::sched::ilp
