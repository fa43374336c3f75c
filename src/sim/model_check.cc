#include "sim/model_check.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "core/strings.h"
#include "state/link_model.h"

namespace toposched::sim {

namespace {

constexpr int kMaxProfileRows = 100000;

Status RowError(const std::string& source, int line, int column, const std::string& what) {
  return InvalidArgumentError(source + ":" + std::to_string(line) + ":" + std::to_string(column) +
                              ": " + what);
}

int Replicas(const std::string& shape) {
  int r = 0;
  for (char c : shape) r += c - '0';
  return r;
}

// Packed before spread: fewer nodes first, then the larger digits first ("4" < "31" < "22").
bool MorePacked(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return a.size() < b.size();
  std::string sa = a, sb = b;
  std::sort(sa.rbegin(), sa.rend());
  std::sort(sb.rbegin(), sb.rend());
  return sa > sb;
}

}  // namespace

StatusOr<std::vector<ProfileRow>> ParsePlacementsCsv(const std::string& text,
                                                     const std::string& source) {
  std::vector<ProfileRow> rows;
  const std::vector<std::string> lines = Split(text, '\n');
  if (lines.empty() || Trim(lines[0]) != "placement,local_bsz,step_time,sync_time") {
    return RowError(source, 1, 1, "header: expected \"placement,local_bsz,step_time,sync_time\"");
  }
  for (size_t i = 1; i < lines.size(); ++i) {
    const int line = static_cast<int>(i) + 1;
    if (Trim(lines[i]).empty()) continue;
    if (static_cast<int>(rows.size()) >= kMaxProfileRows) {
      return RowError(source, line, 1, "more than 100000 rows");
    }
    const std::vector<std::string> f = Split(Trim(lines[i]), ',');
    if (f.size() != 4) {
      return RowError(source, line, 1, "expected 4 fields, got " + std::to_string(f.size()));
    }
    int column = 1;
    std::vector<int> columns;
    for (const std::string& field : f) {
      columns.push_back(column);
      column += static_cast<int>(field.size()) + 1;
    }
    ProfileRow r;
    r.placement = f[0];
    if (r.placement.empty() || r.placement.size() > 16 ||
        !std::all_of(r.placement.begin(), r.placement.end(),
                     [](char c) { return c >= '1' && c <= '9'; })) {
      return RowError(source, line, columns[0],
                      "placement: expected 1-16 digits 1-9 (GPUs per node), got \"" + f[0] + "\"");
    }
    StatusOr<long long> bsz = ParseInt(f[1]);
    if (!bsz.ok() || *bsz < 1 || *bsz > 1000000) {
      return RowError(source, line, columns[1],
                      "local_bsz: expected an integer in [1, 1000000], got \"" + f[1] + "\"");
    }
    r.local_bsz = static_cast<int>(*bsz);
    StatusOr<double> step = ParseDouble(f[2]);
    if (!step.ok() || !(*step > 0) || !std::isfinite(*step)) {
      return RowError(source, line, columns[2],
                      "step_time: expected seconds > 0, got \"" + f[2] + "\"");
    }
    StatusOr<double> sync = ParseDouble(f[3]);
    if (!sync.ok() || !(*sync >= 0) || !std::isfinite(*sync)) {
      return RowError(source, line, columns[3],
                      "sync_time: expected seconds >= 0, got \"" + f[3] + "\"");
    }
    r.step_s = *step;
    r.sync_s = *sync;
    rows.push_back(std::move(r));
  }
  return rows;
}

StatusOr<std::vector<ShapeCheck>> CheckPlacementProfile(const std::vector<ProfileRow>& rows,
                                                        const cost::CostModel& cost,
                                                        double grad_bytes, double overlap) {
  const topo::Cluster& c = cost.cluster();
  std::map<std::pair<std::string, int>, const ProfileRow*> at;  // (shape, bsz) → row
  std::map<std::pair<int, int>, std::string> packed;            // (replicas, bsz) → shape
  for (const ProfileRow& r : rows) {
    at[{r.placement, r.local_bsz}] = &r;
    auto [it, fresh] = packed.try_emplace({Replicas(r.placement), r.local_bsz}, r.placement);
    if (!fresh && MorePacked(r.placement, it->second)) it->second = r.placement;
  }
  // Predicted step (ms) of a shape at a batch size: compute + the exposed all-reduce (StepMs).
  auto predict = [&](const std::string& shape, double compute_ms) -> StatusOr<double> {
    if (shape.size() > c.nodes.size()) {
      return InvalidArgumentError("shape \"" + shape + "\" needs " + std::to_string(shape.size()) +
                                  " nodes; the cluster has " + std::to_string(c.nodes.size()));
    }
    std::vector<cost::GpuRef> gpus;
    for (size_t n = 0; n < shape.size(); ++n) {
      const int per_node = shape[n] - '0';
      if (per_node > static_cast<int>(c.topology(static_cast<int>(n)).gpus.size())) {
        return InvalidArgumentError("shape \"" + shape + "\" puts " + std::to_string(per_node) +
                                    " GPUs on a node of " + c.nodes[n].name);
      }
      for (int g = 0; g < per_node; ++g) gpus.push_back({static_cast<int>(n), g});
    }
    StepParts parts;
    parts.compute_ms = compute_ms;
    if (gpus.size() > 1) {
      ASSIGN_OR_RETURN(cost::Estimate e,
                       cost.Evaluate(cost::Collective::kAllReduce, gpus, grad_bytes));
      parts.dp_ms = e.time_ms;
    }
    return StepMs(parts, 1.0, overlap);
  };
  std::vector<ShapeCheck> out;
  for (const ProfileRow& r : rows) {
    if (r.placement.size() < 2) continue;  // one node: nothing crosses the network
    const std::string& ref = packed.at({Replicas(r.placement), r.local_bsz});
    if (ref == r.placement) continue;
    auto one = at.find({"1", r.local_bsz});
    if (one == at.end()) continue;
    const double compute_ms = 1e3 * std::max(1e-9, one->second->step_s - one->second->sync_s);
    ASSIGN_OR_RETURN(double shape_ms, predict(r.placement, compute_ms));
    ASSIGN_OR_RETURN(double ref_ms, predict(ref, compute_ms));
    ShapeCheck s;
    s.placement = r.placement;
    s.packed = ref;
    s.local_bsz = r.local_bsz;
    s.measured_ratio = r.step_s / at.at({ref, r.local_bsz})->step_s;
    s.predicted_ratio = shape_ms / ref_ms;
    out.push_back(std::move(s));
  }
  return out;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double MedianRelativeError(const std::vector<ShapeCheck>& checks) {
  std::vector<double> e;
  for (const ShapeCheck& s : checks) {
    e.push_back(std::abs(s.predicted_ratio - s.measured_ratio) / s.measured_ratio);
  }
  return Median(std::move(e));
}

double CruxResult::IterationRatio(double network_share) const {
  return 1.0 + network_share * (gpt_shared_factor / gpt_alone_factor - 1.0);
}

StatusOr<CruxResult> CheckCruxScenario(const topo::Cluster& cluster, int gpt_hosts_per_tor,
                                       int bert_hosts_per_tor) {
  if (cluster.levels.size() < 2) {
    return InvalidArgumentError("the Crux scenario needs two network tiers (ToR and above)");
  }
  const int tor_level = static_cast<int>(cluster.levels.size()) - 1;
  std::vector<int> tors;
  for (size_t d = 0; d < cluster.domains.size() && tors.size() < 2; ++d) {
    if (cluster.domains[d].level == tor_level) tors.push_back(static_cast<int>(d));
  }
  const int need = gpt_hosts_per_tor + bert_hosts_per_tor;
  if (tors.size() < 2 || gpt_hosts_per_tor < 1 || bert_hosts_per_tor < 1) {
    return InvalidArgumentError(
        "the Crux scenario needs two ToRs and one host of each job on each");
  }
  std::vector<std::pair<int, int>> gpt, bert;
  for (int t : tors) {
    const std::vector<int> hosts = cluster.NodesUnder(t);
    if (static_cast<int>(hosts.size()) < need) {
      return InvalidArgumentError("ToR " + cluster.domains[t].name + " has " +
                                  std::to_string(hosts.size()) + " hosts; the scenario needs " +
                                  std::to_string(need));
    }
    for (int k = 0; k < need; ++k) {
      const int gpus = static_cast<int>(cluster.topology(hosts[k]).gpus.size());
      (k < gpt_hosts_per_tor ? gpt : bert).emplace_back(hosts[k], gpus);
    }
  }
  sched::LinkModel links(cluster);
  const sched::LinkModel::Usage g = links.UsageOf(gpt);
  const sched::LinkModel::Usage b = links.UsageOf(bert);
  CruxResult r;
  r.gpt_alone_factor = links.AloneFactor(g);
  links.Add(g);
  links.Add(b);
  r.gpt_shared_factor = links.Factor(g);
  return r;
}

}  // namespace toposched::sim
