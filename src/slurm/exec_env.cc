#include "slurm/exec_env.h"

#include <algorithm>
#include <set>

#include "core/strings.h"
#include "select/rank_order.h"
#include "select/ring.h"
#include "slurm/place.h"

namespace toposched::slurm {

namespace {

std::string Get(const std::map<std::string, std::string>& env, const std::string& k) {
  auto it = env.find(k);
  return it == env.end() ? "" : it->second;
}

StatusOr<int> IntVar(const std::map<std::string, std::string>& env, const std::string& k,
                     int fallback) {
  std::string v = Get(env, k);
  if (v.empty()) return fallback;
  auto i = ParseInt(v);
  if (!i.ok() || *i < 0 || *i > (1 << 24)) {
    return InvalidArgumentError(k + "=\"" + v + "\": expected a non-negative integer");
  }
  return static_cast<int>(*i);
}

// "4(x2),3" → {4, 4, 3}.
StatusOr<std::vector<int>> TasksPerNode(const std::string& name, const std::string& v) {
  std::vector<int> out;
  for (const std::string& item : Split(v, ',', true)) {
    std::string count = item, rep = "1";
    size_t lp = item.find("(x");
    if (lp != std::string::npos) {
      if (item.back() != ')') return InvalidArgumentError(name + "=\"" + v + "\": bad repeat");
      count = item.substr(0, lp);
      rep = item.substr(lp + 2, item.size() - lp - 3);
    }
    auto c = ParseInt(count);
    auto r = ParseInt(rep);
    if (!c.ok() || !r.ok() || *c < 0 || *r < 1 || *r > (1 << 20)) {
      return InvalidArgumentError(name + "=\"" + v + "\": expected counts like 4(x2),3");
    }
    for (long long i = 0; i < *r; ++i) out.push_back(static_cast<int>(*c));
  }
  return out;
}

StatusOr<std::vector<std::string>> ListVar(const std::string& name, const std::string& v) {
  std::vector<std::string> out;
  for (const std::string& s : Split(v, ',', true)) out.push_back(std::string(Trim(s)));
  if (out.empty()) return InvalidArgumentError(name + " is empty");
  return out;
}

std::string Join(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

}  // namespace

StatusOr<ExecPlan> PlanExec(const std::map<std::string, std::string>& env,
                            const topo::NodeTopology& t) {
  ExecPlan p;
  ASSIGN_OR_RETURN(p.global_rank, IntVar(env, "SLURM_PROCID", 0));
  ASSIGN_OR_RETURN(p.local_rank, IntVar(env, "SLURM_LOCALID", 0));
  ASSIGN_OR_RETURN(int node_id, IntVar(env, "SLURM_NODEID", 0));
  p.node = Get(env, "SLURMD_NODENAME");
  p.local_size = 1;
  for (const char* k : {"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"}) {
    std::string v = Get(env, k);
    if (v.empty()) continue;
    ASSIGN_OR_RETURN(std::vector<int> per_node, TasksPerNode(k, v));
    if (per_node.size() == 1) {
      p.local_size = per_node[0];
    } else if (node_id < static_cast<int>(per_node.size())) {
      p.local_size = per_node[node_id];
    } else {
      return InvalidArgumentError(std::string(k) + "=\"" + v + "\" has no entry for SLURM_NODEID " +
                                  std::to_string(node_id));
    }
    break;
  }
  if (p.local_size == 1 && !Get(env, "SLURM_NTASKS_PER_NODE").empty()) {
    ASSIGN_OR_RETURN(p.local_size, IntVar(env, "SLURM_NTASKS_PER_NODE", 1));
  }
  if (p.local_size < 1) p.local_size = 1;
  if (p.local_rank >= p.local_size) {
    return InvalidArgumentError("SLURM_LOCALID=" + std::to_string(p.local_rank) +
                                " is outside the node's " + std::to_string(p.local_size) +
                                " tasks");
  }

  // Slurm's GPU indices and the names CUDA sees, paired by position.
  std::string slurm_var, slurm_list;
  for (const char* k : {"SLURM_STEP_GPUS", "SLURM_JOB_GPUS"}) {
    if (!Get(env, k).empty()) {
      slurm_var = k;
      slurm_list = Get(env, k);
      break;
    }
  }
  std::string cuda_list = Get(env, "CUDA_VISIBLE_DEVICES");
  if (slurm_list.empty() && cuda_list.empty()) {
    return InvalidArgumentError(
        "no GPUs visible: SLURM_STEP_GPUS, SLURM_JOB_GPUS and CUDA_VISIBLE_DEVICES are unset "
        "(ask Slurm for GPUs: --gpus-per-node)");
  }
  if (slurm_list.empty()) {
    slurm_var = "CUDA_VISIBLE_DEVICES";
    slurm_list = cuda_list;
  }
  ASSIGN_OR_RETURN(std::vector<std::string> slurm_names, ListVar(slurm_var, slurm_list));
  std::vector<std::string> cuda_names = slurm_names;
  if (!cuda_list.empty()) {
    ASSIGN_OR_RETURN(cuda_names, ListVar("CUDA_VISIBLE_DEVICES", cuda_list));
    if (cuda_names.size() != slurm_names.size()) {
      return InvalidArgumentError("CUDA_VISIBLE_DEVICES=\"" + cuda_list + "\" and " + slurm_var +
                                  "=\"" + slurm_list + "\" list different GPU counts");
    }
  }
  std::map<int, std::string> cuda_of;  // Slurm index → CUDA name
  std::map<int, int> pos_of;           // Slurm index → topology position
  for (size_t i = 0; i < slurm_names.size(); ++i) {
    auto idx = ParseInt(slurm_names[i]);
    if (!idx.ok() || *idx < 0) {
      return InvalidArgumentError(slurm_var + "=\"" + slurm_list +
                                  "\": expected GPU indices, got \"" + slurm_names[i] + "\"");
    }
    int pos = GpuPosOfSlurmIndex(t, static_cast<int>(*idx));
    if (pos < 0) {
      return InvalidArgumentError(slurm_var + ": GPU " + slurm_names[i] + " is not in the " +
                                  std::to_string(t.gpus.size()) + "-GPU topology (" + t.source +
                                  ")");
    }
    cuda_of[static_cast<int>(*idx)] = cuda_names[i];
    pos_of[static_cast<int>(*idx)] = pos;
    p.gpus.push_back(static_cast<int>(*idx));
  }
  std::sort(p.gpus.begin(), p.gpus.end());
  p.gpus.erase(std::unique(p.gpus.begin(), p.gpus.end()), p.gpus.end());

  std::vector<int> positions;
  for (int g : p.gpus) positions.push_back(pos_of[g]);
  sched::PairMatrix w(t);
  std::vector<int> ring_pos =
      positions.size() > 2 ? sched::BestRing(w, positions).order : positions;
  std::map<int, int> idx_of_pos;
  for (int g : p.gpus) idx_of_pos[pos_of[g]] = g;
  for (int pos : ring_pos) p.ring.push_back(idx_of_pos[pos]);

  const int g = static_cast<int>(p.ring.size());
  int per_rank = 0;
  if (g % p.local_size == 0) {
    per_rank = g / p.local_size;
  } else {
    p.notes.push_back(std::to_string(g) + " GPUs do not divide among " +
                      std::to_string(p.local_size) + " local ranks: every rank sees the ring");
  }
  std::vector<int> rank_pos;
  if (per_rank > 0) {
    for (int i = 0; i < per_rank; ++i) {
      rank_pos.push_back(ring_pos[p.local_rank * per_rank + i]);
      p.rank_gpus.push_back(p.ring[p.local_rank * per_rank + i]);
    }
  } else {
    rank_pos = ring_pos;
    p.rank_gpus = p.ring;
  }
  std::string visible;
  const std::vector<int>& shown = per_rank == 1 || per_rank == 0 ? p.ring : p.rank_gpus;
  for (int gi : shown) visible += (visible.empty() ? "" : ",") + cuda_of[gi];
  p.env.emplace_back("CUDA_VISIBLE_DEVICES", visible);

  // NICs: assigned over the whole ring so local ranks spread over equally near NICs.
  std::vector<int> nics = sched::AssignNics(t, ring_pos);
  std::vector<std::string> hca;
  for (size_t i = 0; i < ring_pos.size(); ++i) {
    if (std::find(rank_pos.begin(), rank_pos.end(), ring_pos[i]) == rank_pos.end()) continue;
    int n = nics[i];
    if (n < 0) continue;
    const std::string& name = t.nics[n].name;
    if (name.empty() || StartsWith(name, "NIC")) continue;
    if (std::find(hca.begin(), hca.end(), name) == hca.end()) hca.push_back(name);
  }
  if (!hca.empty()) {
    std::string v = "=";
    for (size_t i = 0; i < hca.size(); ++i) v += (i ? "," : "") + hca[i];
    p.env.emplace_back("NCCL_IB_HCA", v);
  } else {
    p.notes.push_back("no named RDMA NIC near the rank's GPUs: NCCL_IB_HCA not set");
  }
  p.env.emplace_back("TOPOSCHED_RING", Join(p.ring));
  p.env.emplace_back("TOPOSCHED_RANK_GPUS", Join(p.rank_gpus));

  // NUMA node and CPUs of the rank's GPUs.
  std::set<int> numas;
  std::set<int> cpus;
  bool cpus_known = true;
  for (int pos : rank_pos) {
    const topo::Gpu& gpu = t.gpus[pos];
    if (gpu.numa) numas.insert(*gpu.numa);
    const std::vector<int>* list = gpu.cpus ? &*gpu.cpus : nullptr;
    if (!list && gpu.numa) {
      for (const topo::NumaNode& nn : t.numa_nodes) {
        if (nn.id == *gpu.numa && !nn.cpus.empty()) list = &nn.cpus;
      }
    }
    if (!list) {
      cpus_known = false;
      continue;
    }
    cpus.insert(list->begin(), list->end());
  }
  if (numas.size() == 1) p.numa = *numas.begin();
  if (cpus_known && !cpus.empty()) {
    p.cpus.assign(cpus.begin(), cpus.end());
  } else {
    p.notes.push_back("the topology gives no CPU list for the rank's GPUs: not bound");
  }
  return p;
}

std::string FormatExecPlan(const ExecPlan& p) {
  std::string s = "toposched exec: rank " + std::to_string(p.global_rank) + " (local " +
                  std::to_string(p.local_rank) + "/" + std::to_string(p.local_size) + ")";
  if (!p.node.empty()) s += " on " + p.node;
  s += ": GPUs " + Join(p.gpus) + ", ring " + Join(p.ring) + ", rank GPUs " + Join(p.rank_gpus);
  for (const auto& [k, v] : p.env) {
    if (StartsWith(k, "TOPOSCHED_")) continue;
    s += ", " + k + "=" + v;
  }
  s += ", NUMA " + (p.numa ? std::to_string(*p.numa) : std::string("?"));
  s += ", CPUs " + (p.cpus.empty() ? std::string("?") : FormatIntList(p.cpus));
  for (const std::string& n : p.notes) s += "; " + n;
  return s;
}

}  // namespace toposched::slurm
