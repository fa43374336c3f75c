#include "sim/step_model.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "placement/group_shape.h"

namespace toposched::sim {

namespace {

// data/models/catalog.json, embedded by the build (CMakeLists.txt).
const char kEmbeddedCatalog[] =
#include "embedded_catalog_json.inc"
    ;

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Reads a number at `path` of `j` into *out; InvalidArgument naming the JSON path otherwise.
Status Num(const nlohmann::json& j, const std::string& key, const std::string& path,
           const std::string& source, double lo, double hi, double* out) {
  if (!j.contains(key) || !j[key].is_number()) {
    return InvalidArgumentError(source + ": " + path + "." + key + ": expected a number");
  }
  const double v = j[key].get<double>();
  if (!(v >= lo && v <= hi)) {
    return InvalidArgumentError(source + ": " + path + "." + key + ": expected a number in [" +
                                std::to_string(lo) + ", " + std::to_string(hi) + "], got " +
                                std::to_string(v));
  }
  *out = v;
  return OkStatus();
}

Status Str(const nlohmann::json& j, const std::string& key, const std::string& path,
           const std::string& source, std::string* out) {
  if (!j.contains(key) || !j[key].is_string()) {
    return InvalidArgumentError(source + ": " + path + "." + key + ": expected a string");
  }
  *out = j[key].get<std::string>();
  return OkStatus();
}

Status ParseTables(const nlohmann::json& root, const std::string& src, StepCatalog& c) {
  if (!root.contains("gpus") || !root["gpus"].is_array() || root["gpus"].empty()) {
    return InvalidArgumentError(src + ": $.gpus: expected a non-empty array");
  }
  for (size_t i = 0; i < root["gpus"].size(); ++i) {
    const std::string path = "$.gpus[" + std::to_string(i) + "]";
    GpuThroughput g;
    RETURN_IF_ERROR(Str(root["gpus"][i], "match", path, src, &g.match));
    RETURN_IF_ERROR(Num(root["gpus"][i], "peak_tflops", path, src, 1e-3, 1e6, &g.peak_tflops));
    RETURN_IF_ERROR(
        Num(root["gpus"][i], "sustained_fraction", path, src, 1e-3, 1, &g.sustained_fraction));
    c.gpus.push_back(std::move(g));
  }
  if (!c.gpus.back().match.empty()) {
    return InvalidArgumentError(src + ": $.gpus: the last row must match any model (\"\")");
  }
  if (!root.contains("models") || !root["models"].is_array()) {
    return InvalidArgumentError(src + ": $.models: expected an array");
  }
  for (size_t i = 0; i < root["models"].size(); ++i) {
    const std::string path = "$.models[" + std::to_string(i) + "]";
    ModelEntry m;
    RETURN_IF_ERROR(Str(root["models"][i], "name", path, src, &m.name));
    RETURN_IF_ERROR(Num(root["models"][i], "params", path, src, 1, 1e15, &m.params));
    RETURN_IF_ERROR(Num(root["models"][i], "train_flops_per_sample", path, src, 1, 1e21,
                        &m.train_flops_per_sample));
    m.name = Lower(m.name);
    c.models.push_back(std::move(m));
  }
  return OkStatus();
}

Status ParseConstants(const nlohmann::json& root, const std::string& src, StepCatalog& c) {
  for (const char* k : {"data_parallel", "transformer", "overlap"}) {
    if (!root.contains(k) || !root[k].is_object()) {
      return InvalidArgumentError(src + ": $." + k + ": expected an object");
    }
  }
  const auto& dp = root["data_parallel"];
  double batch = 0, allreduces = 0, transfers = 0;
  RETURN_IF_ERROR(Num(dp, "batch_per_gpu", "$.data_parallel", src, 1, 1e6, &batch));
  c.dp_batch_per_gpu = static_cast<int>(batch);
  RETURN_IF_ERROR(
      Num(dp, "grad_bytes_per_param", "$.data_parallel", src, 0.5, 16, &c.grad_bytes_per_param));
  RETURN_IF_ERROR(Str(dp, "default_model", "$.data_parallel", src, &c.default_model));
  c.default_model = Lower(c.default_model);
  const auto& t = root["transformer"];
  RETURN_IF_ERROR(
      Num(t, "global_batch_tokens", "$.transformer", src, 1, 1e12, &c.global_batch_tokens));
  RETURN_IF_ERROR(
      Num(t, "flops_per_param_token", "$.transformer", src, 1, 100, &c.flops_per_param_token));
  RETURN_IF_ERROR(Num(t, "tp_allreduces_per_layer", "$.transformer", src, 0, 100, &allreduces));
  RETURN_IF_ERROR(Num(t, "pp_transfers_per_microbatch", "$.transformer", src, 0, 100, &transfers));
  c.tp_allreduces_per_layer = static_cast<int>(allreduces);
  c.pp_transfers_per_microbatch = static_cast<int>(transfers);
  RETURN_IF_ERROR(Num(t, "min_params", "$.transformer", src, 0, 1e15, &c.transformer_min_params));
  RETURN_IF_ERROR(
      Num(root["overlap"], "dp_backward_overlap", "$.overlap", src, 0, 1, &c.dp_backward_overlap));
  if (c.FindModel(c.default_model) == nullptr) {
    return InvalidArgumentError(src + ": $.data_parallel.default_model: \"" + c.default_model +
                                "\" is not in $.models");
  }
  return OkStatus();
}

}  // namespace

StatusOr<StepCatalog> StepCatalog::Parse(const std::string& json, const std::string& source) {
  nlohmann::json root = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object()) {
    return InvalidArgumentError(source + ": not a JSON object");
  }
  StepCatalog c;
  RETURN_IF_ERROR(ParseTables(root, source, c));
  RETURN_IF_ERROR(ParseConstants(root, source, c));
  return c;
}

const StepCatalog& StepCatalog::Default() {
  static const StepCatalog* const kCatalog = [] {
    StatusOr<StepCatalog> c = Parse(kEmbeddedCatalog, "data/models/catalog.json");
    if (!c.ok()) {
      std::fprintf(stderr, "embedded catalog: %s\n", c.status().message().c_str());
      std::abort();
    }
    return new StepCatalog(std::move(*c));
  }();
  return *kCatalog;
}

const ModelEntry* StepCatalog::FindModel(const std::string& name) const {
  const std::string key = Lower(name);
  for (const ModelEntry& m : models) {
    if (m.name == key) return &m;
  }
  return nullptr;
}

double StepCatalog::SustainedFlops(const std::string& gpu_model) const {
  for (const GpuThroughput& g : gpus) {
    if (g.match.empty() || gpu_model.find(g.match) != std::string::npos) {
      return g.peak_tflops * 1e12 * g.sustained_fraction;
    }
  }
  return gpus.back().peak_tflops * 1e12 * gpus.back().sustained_fraction;
}

Status CheckModelKnown(const TraceJob& j, const StepCatalog& catalog, const std::string& source) {
  if (j.model.empty() || catalog.FindModel(j.model) != nullptr) return OkStatus();
  return InvalidArgumentError(source + ":" + std::to_string(j.line) + ": job \"" + j.name +
                              "\": model \"" + j.model + "\" is not in the catalog");
}

bool IsTransformer(const TraceJob& j, const StepCatalog& catalog) {
  if (!j.model.empty() && catalog.FindModel(j.model) != nullptr) return false;
  const bool big = j.model_params > 0 && j.model_params >= catalog.transformer_min_params;
  return big || j.tp > 1 || j.pp > 1;
}

StatusOr<Workload> WorkloadOf(const TraceJob& j, const job::JobSpec& spec,
                              const StepCatalog& catalog, const std::string& source) {
  Workload w;
  const job::Layout& l = spec.layout;
  RETURN_IF_ERROR(CheckModelKnown(j, catalog, source));
  const ModelEntry* named = j.model.empty() ? nullptr : catalog.FindModel(j.model);
  w.transformer = IsTransformer(j, catalog);
  const double world = std::max(1, spec.total_gpus);
  if (!w.transformer) {
    const ModelEntry* m = named != nullptr ? named : catalog.FindModel(catalog.default_model);
    w.model = m->name;
    // A fractional job runs one replica on its share of a GPU: the same work per step.
    w.flops_per_gpu = m->train_flops_per_sample * catalog.dp_batch_per_gpu;
    return w;
  }
  const double params = spec.model_params;
  const double hidden = std::max(1, spec.hidden_size);
  w.layers = std::max(1.0, std::round(params / (12.0 * hidden * hidden)));
  const double dp = std::max(1, l.dp);
  const double tokens_per_replica = catalog.global_batch_tokens / dp;
  w.microbatches =
      std::max(1.0, std::round(tokens_per_replica / (spec.micro_batch * spec.seq_len)));
  w.flops_per_gpu = catalog.flops_per_param_token * params * catalog.global_batch_tokens / world;
  return w;
}

namespace {

bool SpansNodes(const std::vector<sched::RankSlot>& ranks, const std::vector<int>& group) {
  for (int r : group) {
    if (ranks[r].node != ranks[group.front()].node) return true;
  }
  return false;
}

}  // namespace

StatusOr<StepParts> StepPartsOn(const cost::CostModel& cost, const job::JobSpec& spec,
                                const Workload& w, const std::vector<sched::RankSlot>& ranks,
                                const StepCatalog& catalog) {
  StepParts p;
  const topo::Cluster& cluster = cost.cluster();
  double flops = 0;
  for (const sched::RankSlot& r : ranks) {
    const double f = catalog.SustainedFlops(cluster.topology(r.node).gpu_model);
    flops = flops == 0 ? f : std::min(flops, f);
  }
  if (flops <= 0) flops = catalog.SustainedFlops("");
  const job::Layout& l = spec.layout;
  const double bubble = w.transformer ? (l.pp - 1) / w.microbatches : 0.0;
  p.compute_ms = w.flops_per_gpu / flops * 1e3 * (1.0 + bubble);
  if (ranks.size() < 2) return p;
  sched::Placement scored;
  scored.ranks = ranks;
  RETURN_IF_ERROR(sched::ScorePlacement(cost, l, scored));
  if (w.transformer) {
    p.tp_ms = scored.tp_ms * catalog.tp_allreduces_per_layer * (w.layers / l.pp) * w.microbatches;
    p.pp_ms = scored.pp_ms * catalog.pp_transfers_per_microbatch * w.microbatches;
  } else {
    p.tp_ms = scored.tp_ms;
    p.pp_ms = scored.pp_ms;
  }
  p.dp_ms = scored.dp_ms;
  // A kind's communication crosses the network when any of its groups does; a group that
  // spans nodes has a worse shape than one that does not, so the worst-shaped group tells.
  const int tp_worst = sched::WorstTpGroupRank(cluster, l, ranks);
  const int dp_worst = sched::WorstDpGroupRank(cluster, l, ranks);
  p.tp_net = l.tp > 1 && SpansNodes(ranks, l.TpGroup(std::max(tp_worst, 0)));
  p.dp_net = l.dp > 1 && SpansNodes(ranks, l.DpGroup(std::max(dp_worst, 0)));
  p.pp_net = l.pp > 1 &&
             (SpansNodes(ranks, l.PpGroup(0)) || sched::WorstPpPairRank(cluster, l, ranks) > 0);
  return p;
}

double StepMs(const StepParts& p, double contention, double overlap) {
  const double c = std::max(1.0, contention);
  const double dp = p.dp_ms * (p.dp_net ? c : 1.0);
  return p.compute_ms + p.tp_ms * (p.tp_net ? c : 1.0) + p.pp_ms * (p.pp_net ? c : 1.0) +
         std::max(0.0, dp - overlap * p.backward_ms());
}

}  // namespace toposched::sim
